package apply_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// fakeClock is a clock the test sets; Sleep moves it on at once, unless
// block is set: then Sleep waits for ctx, as a long wait would.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	slept  time.Duration
	block  bool
	asleep chan struct{} // closed when a blocking Sleep starts
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) bool {
	if c.block {
		close(c.asleep)
		<-ctx.Done()
		return false
	}
	if ctx.Err() != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept += d
	return true
}

// windowRig is a campaign with a send window against the sandbox over HTTP,
// with a state file.
type windowRig struct {
	srv  *testharness.Server
	st   *state.State
	camp *campaign.Campaign
	auth *api.Authenticated
}

func newWindowRig(t *testing.T, srv *testharness.Server, name string, phones []string, schedule string, batchSize int) *windowRig {
	t.Helper()
	dir := t.TempDir()
	yaml := fmt.Sprintf("version: 1\nname: %s\nsender: ACME\nrecipients:\n  - numbers: [%s]\nbody: hi\nbatch_size: %d\n%s",
		name, `"`+strings.Join(phones, `", "`)+`"`, batchSize, schedule)
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	camp, err := campaign.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(context.Background(), state.MustParseLocation(filepath.Join(dir, name+".smsstate")), state.Options{Campaign: camp.Name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	client := &api.Client{BaseURL: srv.URL, ClientID: testharness.ClientID, ClientSecret: testharness.ClientSecret, Timeout: 5 * time.Second}
	return &windowRig{srv: srv, st: st, camp: camp, auth: &api.Authenticated{Client: client}}
}

func (r *windowRig) plan(t *testing.T) *plan.Plan {
	t.Helper()
	p, err := plan.Compute(context.Background(), r.camp, r.st)
	if err != nil {
		t.Fatal(err)
	}
	if p.Summary.Invalid != 0 {
		t.Fatalf("%d invalid numbers in the test campaign: %+v", p.Summary.Invalid, p.Invalid)
	}
	return p
}

func (r *windowRig) run(t *testing.T, ctx context.Context, p *plan.Plan, s apply.Sender, o apply.Options) (*apply.Result, error) {
	t.Helper()
	o.From = r.camp.Sender
	o.BackoffBase, o.BackoffCap = time.Millisecond, 20*time.Millisecond
	if s == nil {
		s = r.auth
	}
	return apply.Run(ctx, p, r.st, s, o)
}

// delivered is who the sandbox's outbox holds, and how often.
func delivered(srv *testharness.Server) map[string]int {
	got := map[string]int{}
	for _, m := range srv.Messages() {
		got[m.To]++
	}
	return got
}

var (
	newYork  = []string{"+12125550101", "+12125550102", "+12125550103"}
	paris    = []string{"+33612345678", "+33612345679"}
	tokyo    = []string{"+819012345678", "+819012345679"}
	saoPaulo = []string{"+5511987654321"}
	idaho    = []string{"+12085550100"} // America/Boise and America/Los_Angeles
)

// TestRunOwedOutranksClosed: a run that finds every window closed while the
// state records recipients in doubt from an earlier run ends with an
// IncompleteError (exit 3) that also says what waits, not a ClosedError
// (exit 5), which a CI reruns later without looking: nobody in doubt may be
// hidden behind a closed window.
func TestRunOwedOutranksClosed(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	r := newWindowRig(t, srv, "owed-closed", tokyo, "send_window: {from: \"09:00\", to: \"20:00\"}\n", 2)
	clock := &fakeClock{}
	clock.Set(time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC)) // 20:30 in Tokyo
	owed := func() apply.Owed { return apply.Owed{InDoubt: 3} }
	res, err := r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock, Owed: owed})
	var incomplete *apply.IncompleteError
	if !errors.As(err, &incomplete) || errors.As(err, new(*apply.ClosedError)) {
		t.Fatalf("err = %v (%T), want an IncompleteError that is not a ClosedError", err, err)
	}
	if incomplete.Later == nil || incomplete.Later.Waiting != 2 || res.Waiting != 2 || res.Sent != 0 {
		t.Fatalf("result %+v, later %+v: want both Tokyo numbers waiting, said in the error", res, incomplete.Later)
	}
	for _, want := range []string{"3 in doubt", "nothing more may be sent now: 2 recipients wait"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// Nothing owed: the same run is a ClosedError again.
	_, err = r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock, Owed: func() apply.Owed { return apply.Owed{} }})
	if !errors.As(err, new(*apply.ClosedError)) {
		t.Fatalf("nothing owed: err = %v, want a ClosedError", err)
	}
}

