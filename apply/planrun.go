package apply

import (
	"context"
	"fmt"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// A saved plan is applied once, but possibly in several runs: a run may
// stop before the plan's end (apply --limit, a pause, a closed send window,
// the frequency cap holding recipients back, an interrupt), and the plan
// stays good for the rest as long as every change to the state since it
// was made is its own. Each run that records anything records, at its end,
// the serial it leaves and whether every recipient was attempted
// (state.RecordPlanRun); the next run may go on only
// while the state's serial is still that one. The plan is then checked
// against the state as it saw it (the state without its own attempts:
// state.WithoutPlan), as a first run is, and sends only the batches it has
// not attempted yet.

// earlierRun is what the state records of the saved plan's earlier runs:
// nil when it was never applied.
func earlierRun(ctx context.Context, r Request, st *state.State) (*state.PlanRun, error) {
	run, ok, err := st.PlanRun(ctx, r.Saved.ID)
	if err != nil || !ok {
		return nil, err
	}
	return &run, nil
}

// asPlanSaw is st as the saved plan saw it: without its own attempts once
// an earlier run of it recorded some.
func asPlanSaw(st *state.State, r Request, run *state.PlanRun) *state.State {
	if run == nil {
		return st
	}
	return st.WithoutPlan(r.Saved.ID)
}

// unattempted is p without what earlier runs of it attempted: a recipient
// the state records (sent, failed, in doubt, suppressed) is left out of its
// batch, and a batch left with nobody is dropped. The others keep their id
// and their place in the plan's order. Recipients whose batch the API did
// not act on have no record: they are sent again.
func unattempted(ctx context.Context, p *plan.Plan, st *state.State) (*plan.Plan, error) {
	recorded := e164.NewMap[struct{}](0)
	err := st.EachRecipient(ctx, func(r state.Recipient) error {
		recorded.Ref(r.Phone)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rest := *p
	stream := remaining{p: p, recorded: recorded}
	rest.Stream, rest.Batches = stream, nil
	rest.Summary.ToSend, rest.Summary.Batches, rest.Summary.Segments = 0, 0, 0
	err = stream.Each(func(_ int, b plan.Batch) error {
		rest.Summary.ToSend += len(b.Recipients)
		rest.Summary.Batches++
		rest.Summary.Segments += b.TotalSegments()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the plan's batches: %w", err)
	}
	rest.Summary.AlreadySent += p.Summary.ToSend - rest.Summary.ToSend
	return &rest, nil
}

// remaining walks a plan's batches without the recipients recorded.
type remaining struct {
	p        *plan.Plan
	recorded *e164.Map[struct{}]
}

func (s remaining) Each(fn func(i int, b plan.Batch) error) error {
	i := 0
	return s.p.EachBatch(func(_ int, b plan.Batch) error {
		var left []string
		for k, phone := range b.Recipients {
			if _, done := s.recorded.Get(phone); !done {
				if left != nil {
					left = append(left, phone)
				}
				continue
			}
			if left == nil {
				left = append(make([]string, 0, len(b.Recipients)), b.Recipients[:k]...)
			}
		}
		if left != nil {
			if len(left) == 0 {
				return nil
			}
			b.Recipients = left
		}
		err := fn(i, b)
		i++
		return err
	})
}

// recordRun records that this run of the saved plan ended: the serial it
// leaves, and whether the plan has nothing left to attempt. Send calls it
// only when the run recorded something: a run that recorded nothing leaves
// the plan as good as new, so that a mistake found before the first send
// (wrong credentials, say) does not use up a reviewed plan.
//
// Recording after the run cannot let a batch go twice. The plan holds the
// state's lineage and serial at plan time, and a later run goes on only
// while the state's serial is the one this record keeps; every change to
// the state (each intent, outcome, forgotten intent) bumps the serial in
// the transaction that makes it. So:
//
//   - kill -9 before the run's first intent commits: nothing was recorded,
//     nor sent, since a batch is sent only once its intent is durable; the
//     serial is the plan's (or the earlier run's record), and applying the
//     plan again is right.
//   - kill -9 after it, before this record: the serial moved past what any
//     record of the plan keeps, so the plan is refused as stale, never
//     sent twice.
//   - after this record: the next run goes on from where this one
//     stopped, or is refused as applied once done.
//
// Two runs of one plan cannot interleave: the state lock is held from
// state.Open to Close. If the record cannot be written, the moved serial
// still refuses the plan, so that is only a warning.
func (p *Pending) recordRun(ctx context.Context, done bool) {
	err := p.st.RecordPlanRun(context.WithoutCancel(ctx), p.req.Saved.ID, done)
	if err != nil && p.req.Warn != nil {
		p.req.Warn(fmt.Errorf("could not record this run of %s (%v): it cannot be applied again, the state changed since it was made: make a new plan for what is left", p.req.PlanFile, err))
	}
}
