package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/state"
)

// Opt-outs are a log: the set as of any point of it, and an intent that
// names someone opted out records them suppressed and sends the rest.
func TestOptOuts(t *testing.T) { eachBackend(t, testOptOuts) }

func testOptOuts(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	first, err := ChangeOptOuts(ctx, state.MustParseLocation(loc), []OptOutChange{{Phone: "+441", At: at, By: "ann", Reason: "STOP"}, {Phone: "+442", At: at, By: "ann"}})
	must(t, err)
	_, err = ChangeOptOuts(ctx, state.MustParseLocation(loc), []OptOutChange{{Phone: "+442", Remove: true, At: at, By: "bob", Reason: "re-consent by phone"}})
	must(t, err)
	var now []string
	_, err = OptOuts(ctx, state.MustParseLocation(loc), func(o OptOut) error { now = append(now, o.Phone+"/"+o.By+"/"+o.Reason); return nil })
	must(t, err)
	if !slices.Equal(now, []string{"+441/ann/STOP"}) {
		t.Errorf("opt-outs now: %v", now)
	}
	s := openShared(t, loc, "spring", nil, nil)
	set, seq, err := ViewOf(s).OptOutSet(ctx, first)
	must(t, err)
	if _, ok := set.Get("+442"); !ok || seq != first || set.Len() != 2 {
		t.Errorf("as of %d: %d numbers, seq %d", first, set.Len(), seq)
	}
	if err := s.RecordIntent(ctx, intent("b1", "+441", "+443")); !errors.Is(err, state.ErrNotAdmitted) {
		t.Errorf("RecordIntent naming an opted-out number: %v", err)
	}
	adm, err := s.AdmitIntent(ctx, intent("b1", "+441", "+442", "+443"))
	must(t, err)
	if !slices.Equal(adm.Send, []string{"+442", "+443"}) || !slices.Equal(adm.Suppressed, []string{"+441"}) {
		t.Errorf("admission: %+v", adm)
	}
	must(t, s.RecordOutcome(ctx, "b1", state.Outcome{Status: state.Sent}))
	want := map[string]state.Status{"+441": state.Suppressed, "+442": state.Sent, "+443": state.Sent}
	if got := statuses(t, s); !mapsEqual(got, want) {
		t.Errorf("after: %v, want %v", got, want)
	}
	if r := recipients(t, s)["+441"]; r.Reason != "opted out" || r.BatchID != "b1" {
		t.Errorf("suppressed record: %+v", r)
	}
	// state.Suppressed is not owed, and may be sent once the number re-consents.
	if f, d := s.Owed(); f != 0 || d != 0 {
		t.Errorf("owed %d, %d", f, d)
	}
	_, err = ChangeOptOuts(ctx, state.MustParseLocation(loc), []OptOutChange{{Phone: "+441", Remove: true, At: at}})
	must(t, err)
	adm, err = s.AdmitIntent(ctx, intent("b2", "+441"))
	must(t, err)
	if len(adm.Send) != 1 {
		t.Errorf("after re-consent: %+v", adm)
	}
	// The ledger is the project's: listed whatever campaigns the state holds.
	o := openShared(t, loc, "autumn", nil, nil)
	recordOne(t, o)
	n := 0
	if _, err := OptOuts(ctx, state.MustParseLocation(loc), func(OptOut) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("OptOuts with two campaigns: %d, %v", n, err)
	}
}

// The cap counts every campaign's sends in a sliding window in UTC: one
// 23 h 59 min ago counts, one 24 h 1 min ago does not; a send the API did
// not act on gives its claim back.
func TestFrequencyCap(t *testing.T) { eachBackend(t, testFrequencyCap) }

func testFrequencyCap(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 3, 28, 22, 0, 0, 0, time.UTC) // a daylight-saving night in Europe: UTC does not care
	set, now := testClock(t0)
	c := &Cap{Max: 1, Per: 24 * time.Hour}
	a := openShared(t, loc, "spring", c, now)
	bb := openShared(t, loc, "autumn", c, now)
	adm, err := a.AdmitIntent(ctx, intent("a1", "+441", "+442"))
	must(t, err)
	must(t, a.RecordOutcome(ctx, "a1", state.Outcome{Status: state.Sent}))
	if len(adm.Send) != 2 {
		t.Fatalf("first send: %+v", adm)
	}
	set(t0.Add(23*time.Hour + 59*time.Minute))
	adm, err = bb.AdmitIntent(ctx, intent("b1", "+441", "+443"))
	must(t, err)
	if !slices.Equal(adm.Send, []string{"+443"}) || !slices.Equal(adm.Held, []string{"+441"}) || !adm.HeldUntil.Equal(t0.Add(24*time.Hour)) {
		t.Errorf("23h59 later: %+v", adm)
	}
	must(t, bb.RecordOutcome(ctx, "b1", state.Outcome{Status: state.Sent}))
	if st := statuses(t, bb); st["+441"] != state.Unsent {
		t.Errorf("a held number has a record: %v", st)
	}
	set(t0.Add(24*time.Hour + time.Minute))
	adm, err = bb.AdmitIntent(ctx, intent("b2", "+441"))
	must(t, err)
	if len(adm.Send) != 1 {
		t.Errorf("24h01 later: %+v", adm)
	}
	must(t, bb.RecordOutcome(ctx, "b2", state.Outcome{Status: state.Sent}))
	// Not acted on: the claim is given back.
	adm, err = a.AdmitIntent(ctx, intent("a2", "+444"))
	must(t, err)
	must(t, a.ForgetIntent(ctx, "a2"))
	adm, err = bb.AdmitIntent(ctx, intent("b3", "+444"))
	must(t, err)
	if len(adm.Send) != 1 {
		t.Errorf("after a forgotten intent: %+v", adm)
	}
	holds, err := ViewOf(a).CapHolds(ctx, &Caps{All: []Cap{*c}}, now())
	must(t, err)
	// +441 and +444 sent at 24h01, +443 at 23h59: all three within the window.
	if until, ok := holds.Get("+441"); !ok || !until.Equal(t0.Add(48*time.Hour+time.Minute)) || holds.Len() != 3 {
		t.Errorf("holds: %d, +441 until %v", holds.Len(), until)
	}
	must(t, a.Close())
	must(t, bb.Close())
	// Older than an hour: the two sends of t0; +442 is left with none.
	sends, numbers, err := PruneCaps(ctx, state.MustParseLocation(loc), time.Hour, now())
	must(t, err)
	if sends != 2 || numbers != 1 {
		t.Errorf("prune: %d sends, %d numbers; want 2, 1", sends, numbers)
	}
}