// TestRunSendsOnlyOpenWindows applies a campaign with recipients in Europe,
// the Americas and Asia at a fixed moment: exactly those whose window is
// open are sent, the run stops with a ClosedError that says when the next
// window opens, and nothing is recorded for the others. Applied again later,
// it sends the rest, and nobody twice (the outbox is the ground truth).
func TestRunSendsOnlyOpenWindows(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	phones := slices.Concat(newYork, paris, tokyo, saoPaulo, idaho)
	r := newWindowRig(t, srv, "windows", phones, "send_window: {days: [mon, tue, wed, thu, fri], from: \"09:00\", to: \"20:00\"}\n", 2)
	clock := &fakeClock{}

	// Monday 23 November 2026, 11:30 UTC: Paris is open (12:30), Tokyo
	// closed (20:30), São Paulo closed (08:30), New York (06:30) and
	// Idaho closed.
	clock.Set(time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC))
	res, err := r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock})
	var closed *apply.ClosedError
	if !errors.As(err, &closed) {
		t.Fatalf("err = %v, want a ClosedError", err)
	}
	if want := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC); !closed.Next.Equal(want) || !strings.Contains(closed.Label, "America/Sao_Paulo") {
		t.Errorf("next opening %s (%s), want São Paulo's 09:00 at %s", closed.Next, closed.Label, want)
	}
	if res.Sent != 2 || res.Waiting != 7 || closed.Waiting != 7 || res.Skipped != 0 {
		t.Errorf("result %+v, want 2 sent and 7 waiting", res)
	}
	if got := delivered(srv); len(got) != 2 || got[paris[0]] != 1 || got[paris[1]] != 1 {
		t.Fatalf("outbox %v, want the two Paris numbers", got)
	}
	counts, err := r.st.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if counts[state.Sent] != 2 || counts[state.InDoubt] != 0 || counts[state.Failed] != 0 {
		t.Errorf("state counts %+v, want 2 sent and nothing recorded for the rest", counts)
	}

	// 17:00 UTC: New York (12:00), São Paulo (14:00) and Idaho (Boise
	// 10:00, Los Angeles 09:00) are open; Tokyo (02:00) is not.
	clock.Set(time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC))
	res, err = r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock})
	if !errors.As(err, &closed) || res.Sent != 5 || res.Waiting != 2 {
		t.Fatalf("second run: %+v, %v; want 5 sent and Tokyo waiting", res, err)
	}
	if want := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC); !closed.Next.Equal(want) {
		t.Errorf("next opening %s, want Tokyo's 09:00 at %s", closed.Next, want)
	}

	// Tuesday 00:30 UTC: Tokyo is open; the others have been sent.
	clock.Set(time.Date(2026, 11, 24, 0, 30, 0, 0, time.UTC))
	res, err = r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock})
	if err != nil || res.Sent != 2 {
		t.Fatalf("third run: %+v, %v; want Tokyo's 2 sent", res, err)
	}
	got := delivered(srv)
	for _, p := range phones {
		if got[p] != 1 {
			t.Errorf("%s delivered %d times, want once", p, got[p])
		}
	}
	if p := r.plan(t); p.Summary.ToSend != 0 {
		t.Errorf("a new plan still sends %d", p.Summary.ToSend)
	}
}

