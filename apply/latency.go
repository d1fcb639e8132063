package apply

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/state"
)

// How long a request takes is measured on every send the provider took,
// with the durable commit of its intent that precedes it (a worker does
// one, then the other), and the sum of the two medians is recorded in the
// state at the end of a run: later plans of the campaign estimate their
// sending time with it rather than with provider.expected_latency, which
// knows nothing of the state's disk or database.

// maxLatencies is how many of the last answers the median is taken over:
// a provider's pace now, not over a week of runs.
const maxLatencies = 4096

// timedSender measures how long s takes to answer the sends it takes.
type timedSender struct {
	Sender
	took durations
}

func (t *timedSender) Send(ctx context.Context, req api.SendRequest) (api.SendResponse, error) {
	start := time.Now()
	resp, err := t.Sender.Send(ctx, req)
	if err == nil {
		t.took.add(time.Since(start))
	}
	return resp, err
}

// runJournal is the journal of one run: it measures how long the state
// takes to make an intent durable, and names the saved plan being applied
// (planID, "" for none) in every intent, which is what lets a later run of
// the plan see the state as the plan saw it (state.WithoutPlan). Every
// method of [Journal] is written out, not embedded, so that one added to
// it cannot pass by unnamed.
type runJournal struct {
	j      Journal
	planID string
	took   durations
}

func (t *runJournal) AdmitIntent(ctx context.Context, in state.Intent) (state.Admission, error) {
	in.PlanID = t.planID
	start := time.Now()
	adm, err := t.j.AdmitIntent(ctx, in)
	if err == nil {
		t.took.add(time.Since(start))
	}
	return adm, err
}

func (t *runJournal) RecordOutcomeAndAdmit(ctx context.Context, prevBatch string, o state.Outcome, next state.Intent) (state.Admission, error) {
	next.PlanID = t.planID
	start := time.Now()
	adm, err := t.j.RecordOutcomeAndAdmit(ctx, prevBatch, o, next)
	if err == nil {
		t.took.add(time.Since(start))
	}
	return adm, err
}

func (t *runJournal) RecordOutcome(ctx context.Context, batchID string, o state.Outcome) error {
	return t.j.RecordOutcome(ctx, batchID, o)
}

func (t *runJournal) ForgetIntent(ctx context.Context, batchID string) error {
	return t.j.ForgetIntent(ctx, batchID)
}

func (t *runJournal) PausedNow(ctx context.Context) error { return t.j.PausedNow(ctx) }

// durations keeps the last maxLatencies durations measured.
type durations struct {
	mu   sync.Mutex
	took []time.Duration // a ring
	next int
}

func (t *durations) add(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.took) < maxLatencies {
		t.took = append(t.took, d)
		return
	}
	t.took[t.next] = d
	t.next = (t.next + 1) % maxLatencies
}

// median is the median duration measured, and whether any was.
func (t *durations) median() (time.Duration, bool) {
	t.mu.Lock()
	took := slices.Clone(t.took)
	t.mu.Unlock()
	if len(took) == 0 {
		return 0, false
	}
	slices.Sort(took)
	return took[len(took)/2], true
}

// recordLatency keeps the time a request took in the state, for later
// plans: the median answer, and the median commit of an intent; failing
// that is only a warning, since an estimate is all it serves.
func (p *Pending) recordLatency(ctx context.Context, s *timedSender, j *runJournal) {
	d, ok := s.took.median()
	if !ok {
		return
	}
	commit, _ := j.took.median()
	d += commit
	if err := p.st.RecordLatency(context.WithoutCancel(ctx), d); err != nil && p.req.Warn != nil {
		p.req.Warn(fmt.Errorf("could not keep the provider's measured latency for later estimates: %w", err))
	}
}
