package apply_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// The limit of failed or in-doubt batches reached by the last batch stops
// nothing: the run finished, with errors.
func TestRunMaxErrorsOnTheLastBatch(t *testing.T) {
	r := newRig(t, sandbox.Config{ErrorRate: 1}, testharness.Campaign{Recipients: 30, BatchSize: 10}, 0)
	res, err := r.apply(t, context.Background(), apply.Options{MaxErrors: 3})
	var inc *apply.IncompleteError
	if !errors.As(err, &inc) || errors.Is(err, apply.ErrTooManyErrors) {
		t.Fatalf("run: %v, want an IncompleteError", err)
	}
	if inc.InDoubt != 30 || res.Skipped != 0 || r.srv.Stats().SendRequests != 3 {
		t.Errorf("%d in doubt, %d skipped after %d requests; want 30, 0, 3", inc.InDoubt, res.Skipped, r.srv.Stats().SendRequests)
	}
}

// lossySender is a Sender in front of the real one that loses every answer
// with an error of its own: a proxy, say. It is the one part here that is
// not real, because it is the case under test.
type lossySender struct{ s apply.Sender }

func (l lossySender) Send(ctx context.Context, req api.SendRequest) (api.SendResponse, error) {
	l.s.Send(ctx, req)
	return api.SendResponse{}, errors.New("proxy: answer lost")
}

// A Sender's failure that does not say whether the API acted leaves the
// batch in doubt: it is never forgotten and sent again.
func TestRunUnknownSenderErrorIsInDoubt(t *testing.T) {
	r := newRig(t, sandbox.Config{}, testharness.Campaign{Recipients: 30, BatchSize: 10}, 0)
	p := r.plan(t)
	_, err := apply.Run(context.Background(), p, r.st, lossySender{r.auth}, apply.Options{From: r.camp.Sender, MaxErrors: 100})
	if !isIncomplete(err) {
		t.Fatalf("run: %v, want an IncompleteError", err)
	}
	got := r.tally(t)
	if got.InDoubt != 30 || got.Delivered != 30 {
		t.Errorf("in doubt %d, delivered %d; want 30, 30", got.InDoubt, got.Delivered)
	}
	var reason string
	r.st.Recipients(context.Background(), func(rc state.Recipient) error { reason = rc.Reason; return nil })
	if !strings.Contains(reason, "answer lost") {
		t.Errorf("reason %q does not keep the sender's error", reason)
	}
	r.rerunSendsNothing(t)
}

// journalLog is the real state, with the order of the changes apply asks
// of it written down.
type journalLog struct {
	*state.State
	mu    sync.Mutex
	calls []string
}

func (j *journalLog) log(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls = append(j.calls, s)
}

func (j *journalLog) snapshot() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.calls...)
}

func (j *journalLog) AdmitIntent(ctx context.Context, in state.Intent) (state.Admission, error) {
	j.log("intent")
	return j.State.AdmitIntent(ctx, in)
}

func (j *journalLog) RecordOutcome(ctx context.Context, batch string, o state.Outcome) error {
	j.log("outcome")
	return j.State.RecordOutcome(ctx, batch, o)
}

func (j *journalLog) RecordOutcomeAndAdmit(ctx context.Context, prev string, o state.Outcome, next state.Intent) (state.Admission, error) {
	j.log("outcome+intent")
	return j.State.RecordOutcomeAndAdmit(ctx, prev, o, next)
}

func (j *journalLog) ForgetIntent(ctx context.Context, batch string) error {
	j.log("forget")
	return j.State.ForgetIntent(ctx, batch)
}

// A rate wait comes before the next intent, and the last outcome is
// journaled before the wait: a kill while waiting leaves nothing in doubt.
func TestRunPacesBeforeTheIntent(t *testing.T) {
	// The second batch may go an hour after the first: whatever the
	// machine's speed, the run is waiting for it when the test looks.
	r := newRig(t, sandbox.Config{}, testharness.Campaign{Recipients: 30, BatchSize: 10, Rate: "1/h"}, 0)
	issueSlowly(t, r)
	j := &journalLog{State: r.st}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := r.start(t, ctx, j, apply.Options{})
	// Once the first batch's end is journaled, interrupt the wait (a run
	// that left it for the next intent fails here, after a minute).
	eventually(t, "a journal call after the first intent", func() bool { return len(j.snapshot()) >= 2 })
	whileWaiting := j.snapshot()
	cancel()
	res, err := run()
	if !errors.Is(err, apply.ErrInterrupted) {
		t.Fatalf("run: %v, want ErrInterrupted", err)
	}
	if want := "intent outcome"; strings.Join(whileWaiting, " ") != want {
		t.Errorf("journal while waiting for the rate: %q, want %q", whileWaiting, want)
	}
	if calls := j.snapshot(); len(calls) != 2 {
		t.Errorf("journal calls %q: nothing more after the interrupt", calls)
	}
	if n := r.srv.Stats().SendRequests; n != 1 {
		t.Errorf("%d send requests, want 1: the second batch waits an hour", n)
	}
	got := r.tally(t)
	if got.Sent != 10 || got.InDoubt != 0 || got.Unrecorded != 20 || res.Skipped != 20 {
		t.Errorf("sent %d, in doubt %d, unrecorded %d, skipped %d; want 10, 0, 20, 20", got.Sent, got.InDoubt, got.Unrecorded, res.Skipped)
	}
}