// windowSender records when each batch goes (on the test's clock) and can
// move the clock on with each send, as a long run would.
type windowSender struct {
	s     apply.Sender
	clock *fakeClock
	step  time.Duration
	mu    sync.Mutex
	sent  map[string]time.Time
}

func (w *windowSender) Send(ctx context.Context, req api.SendRequest) (api.SendResponse, error) {
	w.mu.Lock()
	now := w.clock.Now()
	for _, to := range req.To {
		w.sent[to] = now
	}
	w.mu.Unlock()
	resp, err := w.s.Send(ctx, req)
	w.clock.Add(w.step)
	return resp, err
}

// TestRunChecksEachBatchAtSendTime: a run that reaches the end of the
// window stops there, rather than carrying on into the night.
func TestRunChecksEachBatchAtSendTime(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	var phones []string
	for i := range 10 {
		phones = append(phones, fmt.Sprintf("+336123456%02d", i))
	}
	r := newWindowRig(t, srv, "late", phones, "send_window: {from: \"09:00\", to: \"20:00\"}\n", 2)
	clock := &fakeClock{now: time.Date(2026, 11, 23, 17, 30, 0, 0, time.UTC)} // 18:30 in Paris
	s := &windowSender{s: r.auth, clock: clock, step: 30 * time.Minute, sent: map[string]time.Time{}}
	res, err := r.run(t, context.Background(), r.plan(t), s, apply.Options{Clock: clock})
	var closed *apply.ClosedError
	if !errors.As(err, &closed) {
		t.Fatalf("err = %v, want a ClosedError", err)
	}
	// 18:30, 19:00 and 19:30 go; at 20:00 the window is closed.
	if res.Sent != 6 || res.Waiting != 4 || len(delivered(srv)) != 6 {
		t.Errorf("result %+v, outbox %d; want 6 sent, 4 waiting", res, len(delivered(srv)))
	}
	if want := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC); !closed.Next.Equal(want) {
		t.Errorf("next opening %s, want %s", closed.Next, want)
	}
}

// TestRunWait keeps running through closed windows, sleeping on the clock
// until each opens, and reports each wait as an event.
func TestRunWait(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	phones := slices.Concat(newYork, paris, tokyo, saoPaulo, idaho)
	r := newWindowRig(t, srv, "wait", phones, "send_window: {days: [mon, tue, wed, thu, fri], from: \"09:00\", to: \"20:00\"}\n", 2)
	clock := &fakeClock{now: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)} // Saturday everywhere
	s := &windowSender{s: r.auth, clock: clock, sent: map[string]time.Time{}}
	var waits []apply.Event
	res, err := r.run(t, context.Background(), r.plan(t), s, apply.Options{Clock: clock, Wait: true, Events: func(e apply.Event) {
		if e.Type == "wait" {
			waits = append(waits, e)
		}
	}})
	if err != nil || res.Sent != len(phones) || res.Waiting != 0 {
		t.Fatalf("result %+v, %v; want everyone sent", res, err)
	}
	// Monday: Tokyo at 00:00 UTC, Paris at 08:00, São Paulo at 12:00, New
	// York at 14:00, Idaho (Los Angeles last) at 17:00.
	wantWaits := []time.Time{
		time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 17, 0, 0, 0, time.UTC),
	}
	if len(waits) != len(wantWaits) {
		t.Fatalf("%d waits, want %d: %+v", len(waits), len(wantWaits), waits)
	}
	for i, w := range waits {
		if !w.Until.Equal(wantWaits[i]) || w.Wait <= 0 || w.Reason == "" || w.Recipients == 0 {
			t.Errorf("wait %d: %+v, want until %s", i, w, wantWaits[i])
		}
	}
	checkSentInWindow(t, r.camp, s.sent)
	got := delivered(srv)
	for _, p := range phones {
		if got[p] != 1 {
			t.Errorf("%s delivered %d times", p, got[p])
		}
	}
}