// Two campaigns applied at once, each from many goroutines, can together
// never send past the cap: the check and the claim are one transaction.
func TestFrequencyCapConcurrent(t *testing.T) { eachBackend(t, testFrequencyCapConcurrent) }

func testFrequencyCapConcurrent(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	c := &Cap{Max: 1, Per: time.Hour}
	phones := phones("7", 40)
	var sent sync.Map
	var wg sync.WaitGroup
	for _, name := range []string{"spring", "autumn"} {
		s := openShared(t, loc, name, c, nil)
		for g := range 4 {
			wg.Go(func() {
				for i := g; i < len(phones); i += 4 {
					batch := name + phones[i]
					adm, err := s.AdmitIntent(ctx, intent(batch, phones[i]))
					if err != nil {
						t.Error(err)
						return
					}
					for _, p := range adm.Send {
						if _, dup := sent.LoadOrStore(p, name); dup {
							t.Errorf("%s admitted twice under a cap of 1", p)
						}
					}
					if len(adm.Send) > 0 {
						must(t, s.RecordOutcome(ctx, batch, state.Outcome{Status: state.Sent}))
					}
				}
			})
		}
	}
	wg.Wait()
}

// A project's file takes opt-outs (another process, no lock) while its
// campaigns' applies open, record and close it: the journal mode switches
// that opening and closing make never fail for the other's sake.
func TestOptOutsWhileAppliesOpenAndClose(t *testing.T) {
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "project.smsstate")
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if _, err := ChangeOptOuts(ctx, state.MustParseLocation(loc), []OptOutChange{{Phone: fmt.Sprintf("+4480%06d", i), At: time.Now()}}); err != nil {
				t.Errorf("opt-out %d: %v", i, err)
				return
			}
		}
	})
	for i := range 30 {
		s, err := state.Open(ctx, state.MustParseLocation(loc), state.Options{Campaign: fmt.Sprintf("c%d", i), Shared: true})
		if err != nil {
			t.Errorf("open %d: %v", i, err)
			break
		}
		if _, err := s.AdmitIntent(ctx, intent("b", "+4470000001")); err != nil {
			t.Errorf("intent %d: %v", i, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("close %d: %v", i, err)
		}
	}
	close(done)
	wg.Wait()
}

