package ledger

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/pgtest"
	"github.com/smsform/smsform/state"
)

// pg is the PostgreSQL server of this test binary, started when a test
// first needs it.
var pg = pgtest.New(pgtest.Options{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// backend is one place a project's state can live: every test run through
// eachBackend holds on both.
type backend struct {
	name string
	loc  func(t *testing.T) string // a new, empty location
}

var backends = []backend{
	{"file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "project.smsstate") }},
	{"postgres", func(t *testing.T) string { return pg.Database(t) }},
}

func eachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

const hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// openShared opens campaign's record in the project's state at loc, its
// intents held to the ledger under c (nil: opt-outs only), by the clock
// now (nil: the system's).
func openShared(t *testing.T, loc, campaign string, c *Cap, now func() time.Time) *state.State {
	t.Helper()
	var caps *Caps
	if c != nil {
		caps = &Caps{All: []Cap{*c}}
	}
	s, err := state.Open(context.Background(), state.MustParseLocation(loc), state.Options{Campaign: campaign, Shared: true, Gate: NewGate(caps), Now: now, LockTimeout: 10 * time.Second})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// recordOne records something, so that the campaign's record exists.
func recordOne(t testing.TB, s *state.State) {
	t.Helper()
	if err := s.RecordIntent(context.Background(), intent("first", "+449999")); err != nil {
		t.Fatal(err)
	}
}

func intent(batch string, ps ...string) state.Intent {
	return state.Intent{BatchID: batch, Phones: ps, BodyHash: hash}
}

func recipients(t *testing.T, s *state.State) map[string]state.Recipient {
	t.Helper()
	m := map[string]state.Recipient{}
	if err := s.Recipients(context.Background(), func(r state.Recipient) error {
		m[r.Phone] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

func statuses(t *testing.T, s *state.State) map[string]state.Status {
	t.Helper()
	m := map[string]state.Status{}
	for p, r := range recipients(t, s) {
		m[p] = r.Status
	}
	return m
}

// phones returns n numbers "+44" prefix and six digits.
func phones(prefix string, n int) []string {
	p := make([]string, n)
	b := make([]byte, 0, 3+len(prefix)+6)
	for i := range p {
		b = append(append(b[:0], "+44"...), prefix...)
		for d := 100000; d > 0; d /= 10 {
			b = append(b, byte('0'+i/d%10))
		}
		p[i] = string(b)
	}
	return p
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// testClock is a clock that tells t0 until set to another time.
func testClock(t0 time.Time) (set func(time.Time), now func() time.Time) {
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	return func(t time.Time) { clock.Store(t.UnixNano()) }, func() time.Time { return time.Unix(0, clock.Load()).UTC() }
}

// capHolds is what a plan reads of the caps' holds of the state s.
func capHolds(t *testing.T, s *state.State, c Cap, now time.Time) interface {
	Get(string) (time.Time, bool)
	Len() int
} {
	t.Helper()
	m, err := ViewOf(s).CapHolds(context.Background(), &Caps{All: []Cap{c}}, now)
	must(t, err)
	return m
}
