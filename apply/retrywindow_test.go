package apply_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// unavailableFirst answers its first fails requests 503 (not acted on),
// moving the test's clock on by step with each request and calling before
// first, as a slow provider's Retry-After would let the world move on; the
// requests after go to s.
type unavailableFirst struct {
	s      apply.Sender
	clock  *fakeClock
	step   time.Duration
	fails  int
	before func()

	mu sync.Mutex
	n  int
}

func (u *unavailableFirst) Send(ctx context.Context, req api.SendRequest) (api.SendResponse, error) {
	u.mu.Lock()
	u.n++
	n := u.n
	u.mu.Unlock()
	if u.before != nil && n == 1 {
		u.before()
	}
	if u.clock != nil {
		u.clock.Add(u.step)
	}
	if n <= u.fails {
		return api.SendResponse{}, &api.Error{Op: "send", Status: 503, Reached: true, Message: "busy"}
	}
	return u.s.Send(ctx, req)
}

// TestRetryHeedsTheWindow: a batch the API did not act on (503) is tried
// again only while its send window is open and before not_after: a window
// that closed while it waited leaves it waiting, its intent forgotten,
// where the retry once went out after the window's end.
func TestRetryHeedsTheWindow(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	// 19:59 in Paris, the window ends at 20:00; each request takes 2 min.
	r := newWindowRig(t, srv, "closing", paris, "send_window: {from: \"09:00\", to: \"20:00\"}\n", 2)
	clock := &fakeClock{now: time.Date(2026, 11, 23, 18, 59, 0, 0, time.UTC)}
	s := &unavailableFirst{s: r.auth, clock: clock, step: 2 * time.Minute, fails: 1}
	res, err := r.run(t, context.Background(), r.plan(t), s, apply.Options{Clock: clock})
	var closed *apply.ClosedError
	if !errors.As(err, &closed) || res.Sent != 0 || res.Waiting != 2 || res.InDoubt != 0 {
		t.Fatalf("result %+v, err %v; want both waiting for the window", res, err)
	}
	if n := len(srv.Messages()); n != 0 || s.n != 1 {
		t.Errorf("%d messages in %d requests after the window closed, want none after the first", n, s.n)
	}
	// Next morning it goes, once.
	clock.Set(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC))
	if res, err := r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock}); err != nil || res.Sent != 2 || len(srv.Messages()) != 2 {
		t.Errorf("next morning: %+v, %v, outbox %d", res, err, len(srv.Messages()))
	}

	// not_after passed while the batch waited to be tried again: expired.
	srv2 := testharness.Start(t, sandbox.Config{})
	r2 := newWindowRig(t, srv2, "ending", paris, "not_after: 2026-11-23T12:00:00Z\n", 2)
	clock2 := &fakeClock{now: time.Date(2026, 11, 23, 11, 59, 0, 0, time.UTC)}
	s2 := &unavailableFirst{s: r2.auth, clock: clock2, step: 2 * time.Minute, fails: 1}
	res, err = r2.run(t, context.Background(), r2.plan(t), s2, apply.Options{Clock: clock2, Wait: true})
	var expired *apply.ExpiredError
	if !errors.As(err, &expired) || res.Sent != 0 || res.Expired != 2 || len(srv2.Messages()) != 0 {
		t.Errorf("past not_after: result %+v, err %v, outbox %d; want both expired, nothing sent", res, err, len(srv2.Messages()))
	}
}

// TestPiecesHeedTheWindow: a batch sent in pieces (a provider's
// max_recipients) whose first piece found the window closed on its retry
// leaves the rest waiting too: the next piece once went out after the
// window's end (or not_after) while its sibling waited. Next morning each
// goes once.
func TestPiecesHeedTheWindow(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	r := newWindowRig(t, srv, "pieces", paris, "send_window: {from: \"09:00\", to: \"20:00\"}\n", 2)
	clock := &fakeClock{now: time.Date(2026, 11, 23, 18, 59, 0, 0, time.UTC)}
	s := &unavailableFirst{s: r.auth, clock: clock, step: 2 * time.Minute, fails: 1}
	res, err := r.run(t, context.Background(), r.plan(t), s, apply.Options{Clock: clock, MaxRecipients: 1})
	var closed *apply.ClosedError
	if !errors.As(err, &closed) || res.Sent != 0 || res.Waiting != 2 || res.HeldByCap != 0 || closed.Held != 0 || len(srv.Messages()) != 0 {
		t.Fatalf("result %+v, err %v, outbox %d; want both pieces waiting for the window, none held by a cap", res, err, len(srv.Messages()))
	}
	clock.Set(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC))
	if res, err := r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock, MaxRecipients: 1}); err != nil || res.Sent != 2 || len(srv.Messages()) != 2 {
		t.Errorf("next morning: %+v, %v, outbox %d", res, err, len(srv.Messages()))
	}

	srv2 := testharness.Start(t, sandbox.Config{})
	r2 := newWindowRig(t, srv2, "pieces-end", paris, "not_after: 2026-11-23T12:00:00Z\n", 2)
	clock2 := &fakeClock{now: time.Date(2026, 11, 23, 11, 59, 0, 0, time.UTC)}
	s2 := &unavailableFirst{s: r2.auth, clock: clock2, step: 2 * time.Minute, fails: 1}
	res, err = r2.run(t, context.Background(), r2.plan(t), s2, apply.Options{Clock: clock2, MaxRecipients: 1})
	var expired *apply.ExpiredError
	if !errors.As(err, &expired) || res.Sent != 0 || res.Expired != 2 || len(srv2.Messages()) != 0 {
		t.Errorf("past not_after: %+v, %v, outbox %d; want both expired, nothing sent", res, err, len(srv2.Messages()))
	}
}