// A prune that meets a claim made while it runs leaves the claim and the
// number: an apply claiming a number in PostgreSQL locks its row of the
// index and commits a send while prune is between its read of the number
// (no recent send) and its delete; prune must not drop the number.
func TestPruneLeavesAClaimMadeMeanwhile(t *testing.T) {
	ctx := context.Background()
	loc := pg.Database(t)
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { return t0 }
	s := openShared(t, loc, "spring", &Cap{Max: 3, Per: 24 * time.Hour}, now)
	_, err := s.AdmitIntent(ctx, intent("a1", "+441"))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "a1", state.Outcome{Status: state.Sent}))
	must(t, s.Close())

	// Another apply's claim, two days later, held open while prune runs:
	// the number's row locked, its send written.
	conn, err := pgx.Connect(ctx, loc)
	must(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	must(t, err)
	defer tx.Rollback(ctx)
	later := t0.Add(48 * time.Hour).Unix()
	_, err = tx.Exec(ctx, `UPDATE smsform.caps SET last_at = $1 WHERE phone = '+441'`, later)
	must(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO smsform.cap_sends (phone, at, attempt_id, marketing) VALUES ('+441', $1, 99, true)`, later)
	must(t, err)

	type pruned struct{ sends, numbers int }
	done := make(chan pruned, 1)
	go func() {
		sends, numbers, err := PruneCaps(ctx, state.MustParseLocation(loc), time.Hour, t0.Add(48*time.Hour))
		if err != nil {
			t.Error(err)
		}
		done <- pruned{sends, numbers}
	}()
	// Prune has dropped the old send and now waits on the claim's lock.
	waitForLockWait(t, loc)
	must(t, tx.Commit(ctx))
	if p := <-done; p.sends != 1 || p.numbers != 0 {
		t.Errorf("prune dropped %+v, want the one send of t0 and no number", p)
	}
	var n int
	must(t, conn.QueryRow(ctx, `SELECT count(*) FROM smsform.cap_sends WHERE phone = '+441' AND attempt_id = 99`).Scan(&n))
	if n != 1 {
		t.Errorf("the claim made while prune ran is gone")
	}
	must(t, conn.QueryRow(ctx, `SELECT count(*) FROM smsform.caps WHERE phone = '+441'`).Scan(&n))
	if n != 1 {
		t.Errorf("the number claimed while prune ran was dropped from the index")
	}
}

// waitForLockWait returns once some session of the database at loc waits
// on a lock.
func waitForLockWait(t *testing.T, loc string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, loc)
	must(t, err)
	defer conn.Close(ctx)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var waiting bool
		must(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting))
		if waiting {
			return
		}
	}
	t.Fatal("no session waited on a lock within 30 s")
}

// The cap index keeps whole seconds, rounded so that a number never goes
// early: a send 23 h 59 min 59.7 s ago still counts.
func TestFrequencyCapWithinASecond(t *testing.T) { eachBackend(t, testFrequencyCapWithinASecond) }

func testFrequencyCapWithinASecond(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 600e6, time.UTC)
	set, now := testClock(t0)
	c := &Cap{Max: 1, Per: 24 * time.Hour}
	s := openShared(t, loc, "spring", c, now)
	_, err := s.AdmitIntent(ctx, intent("a1", "+441"))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "a1", state.Outcome{Status: state.Sent}))
	set(t0.Add(24*time.Hour - 300*time.Millisecond))
	other := openShared(t, loc, "autumn", c, now)
	adm, err := other.AdmitIntent(ctx, intent("b1", "+441"))
	must(t, err)
	if len(adm.Held) != 1 || adm.HeldUntil.Before(t0.Add(24*time.Hour)) {
		t.Errorf("23h59m59.7s after a send: %+v, want held until %v at the earliest", adm, t0.Add(24*time.Hour))
	}
	set(t0.Add(24*time.Hour + 1100*time.Millisecond))
	adm, err = other.AdmitIntent(ctx, intent("b2", "+441"))
	must(t, err)
	if len(adm.Send) != 1 {
		t.Errorf("24h01.1s after a send: %+v, want sendable", adm)
	}
}

// A plan reads the opt-outs while others change them: every set it gets is
// exactly the set as of the log's number it is given with, as read once
// the changes are over.
func TestOptOutSetWhileOptOutsChange(t *testing.T) { eachBackend(t, testOptOutSetWhileOptOutsChange) }

func testOptOutSetWhileOptOutsChange(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	phones := phones("5", 60)
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	_, err := ChangeOptOuts(ctx, state.MustParseLocation(loc), []OptOutChange{{Phone: phones[0], At: at}})
	must(t, err)
	s := openShared(t, loc, "spring", nil, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := w; ; i += 3 {
				select {
				case <-stop:
					return
				default:
				}
				p := phones[i%len(phones)]
				if _, err := ChangeOptOuts(ctx, state.MustParseLocation(loc), []OptOutChange{{Phone: p, Remove: i/len(phones)%2 == 1, At: at}, {Phone: phones[(i*7)%len(phones)], At: at}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	type read struct {
		seq    int64
		phones []string
	}
	var reads []read
	for range 40 {
		set, seq, err := ViewOf(s).OptOutSet(ctx, 0)
		must(t, err)
		reads = append(reads, read{seq, setPhones(set, phones)})
	}
	close(stop)
	wg.Wait()
	for _, r := range reads {
		set, seq, err := ViewOf(s).OptOutSet(ctx, r.seq)
		must(t, err)
		if want := setPhones(set, phones); seq != r.seq || !slices.Equal(r.phones, want) {
			t.Fatalf("read while changing, as of %d: %v; as of %d afterwards: %v", r.seq, r.phones, seq, want)
		}
	}
}

func setPhones(m *e164.Map[struct{}], phones []string) []string {
	var in []string
	for _, p := range phones {
		if _, ok := m.Get(p); ok {
			in = append(in, p)
		}
	}
	return in
}

// A project's ledger moves whole, between any two engines: the opt-out log
// with its numbers (a plan names one), the numbers opted out now and the
// cap's index; the target's log goes on after the copied numbers.
func TestCopy(t *testing.T) {
	for _, from := range backends {
		for _, to := range backends {
			t.Run(from.name+"-to-"+to.name, func(t *testing.T) { testCopy(t, from, to) })
		}
	}
}

func testCopy(t *testing.T, from, to backend) {
	ctx := context.Background()
	src, dst := from.loc(t), to.loc(t)
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	first, err := ChangeOptOuts(ctx, state.MustParseLocation(src), []OptOutChange{{Phone: "+441", At: at, By: "ann", Reason: "STOP"}, {Phone: "+442", At: at}})
	must(t, err)
	seq, err := ChangeOptOuts(ctx, state.MustParseLocation(src), []OptOutChange{{Phone: "+442", Remove: true, At: at, Reason: "re-consent"}})
	must(t, err)
	c := &Cap{Max: 1, Per: 24 * time.Hour}
	now := func() time.Time { return at }
	s := openShared(t, src, "spring", c, now)
	_, err = s.AdmitIntent(ctx, intent("a1", "+443", "+444"))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "a1", state.Outcome{Status: state.Sent}))
	must(t, s.Close())

	got, err := Copy(ctx, state.MustParseLocation(src), state.MustParseLocation(dst))
	must(t, err)
	if got.OptOutChanges != 3 || got.OptedOut != 1 || got.CapNumbers != 2 || got.Seq != seq || got.Already {
		t.Errorf("copied %+v", got)
	}
	d := openShared(t, dst, "autumn", c, now)
	for _, asOf := range []int64{first, seq} {
		set, n, err := ViewOf(d).OptOutSet(ctx, asOf)
		must(t, err)
		_, has442 := set.Get("+442")
		if n != asOf || has442 != (asOf == first) {
			t.Errorf("as of %d in the copy: seq %d, +442 opted out %v", asOf, n, has442)
		}
	}
	adm, err := d.AdmitIntent(ctx, intent("b1", "+441", "+443", "+445"))
	must(t, err)
	if !slices.Equal(adm.Send, []string{"+445"}) || !slices.Equal(adm.Suppressed, []string{"+441"}) || !slices.Equal(adm.Held, []string{"+443"}) {
		t.Errorf("the copy's ledger admits %+v", adm)
	}
	must(t, d.Close())
	if next, err := ChangeOptOuts(ctx, state.MustParseLocation(dst), []OptOutChange{{Phone: "+446", At: at}}); err != nil || next != seq+1 {
		t.Errorf("the copy's log goes on at %d (%v), want %d", next, err, seq+1)
	}
	// Run again: the target holds more now, so it is refused; a copy of
	// the very same ledger is said to be there already.
	if _, err := Copy(ctx, state.MustParseLocation(src), state.MustParseLocation(dst)); !errors.Is(err, state.ErrTargetNotEmpty) {
		t.Errorf("a second copy onto a ledger that moved on: %v", err)
	}
	again := to.loc(t)
	_, err = Copy(ctx, state.MustParseLocation(src), state.MustParseLocation(again))
	must(t, err)
	if got, err := Copy(ctx, state.MustParseLocation(src), state.MustParseLocation(again)); err != nil || !got.Already {
		t.Errorf("copying the same ledger twice: %+v, %v", got, err)
	}
	// A target holding another project's ledger of the very same counts
	// (its own person opted out, its own numbers capped) is no copy of
	// this one: refused, not taken for "already there", which would leave
	// +441 free to be messaged from the target.
	twin := to.loc(t)
	_, err = ChangeOptOuts(ctx, state.MustParseLocation(twin), []OptOutChange{{Phone: "+451", At: at}, {Phone: "+442", At: at}})
	must(t, err)
	_, err = ChangeOptOuts(ctx, state.MustParseLocation(twin), []OptOutChange{{Phone: "+442", Remove: true, At: at}})
	must(t, err)
	s = openShared(t, twin, "winter", c, now)
	_, err = s.AdmitIntent(ctx, intent("w1", "+443", "+444"))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "w1", state.Outcome{Status: state.Sent}))
	must(t, s.Close())
	if err := CheckTarget(ctx, state.MustParseLocation(src), state.MustParseLocation(twin)); !errors.Is(err, state.ErrTargetNotEmpty) {
		t.Errorf("check of a target with a ledger of the same counts: %v", err)
	}
	if got, err := Copy(ctx, state.MustParseLocation(src), state.MustParseLocation(twin)); !errors.Is(err, state.ErrTargetNotEmpty) {
		t.Errorf("a copy onto a ledger of the same counts: %+v, %v", got, err)
	}
}

// An intent the ledger trims keeps only the recipients sent: the attempt
// names them alone, those held back have no record and no claim (they
// stay sendable once the window passes), and an intent left with nobody
// leaves no attempt its outcome could finish, and the campaign's serial
// where it was.
func TestTrimmedIntent(t *testing.T) { eachBackend(t, testTrimmedIntent) }

func testTrimmedIntent(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	set, now := testClock(t0)
	_, err := ChangeOptOuts(ctx, state.MustParseLocation(loc), []OptOutChange{{Phone: "+441", At: t0}})
	must(t, err)
	other := openShared(t, loc, "autumn", &Cap{Max: 1, Per: 24 * time.Hour}, now)
	_, err = other.AdmitIntent(ctx, intent("a1", "+442", "+444"))
	must(t, err)
	must(t, other.RecordOutcome(ctx, "a1", state.Outcome{Status: state.Sent}))
	s := openShared(t, loc, "spring", &Cap{Max: 1, Per: 24 * time.Hour}, now)

	set(t0.Add(time.Hour))
	adm, err := s.AdmitIntent(ctx, intent("b1", "+441", "+442", "+443"))
	must(t, err)
	if !slices.Equal(adm.Send, []string{"+443"}) || !slices.Equal(adm.Suppressed, []string{"+441"}) || !slices.Equal(adm.Held, []string{"+442"}) {
		t.Fatalf("admission: %+v", adm)
	}
	// The intent is the batch's attempt its outcome finishes, also for
	// a run that opens the state after (the suppressed attempt recorded
	// after it is not).
	must(t, s.Close())
	s = openShared(t, loc, "spring", &Cap{Max: 1, Per: 24 * time.Hour}, now)
	must(t, s.RecordOutcome(ctx, "b1", state.Outcome{Status: state.Sent}))
	serial := s.Serial()
	adm, err = s.AdmitIntent(ctx, intent("c1", "+442", "+444"))
	must(t, err)
	if len(adm.Send) != 0 || len(adm.Held) != 2 {
		t.Fatalf("admission of numbers all over the cap: %+v", adm)
	}
	if s.Serial() != serial {
		t.Errorf("an intent that recorded nobody moved the serial from %d to %d", serial, s.Serial())
	}
	if err := s.RecordOutcome(ctx, "c1", state.Outcome{Status: state.Sent}); !errors.Is(err, state.ErrNoIntent) {
		t.Errorf("the outcome of an intent that admitted nobody: %v", err)
	}
	// An outcome recorded with such an intent is a change all the same.
	_, err = s.AdmitIntent(ctx, intent("d1", "+445"))
	must(t, err)
	serial = s.Serial()
	adm, err = s.RecordOutcomeAndAdmit(ctx, "d1", state.Outcome{Status: state.Sent}, intent("e1", "+442"))
	must(t, err)
	if len(adm.Held) != 1 || s.Serial() != serial+1 {
		t.Errorf("an outcome with an intent that recorded nobody: %+v, serial %d -> %d, want one more", adm, serial, s.Serial())
	}
	got := map[string]string{}
	must(t, s.Attempts(ctx, func(a state.Attempt) error {
		got[a.BatchID] += fmt.Sprintf("%s/%d ", a.State, a.Recipients)
		return nil
	}))
	want := map[string]string{"b1": "sent/1 suppressed/1 ", "d1": "sent/1 "}
	if !maps.Equal(got, want) {
		t.Errorf("attempts %v, want %v", got, want)
	}
	if st := statuses(t, s); st["+441"] != state.Suppressed || st["+442"] != state.Unsent || st["+443"] != state.Sent {
		t.Errorf("statuses %v", st)
	}
	// +442's one send was at t0: held claims left no trace, so a day
	// later it is sendable again.
	set(t0.Add(24*time.Hour + time.Second))
	holds := capHolds(t, s, Cap{Max: 1, Per: 24 * time.Hour}, now())
	if _, held := holds.Get("+442"); held {
		t.Errorf("+442 is held a day after its only send: a held claim stayed")
	}
}

// The statements of an intent find the ledger's rows through their keys
// whatever plan PostgreSQL caches: a prepared statement's generic plan is
// made once, maybe while the tables are empty, and kept as they grow to
// millions of rows; one that scans a table costs every intent its size.
func TestLedgerStatementsUseKeys(t *testing.T) {
	ctx := context.Background()
	loc := pg.Database(t)
	_, err := ChangeOptOuts(ctx, state.MustParseLocation(loc), nil) // the schema, tables empty
	must(t, err)
	conn, err := pgx.Connect(ctx, loc)
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SET search_path = smsform; SET plan_cache_mode = force_generic_plan`)
	must(t, err)
	for name, q := range map[string]string{"lock": postgres[qLock], "recent": postgres[qRecent], "release": postgres[qRelease], "optedOut": postgres[qOptedOut]} {
		_, err := conn.Exec(ctx, "PREPARE "+name+" AS "+q)
		must(t, err)
		args := map[string]string{"lock": `('["+441"]', 1)`, "recent": `('["+441"]', 1)`, "release": `(1, '["+441"]')`, "optedOut": `('+441')`}[name]
		rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+name+args)
		must(t, err)
		var plan strings.Builder
		for rows.Next() {
			var line string
			must(t, rows.Scan(&line))
			plan.WriteString(line + "\n")
		}
		must(t, rows.Err())
		if strings.Contains(plan.String(), "Seq Scan on caps") || strings.Contains(plan.String(), "Seq Scan on cap_sends") || strings.Contains(plan.String(), "Seq Scan on optouts_now") {
			t.Errorf("%s's generic plan scans a table:\n%s", name, plan.String())
		}
	}
}