// checkSentInWindow checks, recipient by recipient, that each was sent
// when its window was open in every one of its zones.
func checkSentInWindow(t *testing.T, c *campaign.Campaign, sent map[string]time.Time) {
	t.Helper()
	for phone, at := range sent {
		if !openByHand(t, c.Window, phone, at) {
			t.Errorf("%s sent at %s, when its window was closed in one of its zones", phone, at)
		}
	}
}

// openByHand is the test's own reading of a send window: the weekday and
// clock in each of the number's zones, from Go's time package alone.
func openByHand(t *testing.T, w window.Spec, phone string, at time.Time) bool {
	t.Helper()
	if !w.NotBefore.IsZero() && at.Before(w.NotBefore) || !w.NotAfter.IsZero() && !at.Before(w.NotAfter) {
		return false
	}
	if !w.HasWindow() {
		return true
	}
	sc, err := window.Compile(w)
	if err != nil {
		t.Fatal(err)
	}
	z, _ := sc.Finder().Zones(phone)
	if z == nil {
		return false
	}
	days := w.Days
	if len(days) == 0 {
		names := window.DayNames()
		days = names[:]
	}
	for _, name := range z.Names() {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		l := at.In(loc)
		hhmm := fmt.Sprintf("%02d:%02d", l.Hour(), l.Minute())
		day := strings.ToLower(l.Weekday().String()[:3])
		to := w.To
		if to == "24:00" {
			to = "24:01"
		}
		if !slices.Contains(days, day) || hhmm < w.From || hhmm >= to {
			return false
		}
	}
	return true
}

// TestRunNotAfter: once not_after passes, nothing more is sent, and the run
// says how many were left.
func TestRunNotAfter(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	var phones []string
	for i := range 6 {
		phones = append(phones, fmt.Sprintf("+336123456%02d", i))
	}
	r := newWindowRig(t, srv, "ends", phones, "not_after: 2026-11-23T12:00:00Z\n", 2)
	clock := &fakeClock{now: time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)}
	s := &windowSender{s: r.auth, clock: clock, step: 40 * time.Minute, sent: map[string]time.Time{}}
	res, err := r.run(t, context.Background(), r.plan(t), s, apply.Options{Clock: clock, Wait: true})
	var expired *apply.ExpiredError
	if !errors.As(err, &expired) || expired.Left != 2 || res.Sent != 4 || res.Expired != 2 {
		t.Fatalf("result %+v, err %v; want 4 sent before 12:00 and 2 left", res, err)
	}
	if len(delivered(srv)) != 4 {
		t.Errorf("outbox holds %d, want 4", len(delivered(srv)))
	}
	// Applied again after not_after: nothing is sent.
	res, err = r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock})
	if !errors.As(err, &expired) || res.Sent != 0 || res.Expired != 2 || len(delivered(srv)) != 4 {
		t.Errorf("after not_after: %+v, %v", res, err)
	}
}

// TestRunNotBefore: before not_before nothing is sent; the run says when
// the campaign starts.
func TestRunNotBefore(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	r := newWindowRig(t, srv, "starts", paris, "not_before: 2026-12-01T08:00:00Z\n", 2)
	clock := &fakeClock{now: time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)}
	res, err := r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock})
	var closed *apply.ClosedError
	if !errors.As(err, &closed) || !closed.Next.Equal(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)) || res.Sent != 0 || len(delivered(srv)) != 0 {
		t.Fatalf("result %+v, %v; want nothing sent, waiting for 1 December", res, err)
	}
	if !strings.Contains(closed.Label, "not_before") {
		t.Errorf("label %q does not name not_before", closed.Label)
	}
}

// TestRunInterruptedWhileWaiting: an interrupt ends a wait at once; the
// recipients it leaves wait for their window, counted so however the run
// ended (not skipped: one definition of each count).
func TestRunInterruptedWhileWaiting(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	r := newWindowRig(t, srv, "interrupt", paris, "send_window: {from: \"09:00\", to: \"20:00\"}\n", 2)
	clock := &fakeClock{now: time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC), block: true, asleep: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-clock.asleep
		cancel()
	}()
	res, err := r.run(t, ctx, r.plan(t), nil, apply.Options{Clock: clock, Wait: true})
	if !errors.Is(err, apply.ErrInterrupted) || res.Sent != 0 || res.Waiting != 2 || res.Skipped != 0 {
		t.Fatalf("result %+v, %v; want an interrupt with nothing sent", res, err)
	}
}