// TestRetryHeedsAPause: a pause recorded while a batch waits to be tried
// again (503) stops it: it is not sent, its intent is forgotten, and the
// run ends paused, where the retries once went on and sent it after the
// pause.
func TestRetryHeedsAPause(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	r := newWindowRig(t, srv, "halted", paris, "", 2)
	ctx := context.Background()
	s := &unavailableFirst{s: r.auth, fails: 1, before: func() {
		if err := state.SetPause(ctx, state.MustParseLocation(r.st.Path()), r.camp.Name, false, &state.Pause{At: time.Now(), By: "test", Reason: "wrong link"}); err != nil {
			t.Error(err)
		}
	}}
	var events []apply.Event
	// Through the journal the command wraps the state in, as apply runs:
	// a wrapper without the pause's reading once made every retry blind
	// to it.
	res, err := apply.Run(ctx, r.plan(t), apply.RunJournal(r.st), s, apply.Options{From: r.camp.Sender, BackoffBase: time.Millisecond, BackoffCap: 20 * time.Millisecond,
		Events: func(e apply.Event) { events = append(events, e) }})
	var pe *state.PausedError
	if !errors.As(err, &pe) || pe.Reason != "wrong link" {
		t.Fatalf("run: %v, want paused", err)
	}
	if res.Sent != 0 || res.InDoubt != 0 || res.Skipped != 2 || len(srv.Messages()) != 0 || s.n != 1 {
		t.Errorf("result %+v, %d requests, outbox %d; want nothing sent after the pause", res, s.n, len(srv.Messages()))
	}
	if len(events) == 0 || !slicesContainsType(events, "paused") {
		t.Errorf("events %+v, want a paused one", events)
	}
	if err := state.SetPause(ctx, state.MustParseLocation(r.st.Path()), r.camp.Name, false, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := r.run(t, ctx, r.plan(t), nil, apply.Options{}); err != nil || res.Sent != 2 || len(srv.Messages()) != 2 {
		t.Errorf("after resume: %+v, %v, outbox %d", res, err, len(srv.Messages()))
	}
}

func slicesContainsType(events []apply.Event, typ string) bool {
	for _, e := range events {
		if e.Type == typ {
			return true
		}
	}
	return false
}

// forgetFails is a state that cannot forget an intent (a full disk, say).
type forgetFails struct{ *state.State }

func (forgetFails) ForgetIntent(context.Context, string) error { return errors.New("disk full") }

// TestRetryWindowForgetFails: a retry that finds the window closed but
// cannot forget its intent leaves the batch in doubt, counted once, not as
// waiting too (a later run would not send it).
func TestRetryWindowForgetFails(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	r := newWindowRig(t, srv, "stuck", paris, "send_window: {from: \"09:00\", to: \"20:00\"}\n", 2)
	clock := &fakeClock{now: time.Date(2026, 11, 23, 18, 59, 0, 0, time.UTC)}
	s := &unavailableFirst{s: r.auth, clock: clock, step: 2 * time.Minute, fails: 1}
	res, err := apply.Run(context.Background(), r.plan(t), forgetFails{r.st}, s, apply.Options{From: r.camp.Sender, Clock: clock, BackoffBase: time.Millisecond, BackoffCap: 20 * time.Millisecond})
	if err == nil || res.InDoubt != 2 || res.Waiting != 0 || res.Sent != 0 {
		t.Errorf("result %+v, err %v; want both in doubt, none waiting", res, err)
	}
}