// A plan that promises someone the state already holds (a stale plan) is
// refused batch by batch as such, not as a disk problem.
func TestRunAlreadySentIsNotADiskError(t *testing.T) {
	r := newRig(t, sandbox.Config{}, testharness.Campaign{Recipients: 30, BatchSize: 10}, 0)
	p := r.plan(t)
	ctx := context.Background()
	// Another run sent the second batch's first recipient since.
	other := state.Intent{BatchID: "elsewhere", Phones: p.AllBatches()[1].Recipients[:1], BodyHash: "h"}
	if err := r.st.RecordIntent(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := r.st.RecordOutcome(ctx, "elsewhere", state.Outcome{Status: state.Sent, HTTPStatus: 200}); err != nil {
		t.Fatal(err)
	}
	res, err := apply.Run(ctx, p, r.st, r.auth, apply.Options{From: r.camp.Sender})
	if !errors.Is(err, state.ErrAlreadySent) || errors.Is(err, apply.ErrStateRefused) || !strings.Contains(err.Error(), "plan again") {
		t.Fatalf("run: %v, want the plan refused as out of date", err)
	}
	if res.Sent != 10 || res.Skipped != 20 || r.srv.Stats().SendRequests != 1 {
		t.Errorf("sent %d, skipped %d after %d requests; want 10, 20, 1", res.Sent, res.Skipped, r.srv.Stats().SendRequests)
	}
}

// Once the error limit is reached no worker starts another request, even
// one that was waiting for the rate limiter meanwhile.
func TestRunStopsWorkersWaitingForTheRate(t *testing.T) {
	// The first worker's batch is refused, which reaches the limit; the
	// second worker waits for the rate until one interval after the run
	// started, a moment set by the clock: this holds only if the refusal
	// was recorded before it. The test sees when the limit was reached
	// (the batch_failed event comes after it), and when a loaded machine
	// took longer than the interval, it tries again with a longer one.
	for _, interval := range []time.Duration{time.Second, 4 * time.Second, 16 * time.Second} {
		r := newRig(t, sandbox.Config{MaxBody: 5}, testharness.Campaign{Recipients: 40, BatchSize: 10, Concurrency: 2}, 0)
		issueSlowly(t, r)
		var reached time.Time // when the limit was reached
		o := r.options(apply.Options{MaxErrors: 1, Events: func(e apply.Event) {
			if e.Type == "batch_failed" && reached.IsZero() {
				reached = time.Now()
			}
		}})
		o.RatePerSecond = 1 / interval.Seconds()
		p := r.plan(t)
		start := time.Now() // the second worker waits until at least start+interval
		res, err := apply.Run(context.Background(), p, r.st, r.auth, o)
		if !errors.Is(err, apply.ErrTooManyErrors) {
			t.Fatalf("run: %v, want ErrTooManyErrors", err)
		}
		if reached.IsZero() {
			t.Fatal("no batch_failed event")
		}
		if took := reached.Sub(start); took >= interval {
			// The second worker may have started its request before the
			// limit: nothing this test is about.
			t.Logf("the limit was reached %v after the start, not within the rate's interval of %v: again with a longer one", took, interval)
			continue
		}
		if n := r.srv.Stats().SendRequests; n != 1 {
			t.Errorf("%d send requests, want 1: the limit stops the run at once", n)
		}
		if res.Failed != 10 || res.Skipped != 30 {
			t.Errorf("failed %d, skipped %d; want 10, 30", res.Failed, res.Skipped)
		}
		return
	}
	t.Fatal("the machine never recorded the first batch's refusal within the rate's interval: nothing was tested")
}

// brokenDisk is the real state until it refuses outcomes, or forgotten
// intents, as a state on a disk that just filled up would. (The fault
// matrix fills a real disk; this checks the counts a run reports then.)
type brokenDisk struct {
	*state.State
	outcomes, forgets bool // refused
}

var errDiskFull = errors.New("disk I/O error (simulated)")

func (b brokenDisk) RecordOutcome(ctx context.Context, batch string, o state.Outcome) error {
	if b.outcomes {
		return errDiskFull
	}
	return b.State.RecordOutcome(ctx, batch, o)
}

func (b brokenDisk) RecordOutcomeAndAdmit(ctx context.Context, prev string, o state.Outcome, next state.Intent) (state.Admission, error) {
	if b.outcomes {
		return state.Admission{}, errDiskFull
	}
	return b.State.RecordOutcomeAndAdmit(ctx, prev, o, next)
}

func (b brokenDisk) ForgetIntent(ctx context.Context, batch string) error {
	if b.forgets {
		return errDiskFull
	}
	return b.State.ForgetIntent(ctx, batch)
}

// A batch whose end cannot be written is counted and reported in doubt
// (the state holds its intent): the summary adds up, and the state's
// refusal is what the run returns, even after the error limit.
func TestRunEndNotWritten(t *testing.T) {
	tests := []struct {
		name            string
		cfg             sandbox.Config
		recipients      int
		disk            brokenDisk
		maxErrors       int
		failed, skipped int
		tooMany         bool
	}{
		{name: "outcomes refused", recipients: 30, disk: brokenDisk{outcomes: true}, skipped: 20},
		{name: "forget refused after the error limit", cfg: sandbox.Config{MaxBody: 5}, recipients: 20,
			disk: brokenDisk{forgets: true}, maxErrors: 1, failed: 10, tooMany: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.cfg, testharness.Campaign{Recipients: tt.recipients, BatchSize: 10}, 0)
			var doubt []string
			j := tt.disk
			j.State = r.st
			res, err := apply.Run(context.Background(), r.plan(t), j, r.auth, apply.Options{
				From: r.camp.Sender, MaxErrors: tt.maxErrors,
				Events: func(e apply.Event) {
					if e.Type == "batch_in_doubt" {
						doubt = append(doubt, e.Reason)
					}
				},
			})
			if !errors.Is(err, apply.ErrStateRefused) || isIncomplete(err) || errors.Is(err, apply.ErrTooManyErrors) != tt.tooMany {
				t.Fatalf("run: %v, want ErrStateRefused", err)
			}
			if res.InDoubt != 10 || res.Failed != tt.failed || res.Skipped != tt.skipped || res.Sent+res.Failed+res.InDoubt+res.Skipped != res.Total {
				t.Errorf("%+v, want 10 in doubt, %d failed, %d skipped", res, tt.failed, tt.skipped)
			}
			if len(doubt) != 1 || !strings.Contains(doubt[0], "simulated") {
				t.Errorf("in-doubt events %q", doubt)
			}
			if got := r.tally(t); got.InDoubt != 10 {
				t.Errorf("state holds %d in doubt, want 10", got.InDoubt)
			}
		})
	}
}

