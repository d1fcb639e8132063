package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// A saved plan is applied once, but possibly in several runs: a run may
// stop before the plan's end (apply --limit, a closed send window, an
// interrupt), and the plan stays good for the rest as long as nothing
// else changed the state. Table plans_applied keeps, per plan, the serial
// its last run left and whether it is done; every attempt names its plan.
// A later run of the plan may go on only when the serial is still that
// one: then every change since the plan was made is the plan's own, and
// the state as the plan saw it is the state without the plan's attempts
// (WithoutPlan), which is what the plan is checked against.

// ErrPlanApplied is returned by MarkPlanApplied for a plan already applied.
var ErrPlanApplied = errors.New("plan was already applied")

// PlanRun is what the state records of a saved plan's runs.
type PlanRun struct {
	Serial int64 // the state's serial when its last run ended
	Done   bool  // every batch of the plan was attempted, nobody in it waiting for a window or held back by the cap
}

// RecordPlanRun durably records that a run of the saved plan with this id
// ended, leaving the state at its present serial; done says the plan has
// nothing left to attempt. It changes nothing of the serial.
func (s *State) RecordPlanRun(ctx context.Context, planID string, done bool) error {
	if planID == "" {
		return errors.New("record plan run: empty plan id")
	}
	if s.w == nil {
		return ErrClosed
	}
	err := s.w.do(context.WithoutCancel(ctx), func(t *txn) error {
		d := 0
		if done {
			d = 1
		}
		_, err := t.exec(qInsertPlan, t.w.s.args(planID, t.now, t.w.s.Serial(), d)...)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the run of plan %s: %w", planID, err)
	}
	return nil
}

// MarkPlanApplied records that the saved plan is done, or returns
// ErrPlanApplied if it was before.
func (s *State) MarkPlanApplied(ctx context.Context, planID string) error {
	if r, ok, err := s.PlanRun(ctx, planID); err != nil {
		return err
	} else if ok && r.Done {
		return fmt.Errorf("mark plan %s applied: %w", planID, ErrPlanApplied)
	}
	return s.RecordPlanRun(ctx, planID, true)
}

// PlanRun is what the state records of the saved plan's runs; ok is false
// when it was never applied.
func (s *State) PlanRun(ctx context.Context, planID string) (r PlanRun, ok bool, err error) {
	if s.db == nil || !s.recorded() {
		return r, false, nil
	}
	var done int
	err = s.db.QueryRowContext(ctx, s.q[qPlanApplied], s.args(planID)...).Scan(&r.Serial, &done)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	r.Done = done != 0
	return r, true, nil
}

// PlanApplied reports whether the saved plan with this id is done, so a
// second apply of one plan file can say so before any other check.
func (s *State) PlanApplied(ctx context.Context, planID string) (bool, error) {
	r, ok, err := s.PlanRun(ctx, planID)
	return ok && r.Done, err
}

// WithoutPlan is a read-only view of s as if the saved plan with this id
// had never run: the state it was made against, when every change since
// is its own (see PlanRun). It lives as long as s; closing it does nothing.
func (s *State) WithoutPlan(planID string) *State {
	v := &State{loc: s.loc, db: s.db, q: s.q, unscoped: s.unscoped, shared: s.shared, schema: s.schema, campaign: s.campaign,
		lineage: s.Lineage(), withoutPlan: planID, now: s.now}
	v.closeOnce.Do(func() {}) // the database is s's to close
	v.id.Store(s.id.Load())
	v.serial.Store(s.Serial())
	return v
}