// Resolving recipients as unsent gives their places in the frequency cap
// back (the operator says nobody was messaged); as sent, they keep them.
// Resolving failed recipients as unsent does the same.
func TestResolveFreesTheCap(t *testing.T) { eachBackend(t, testResolveFreesTheCap) }

func testResolveFreesTheCap(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	c := &Cap{Max: 1, Per: 24 * time.Hour}
	_, now := testClock(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	s := openShared(t, loc, "spring", c, now)
	for _, batch := range []string{"b1", "b2", "b3"} {
		_, err := s.AdmitIntent(ctx, intent(batch, "+44"+batch[1:]+"1", "+44"+batch[1:]+"2"))
		must(t, err)
	}
	must(t, s.RecordOutcome(ctx, "b1", state.Outcome{Status: state.InDoubt, Reason: "timeout"}))
	must(t, s.RecordOutcome(ctx, "b2", state.Outcome{Status: state.InDoubt, Reason: "timeout"}))
	must(t, s.RecordOutcome(ctx, "b3", state.Outcome{Status: state.Failed, Reason: "refused"}))
	held := func() []string {
		m, err := ViewOf(s).CapHolds(ctx, &Caps{All: []Cap{*c}}, now())
		must(t, err)
		var ps []string
		for _, p := range []string{"+4411", "+4412", "+4421", "+4422", "+4431", "+4432"} {
			if _, ok := m.Get(p); ok {
				ps = append(ps, p)
			}
		}
		return ps
	}
	if got := held(); !slices.Equal(got, []string{"+4411", "+4412", "+4421", "+4422", "+4431", "+4432"}) {
		t.Fatalf("held before resolving: %v", got)
	}
	n, err := s.Resolve(ctx, "b1", false)
	must(t, err)
	_, err = s.Resolve(ctx, "b2", true)
	must(t, err)
	_, err = s.ResolveFailed(ctx, "b3")
	must(t, err)
	if got := held(); n.Moved != 2 || !slices.Equal(got, []string{"+4421", "+4422"}) {
		t.Errorf("held after resolving b1 and b3 as unsent, b2 as sent: %v (%d resolved)", got, n.Moved)
	}
	// Freed, they may be sent again now.
	adm, err := s.AdmitIntent(ctx, intent("b4", "+4411", "+4431"))
	must(t, err)
	if len(adm.Send) != 2 || len(adm.Held) != 0 {
		t.Errorf("admission after freeing: %+v", adm)
	}
}

// A plan reads each send's kind with it: a transactional send holds a
// number under a plain cap, and neither under a law's marketing cap,
// whether that cap is everyone's or a number's.
func TestCapHoldsByKind(t *testing.T) { eachBackend(t, testCapHoldsByKind) }

func testCapHoldsByKind(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	plain := Cap{Max: 1, Per: 24 * time.Hour}
	// openShared's campaigns are transactional: their sends do not count
	// for a marketing cap; +443's is a marketing campaign's.
	s := openShared(t, loc, "receipts", &plain, now)
	_, err := s.AdmitIntent(ctx, intent("r1", "+441", "+442"))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "r1", state.Outcome{Status: state.Sent}))
	open := func(campaign string, caps *Caps) *state.State {
		t.Helper()
		s, err := state.Open(ctx, state.MustParseLocation(loc), state.Options{Campaign: campaign, Shared: true, Gate: NewGate(caps), Now: now, LockTimeout: 10 * time.Second})
		must(t, err)
		t.Cleanup(func() { s.Close() }) // closed before, unless a check stopped the test
		return s
	}
	offers := open("offers", &Caps{All: []Cap{plain}, Marketing: true})
	_, err = offers.AdmitIntent(ctx, intent("o1", "+443"))
	must(t, err)
	must(t, offers.RecordOutcome(ctx, "o1", state.Outcome{Status: state.Sent}))
	must(t, offers.Close())
	marketing := Cap{Max: 1, Per: 24 * time.Hour, Marketing: true}
	everyone := []string{"+441", "+442", "+443"}
	for _, c := range []struct {
		name string
		caps *Caps
		held []string
	}{
		{"plain cap", &Caps{All: []Cap{plain}}, everyone},
		{"marketing cap", &Caps{All: []Cap{marketing}}, []string{"+443"}},
		{"a number's marketing cap", &Caps{PerNumber: func(string) []Cap { return []Cap{marketing} }, PerNumberLongest: 24 * time.Hour}, []string{"+443"}},
		{"plain and a number's marketing cap", &Caps{All: []Cap{plain}, PerNumber: func(string) []Cap { return []Cap{marketing} }, PerNumberLongest: 24 * time.Hour}, everyone},
	} {
		holds, err := ViewOf(s).CapHolds(ctx, c.caps, now())
		must(t, err)
		var held []string
		for _, p := range everyone {
			if until, ok := holds.Get(p); ok {
				held = append(held, p)
				if !until.Equal(t0.Add(24 * time.Hour)) {
					t.Errorf("%s: %s held until %v, want %v", c.name, p, until, t0.Add(24*time.Hour))
				}
			}
		}
		if !slices.Equal(held, c.held) || holds.Len() != len(c.held) {
			t.Errorf("%s: the plan holds %v (%d), want %v", c.name, held, holds.Len(), c.held)
		}
		// An intent's gate must hold the same numbers as the plan. One
		// that sends claims them again, as transactional sends, which
		// changes no later case.
		g := open("gate "+c.name, c.caps)
		adm, err := g.AdmitIntent(ctx, intent("g", everyone...))
		must(t, err)
		must(t, g.Close())
		if slices.Sort(adm.Held); !slices.Equal(adm.Held, c.held) || !adm.HeldUntil.Equal(t0.Add(24*time.Hour)) {
			t.Errorf("%s: the gate held %v until %v, want %v until a day on", c.name, adm.Held, adm.HeldUntil, c.held)
		}
	}
}