// Prepare gives up after two tries on a base URL where nothing listens (the
// run's first contact: a configuration to fix, not a provider to wait
// for), and at once on refused credentials.
func TestPrepare(t *testing.T) {
	r := newRig(t, sandbox.Config{}, testharness.Campaign{Recipients: 10}, 0)
	var retries int
	o := apply.Options{BackoffBase: 20 * time.Millisecond, BackoffCap: 100 * time.Millisecond, MaxRetries: 100,
		Events: func(e apply.Event) { retries++ }}
	r.srv.Stop()
	err := apply.Prepare(context.Background(), r.auth, o)
	var ae *api.Error
	if !errors.As(err, &ae) || !ae.Unreachable() || retries != 1 {
		t.Fatalf("prepare with nothing listening: %v after %d retries, want unreachable after 1", err, retries)
	}
	r.srv.Resume()
	if err := apply.Prepare(context.Background(), r.auth, o); err != nil {
		t.Fatalf("prepare once the server is back: %v", err)
	}
	if n := r.srv.Stats().TokenRequests; n != 1 {
		t.Errorf("%d token requests answered, want 1", n)
	}

	wrong := newRig(t, sandbox.Config{}, testharness.Campaign{Recipients: 10}, 0)
	wrong.auth.Client.ClientSecret = "not-the-secret"
	err = apply.Prepare(context.Background(), wrong.auth, o)
	if !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("prepare with a wrong secret: %v, want a 401", err)
	}
	// One request per Basic form (auto tries base64, then literal), and no
	// retry: a refusal is final.
	if n := wrong.srv.Stats().TokenRequests; n != 2 {
		t.Errorf("%d token requests with a wrong secret, want 2: one per Basic form, a refusal is not retried", n)
	}
}
