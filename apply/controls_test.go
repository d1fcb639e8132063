package apply_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// --limit sends whole batches in plan order while their recipients stay
// within the limit, then stops; the next run sends the rest, none twice.
func TestRunLimit(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		recipients, batch, limit     int
		concurrency                  int
		wantSent, wantSkipped, again int
	}{
		{"one recipient a batch: exactly the limit", 10, 1, 4, 3, 4, 6, 6},
		// Batches of 3, 3, 3, 1: the third would pass 7, and the plan's
		// order stops there, though the last would fit.
		{"whole batches in plan order", 10, 3, 7, 1, 6, 4, 4},
		{"a limit past the plan sends it all", 5, 2, 100, 2, 5, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, sandbox.Config{}, testharness.Campaign{Recipients: tc.recipients, BatchSize: tc.batch, Concurrency: tc.concurrency}, 0)
			res, err := r.apply(t, context.Background(), apply.Options{Limit: tc.limit})
			var le *apply.LimitError
			switch {
			case tc.wantSkipped == 0 && err != nil:
				t.Fatalf("run: %v, want none", err)
			case tc.wantSkipped > 0 && !errors.As(err, &le):
				t.Fatalf("run: %v, want a *LimitError", err)
			case tc.wantSkipped > 0 && (le.Attempted != tc.wantSent || le.Left != tc.wantSkipped || !res.LimitReached):
				t.Errorf("limit error %+v, limit reached %v; want %d attempted, %d left", le, res.LimitReached, tc.wantSent, tc.wantSkipped)
			}
			if res.Sent != tc.wantSent || res.Skipped != tc.wantSkipped {
				t.Errorf("sent %d, skipped %d; want %d and %d", res.Sent, res.Skipped, tc.wantSent, tc.wantSkipped)
			}
			if tl := r.tally(t); tl.Delivered != tc.wantSent {
				t.Errorf("outbox holds %d, want %d", tl.Delivered, tc.wantSent)
			}
			res, err = r.apply(t, context.Background(), apply.Options{})
			if err != nil || res.Sent != tc.again {
				t.Fatalf("next run: %v, sent %d, want %d", err, res.Sent, tc.again)
			}
			if tl := r.tally(t); tl.Delivered != tc.recipients || tl.Sent != tc.recipients {
				t.Errorf("after the next run: %+v, want each of %d once", tl, tc.recipients)
			}
		})
	}
}

// A canary that leaves anyone failed never ends as if all were well: the
// limit is said in its result, and the run ends owing (exit 3).
func TestRunLimitOwing(t *testing.T) {
	r := newRig(t, sandbox.Config{MaxBody: 5}, testharness.Campaign{Recipients: 6, BatchSize: 1}, 0)
	res, err := r.apply(t, context.Background(), apply.Options{Limit: 2})
	var incomplete *apply.IncompleteError
	if !errors.As(err, &incomplete) || incomplete.Failed != 2 {
		t.Fatalf("run: %v, want 2 failed", err)
	}
	if !res.LimitReached || res.Limit != 2 || res.Skipped != 4 || r.srv.Stats().SendRequests != 2 {
		t.Errorf("result %+v after %d requests; want the limit of 2 reached, 4 left", res, r.srv.Stats().SendRequests)
	}
}

// A pause recorded while a run goes (from another connection: SetPause
// takes no lock) stops it before its next intent: the requests in flight
// finish and are recorded, nothing is left in doubt, the run ends with a
// *state.PausedError and a paused event; after resume the next run sends
// the rest, each recipient once.
func TestRunPaused(t *testing.T) {
	const recipients, concurrency = 40, 4
	r := newRig(t, sandbox.Config{Latency: 30 * time.Millisecond}, testharness.Campaign{Recipients: recipients, BatchSize: 1, Concurrency: concurrency}, 0)
	ctx := context.Background()
	// The pause is recorded while request 6 is served; once it is, the
	// requests made so far are counted.
	var once sync.Once
	atPause := make(chan int, 1)
	r.srv.OnSend(func(n int) {
		if n == 6 {
			once.Do(func() {
				if err := state.SetPause(ctx, state.MustParseLocation(r.st.Path()), r.camp.Name, false, &state.Pause{At: time.Now(), By: "test", Reason: "typo"}); err != nil {
					t.Error(err)
				}
				atPause <- r.srv.Stats().SendRequests
			})
		}
	})
	var mu sync.Mutex
	var events []apply.Event
	res, err := r.apply(t, ctx, apply.Options{Events: func(e apply.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}})
	var pe *state.PausedError
	if !errors.As(err, &pe) || !errors.Is(err, state.ErrPaused) || pe.Reason != "typo" || errors.Is(err, apply.ErrStateRefused) {
		t.Fatalf("run: %v, want the *state.PausedError alone", err)
	}
	// At most one batch per request in flight goes after the pause: those
	// whose intent was recorded before it, one a worker.
	if n, at := r.srv.Stats().SendRequests, <-atPause; n > at+concurrency || n >= recipients {
		t.Errorf("%d requests, %d of them when the pause was recorded: want at most %d more, one a worker", n, at, concurrency)
	}
	tl := r.tally(t)
	if tl.InDoubt != 0 || tl.InDoubtBatches != 0 || tl.Sent != tl.Delivered || res.Sent != tl.Sent || res.Skipped != recipients-res.Sent {
		t.Errorf("after the pause: %+v, result %+v; want what went recorded sent, nothing in doubt, the rest skipped", tl, res)
	}
	paused := 0
	for _, e := range events {
		if e.Type == "paused" {
			paused++
		}
	}
	if paused != 1 {
		t.Errorf("%d paused events, want 1: %+v", paused, events)
	}

	// While paused, a run sends nothing.
	before := r.srv.Stats().SendRequests
	if _, err := r.apply(t, ctx, apply.Options{}); !errors.Is(err, state.ErrPaused) {
		t.Errorf("run while paused: %v, want paused", err)
	}
	if n := r.srv.Stats().SendRequests - before; n != 0 {
		t.Errorf("a run while paused made %d requests", n)
	}
	if err := state.SetPause(ctx, state.MustParseLocation(r.st.Path()), r.camp.Name, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.apply(t, ctx, apply.Options{}); err != nil {
		t.Fatalf("run after resume: %v", err)
	}
	if tl := r.tally(t); tl.Sent != recipients || tl.Delivered != recipients {
		t.Errorf("after resume: %+v, want each of %d once", tl, recipients)
	}
}