// TestRunWindowProperty: over many random campaigns and moments, no batch
// is sent when its window is closed in any of its recipients' zones, and
// every recipient whose window is open is sent.
func TestRunWindowProperty(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	pool := [][]string{newYork, paris, tokyo, saoPaulo, idaho,
		{"+14155550101", "+14155550102"}, // Los Angeles
		{"+61412345678"},                 // Sydney
		{"+61891234567"},                 // Adelaide and Perth
		{"+447400123459"},                // London, Guernsey, Isle of Man
		{"+918123456789"},                // Kolkata
		{"+2348031234567"},               // Lagos
		{"+80012345678"},                 // no zone
	}
	runs := 60
	if testing.Short() {
		runs = 15
	}
	rng := rand.New(rand.NewPCG(7, 2026))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for run := range runs {
		var phones []string
		for _, group := range pool {
			if rng.IntN(2) == 0 {
				phones = append(phones, group...)
			}
		}
		if len(phones) == 0 {
			phones = paris
		}
		from := rng.IntN(20) * 60
		to := from + 60*(1+rng.IntN(24-from/60))
		var days []string
		for _, d := range window.DayNames() {
			if rng.IntN(3) > 0 {
				days = append(days, d)
			}
		}
		if len(days) == 0 {
			days = []string{"wed"}
		}
		sched := fmt.Sprintf("send_window: {days: [%s], from: \"%02d:00\", to: \"%02d:00\"}\n", strings.Join(days, ", "), from/60, to/60)
		if rng.IntN(3) == 0 {
			sched += "fallback_timezone: Asia/Dubai\n"
		}
		name := fmt.Sprintf("prop-%d", run)
		r := newWindowRig(t, srv, name, phones, sched, 1+rng.IntN(3))
		now := base.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Minute)
		clock := &fakeClock{now: now}
		s := &windowSender{s: r.auth, clock: clock, sent: map[string]time.Time{}}
		_, err := r.run(t, context.Background(), r.plan(t), s, apply.Options{Clock: clock})
		if err != nil && !errors.As(err, new(*apply.ClosedError)) && !errors.As(err, new(*apply.ExpiredError)) {
			t.Fatalf("run %d: %v", run, err)
		}
		checkSentInWindow(t, r.camp, s.sent)
		for _, p := range phones {
			if _, ok := s.sent[p]; !ok && openByHand(t, r.camp.Window, p, now) {
				t.Errorf("run %d (%s at %s): %s is open but was not sent", run, strings.TrimSpace(sched), now, p)
			}
		}
	}
}

// TestCountsOneDefinition: a run paused before its batches, whose window is
// open for some and closed for others, counts the closed ones waiting and
// the open ones skipped, with why it stopped; the same campaign run to its
// end counts the closed ones waiting again.
func TestCountsOneDefinition(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	r := newWindowRig(t, srv, "counts", paris, "send_window: {from: \"09:00\", to: \"20:00\"}\n", 2)
	clock := &fakeClock{now: time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stopped before the first batch
	res, err := r.run(t, ctx, r.plan(t), nil, apply.Options{Clock: clock})
	if !errors.Is(err, apply.ErrInterrupted) || res.Waiting != 2 || res.Skipped != 0 {
		t.Fatalf("interrupted at once: %+v, %v; want 2 waiting, none skipped", res, err)
	}
	res, err = r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock})
	if !errors.As(err, new(*apply.ClosedError)) || res.Waiting != 2 || res.Skipped != 0 {
		t.Fatalf("run to its end: %+v, %v; want the same 2 waiting", res, err)
	}
}