// A plan reads a file without migrating it: one of schema version 6, before
// the index on (at, phone, marketing), holds the same numbers (read more
// slowly); the next command that writes builds the index.
func TestCapHoldsOfVersion6File(t *testing.T) {
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "project.smsstate")
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	set, now := testClock(t0)
	two := Cap{Max: 2, Per: 24 * time.Hour}
	// +441 and +443 twice, +442 once, but +443's first a day before the
	// rest: only +441 is held, until a day after its first send; and
	// +0441, which does not pack (a state written by hand), as +441.
	for i, batch := range [][]string{{"+443"}, {"+441", "+442", "+0441"}, {"+441", "+443", "+0441"}} {
		set(t0.Add(time.Duration(i-1) * time.Hour))
		if i == 0 {
			set(t0.Add(-25 * time.Hour))
		}
		s := openShared(t, loc, fmt.Sprint("c", i), &two, now)
		_, err := s.AdmitIntent(ctx, intent("b", batch...))
		must(t, err)
		must(t, s.RecordOutcome(ctx, "b", state.Outcome{Status: state.Sent}))
		must(t, s.Close())
	}
	set(t0.Add(3 * time.Hour))
	held := func() map[string]time.Time {
		t.Helper()
		v, err := Open(ctx, state.MustParseLocation(loc))
		must(t, err)
		defer v.Close()
		m, err := v.CapHolds(ctx, &Caps{All: []Cap{two}}, now())
		must(t, err)
		out := map[string]time.Time{}
		for _, p := range []string{"+441", "+442", "+443", "+0441"} {
			if at, ok := m.Get(p); ok {
				out[p] = at
			}
		}
		if len(out) != m.Len() {
			t.Errorf("%d numbers held, want %d", m.Len(), len(out))
		}
		return out
	}
	want := map[string]time.Time{"+441": t0.Add(24 * time.Hour), "+0441": t0.Add(24 * time.Hour)}
	if got := held(); !mapsEqual(got, want) {
		t.Fatalf("held at version 7: %v, want %v", got, want)
	}

	db, err := sql.Open("sqlite", "file:"+loc)
	must(t, err)
	defer db.Close()
	// Back to version 6: what versions 7 and 8 added goes.
	_, err = db.Exec(`DROP INDEX cap_sends_recent; CREATE INDEX cap_sends_at ON cap_sends (at);
		DROP INDEX attempts_ids_pending; ALTER TABLE attempts DROP COLUMN ids_pending; DELETE FROM schema_migrations WHERE version >= 7`)
	must(t, err)
	if got := held(); !mapsEqual(got, want) {
		t.Errorf("held at version 6: %v, want %v", got, want)
	}
	if _, err := ChangeOptOuts(ctx, state.MustParseLocation(loc), nil); err != nil {
		t.Fatal(err)
	}
	var n int
	must(t, db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'cap_sends_recent'`).Scan(&n))
	if n != 1 {
		t.Errorf("a write did not migrate the file: %d index cap_sends_recent", n)
	}
	if got := held(); !mapsEqual(got, want) {
		t.Errorf("held after the migration: %v, want %v", got, want)
	}
}

// A whole project's migration carries what arrived after the sends: the
// replies (each still once at the target, naming the campaign they
// answered there) and the reports matched to no campaign.
func TestCopyReceived(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	file := backends[0].loc(t)
	s := openShared(t, file, "spring", nil, now)
	_, err := s.AdmitIntent(ctx, intent("b1", "+441", "+442"))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b1", state.Outcome{Status: state.Sent}))
	must(t, s.Close())
	at := t0.Add(time.Minute)
	stop := state.Reply{Phone: "+441", Text: "STOP", At: at}
	receive := func(loc string) state.Recorded {
		t.Helper()
		r, err := state.OpenReceiver(ctx, state.MustParseLocation(loc), state.ReceiverOptions{Now: func() time.Time { return t0 }, OptOuts: ReplyOptOuts()})
		must(t, err)
		defer r.Close()
		got, err := r.Record(ctx, []state.Report{{ProviderID: "m-nobody", Delivery: state.Delivered, At: at}},
			[]state.Reply{stop, {Phone: "+443", Text: "who is this?", At: at}})
		must(t, err)
		return got
	}
	receive(file)

	from := file
	for _, to := range []string{backends[1].loc(t), backends[0].loc(t)} {
		_, err := state.Copy(ctx, state.MustParseLocation(from), state.MustParseLocation(to), state.CopyOptions{Shared: true})
		must(t, err)
		c, err := Copy(ctx, state.MustParseLocation(from), state.MustParseLocation(to))
		must(t, err)
		if c.Replies != 2 || c.Unmatched != 1 || c.OptOutChanges != 1 {
			t.Errorf("%s: copied %+v, want 2 replies, 1 unmatched report, 1 opt-out change", state.Redact(to), c)
		}
		v, err := Open(ctx, state.MustParseLocation(to))
		must(t, err)
		var got []string
		rows, err := v.db.QueryContext(ctx, `SELECT r.phone, r.kind, r.word, coalesce(c.name, '-') FROM replies r LEFT JOIN campaigns c ON c.id = r.campaign_id ORDER BY r.phone`)
		must(t, err)
		for rows.Next() {
			var p, kind, word, campaign string
			must(t, rows.Scan(&p, &kind, &word, &campaign))
			got = append(got, strings.Join([]string{p, kind, word, campaign}, "/"))
		}
		must(t, rows.Err())
		var unmatched int
		must(t, v.db.QueryRowContext(ctx, `SELECT count(*) FROM reports WHERE campaign_id = 0`).Scan(&unmatched))
		must(t, v.Close())
		if strings.Join(got, " ") != "+441/stop/STOP/spring +443/other//-" || unmatched != 1 {
			t.Errorf("%s: replies %v, unmatched reports %d", state.Redact(to), got, unmatched)
		}
		// Posted again to the copy, each is the one recorded already.
		again := receive(to)
		if !again.Replies[0].Duplicate || !again.Replies[1].Duplicate || !again.Reports[0].Duplicate {
			t.Errorf("%s: posted again: %+v %+v", state.Redact(to), again.Replies, again.Reports)
		}
		// Run again (the target received since): the ledger is there
		// already, the replies are merged, not doubled.
		c, err = Copy(ctx, state.MustParseLocation(from), state.MustParseLocation(to))
		must(t, err)
		v, err = Open(ctx, state.MustParseLocation(to))
		must(t, err)
		var n int
		must(t, v.db.QueryRowContext(ctx, `SELECT count(*) FROM replies`).Scan(&n))
		must(t, v.Close())
		if !c.Already || n != 2 {
			t.Errorf("%s: copied again: %+v, %d replies", state.Redact(to), c, n)
		}
		from = to
	}
}

// A project's ledger copied from a file of schema version 5 (before the
// cap's index became rows) carries its cap history: Copy reads the source
// migrated, as every writing command opens it, rather than skip a table
// the file does not have yet.
func TestCopyOfVersion5File(t *testing.T) {
	for _, to := range backends {
		t.Run("file-to-"+to.name, func(t *testing.T) {
			ctx := context.Background()
			src, dst := filepath.Join(t.TempDir(), "project.smsstate"), to.loc(t)
			at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
			now := func() time.Time { return at }
			c := &Cap{Max: 1, Per: 24 * time.Hour}
			s := openShared(t, src, "spring", c, now)
			_, err := s.AdmitIntent(ctx, intent("a1", "+443", "+444"))
			must(t, err)
			must(t, s.RecordOutcome(ctx, "a1", state.Outcome{Status: state.Sent}))
			must(t, s.Close())

			// Back to version 5: the cap's sends as a comma-joined column
			// of caps ("at:attempt"), and nothing of versions 6 to 8.
			db, err := sql.Open("sqlite", "file:"+src)
			must(t, err)
			_, err = db.Exec(`ALTER TABLE caps ADD COLUMN sends TEXT NOT NULL DEFAULT '';
				UPDATE caps SET sends = (SELECT group_concat(at || ':' || attempt_id, ',') FROM cap_sends s WHERE s.phone = caps.phone);
				DROP TABLE cap_sends;
				DROP INDEX attempts_ids_pending; ALTER TABLE attempts DROP COLUMN ids_pending;
				DELETE FROM schema_migrations WHERE version >= 6`)
			must(t, err)
			must(t, db.Close())

			got, err := Copy(ctx, state.MustParseLocation(src), state.MustParseLocation(dst))
			must(t, err)
			if got.CapNumbers != 2 {
				t.Errorf("copied %+v, want 2 numbers in the cap's index", got)
			}
			d := openShared(t, dst, "autumn", c, now)
			adm, err := d.AdmitIntent(ctx, intent("b1", "+443", "+445"))
			must(t, err)
			if !slices.Equal(adm.Send, []string{"+445"}) || !slices.Equal(adm.Held, []string{"+443"}) {
				t.Errorf("the copy's cap admits %+v: the version 5 file's history was not carried", adm)
			}
			must(t, d.Close())
		})
	}
}

// A campaign sent on its own, outside a project, claimed nothing in any cap
// index. Moved into a project's state (state migrate of one campaign), its
// sends and those in doubt count for the project's cap, whether the
// project's ledger is in use or still empty; an empty one stays empty, so
// that the project's own ledger may still be copied in after.
func TestCopiedCampaignCountsForTheCap(t *testing.T) {
	for _, from := range backends {
		for _, to := range backends {
			t.Run(from.name+"-to-"+to.name, func(t *testing.T) { testCopiedCampaignCountsForTheCap(t, from, to) })
		}
	}
}

func testCopiedCampaignCountsForTheCap(t *testing.T, from, to backend) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	set, now := testClock(t0)
	legacy := func() state.Location { // sent on its own: two sent, one in doubt, one failed
		src := state.MustParseLocation(from.loc(t))
		alone, err := state.Open(ctx, src, state.Options{Campaign: "legacy", Now: now, LockTimeout: 10 * time.Second})
		must(t, err)
		must(t, alone.RecordIntent(ctx, intent("l1", "+441", "+442")))
		must(t, alone.RecordOutcome(ctx, "l1", state.Outcome{Status: state.Sent}))
		must(t, alone.RecordIntent(ctx, intent("l2", "+443")))
		must(t, alone.RecordIntent(ctx, intent("l3", "+444")))
		must(t, alone.RecordOutcome(ctx, "l3", state.Outcome{Status: state.Failed}))
		must(t, alone.Close())
		return src
	}

	c := &Cap{Max: 1, Per: 24 * time.Hour}
	inUse, empty := to.loc(t), to.loc(t)
	s := openShared(t, inUse, "spring", c, now)
	_, err := s.AdmitIntent(ctx, intent("s1", "+446"))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "s1", state.Outcome{Status: state.Sent}))
	must(t, s.Close())

	sources := []state.Location{legacy(), legacy()}
	project := from.loc(t) // a project's own ledger, to be copied in after
	p := openShared(t, project, "autumn", c, now)
	recordOne(t, p)
	must(t, p.Close())

	set(t0.Add(time.Hour))
	for i, dst := range []string{inUse, empty} {
		_, err := state.Copy(ctx, sources[i], state.MustParseLocation(dst), state.CopyOptions{Campaign: "legacy", Shared: true, LockTimeout: 10 * time.Second})
		must(t, err)
		if dst == empty {
			// Still empty: the project's ledger may be copied in.
			if err := CheckTarget(ctx, state.MustParseLocation(project), state.MustParseLocation(empty)); err != nil {
				t.Errorf("a project's ledger into the state the campaign moved to first: %v", err)
			}
		}
		f := openShared(t, dst, "flash", c, now)
		holds := capHolds(t, f, *c, now())
		for _, p := range []string{"+441", "+442", "+443"} {
			if until, ok := holds.Get(p); !ok || !until.Equal(t0.Add(24*time.Hour)) {
				t.Errorf("%s: plan reads %s held until %v (%v), want %v", dst, p, until, ok, t0.Add(24*time.Hour))
			}
		}
		adm, err := f.AdmitIntent(ctx, intent("f1", "+441", "+442", "+443", "+444", "+445"))
		must(t, err)
		if !slices.Equal(adm.Held, []string{"+441", "+442", "+443"}) || !slices.Equal(adm.Send, []string{"+444", "+445"}) {
			t.Errorf("%s: the cap admits %+v; the legacy campaign's sends and in-doubt recipients must count", dst, adm)
		}
		must(t, f.ForgetIntent(ctx, "f1"))
		must(t, f.Close())
	}
}

// Claims of a record copied back and forth count each send once: moved out
// of a project's state and back (from a state without a ledger, whose
// sends are claimed again: the old record's claims go first), and a
// campaign claimed on its way in, moved to another project's state and
// back (from a state with a ledger, which claims nothing: the claims the
// target holds stay).
func TestCopiedClaimsBackAndForth(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name+".smsstate") }
	cp := func(campaign, from, to string) {
		t.Helper()
		_, err := state.Copy(ctx, state.MustParseLocation(at(from)), state.MustParseLocation(at(to)),
			state.CopyOptions{Campaign: campaign, Shared: true, LockTimeout: 10 * time.Second})
		must(t, err)
	}
	claims := func(where, phone string) int {
		t.Helper()
		db, err := sql.Open("sqlite", at(where))
		must(t, err)
		defer db.Close()
		var n int
		must(t, db.QueryRow(`SELECT count(*) FROM cap_sends WHERE phone = ?`, phone).Scan(&n))
		return n
	}
	c := &Cap{Max: 1, Per: 24 * time.Hour}
	send := func(where, campaign, phone string) {
		t.Helper()
		s := openShared(t, at(where), campaign, c, now)
		_, err := s.AdmitIntent(ctx, intent("b-"+campaign+phone, phone))
		must(t, err)
		must(t, s.RecordOutcome(ctx, "b-"+campaign+phone, state.Outcome{Status: state.Sent}))
		must(t, s.Close())
	}

	send("p", "c", "+441")
	cp("c", "p", "alone")
	cp("c", "alone", "p")
	if n := claims("p", "+441"); n != 1 {
		t.Errorf("moved out and back: one message to +441 counted %d times", n)
	}

	alone, err := state.Open(ctx, state.MustParseLocation(at("legacy")), state.Options{Campaign: "legacy", Now: now, LockTimeout: 10 * time.Second})
	must(t, err)
	must(t, alone.RecordIntent(ctx, intent("l1", "+442")))
	must(t, alone.RecordOutcome(ctx, "l1", state.Outcome{Status: state.Sent}))
	must(t, alone.Close())
	send("p2", "other", "+449") // p2's ledger is in use
	cp("legacy", "legacy", "p")
	cp("legacy", "p", "p2")
	cp("legacy", "p2", "p")
	if n := claims("p", "+442"); n != 1 {
		t.Errorf("claimed on its way in, moved to a ledger and back: one message to +442 counted %d times", n)
	}
}
