package state

import (
	"context"
	"errors"
	"fmt"
)

// ErrPlanApplied is returned by MarkPlanApplied for a plan already applied.
var ErrPlanApplied = errors.New("plan was already applied")

// MarkPlanApplied durably records that the saved plan with this id is being
// applied, or returns ErrPlanApplied if it was before. A saved plan is
// applied at most once. Marking bumps the serial, so check a plan's serial
// before marking it.
func (s *State) MarkPlanApplied(ctx context.Context, planID string) error {
	if planID == "" {
		return errors.New("mark plan applied: empty plan id")
	}
	if s.w == nil {
		return ErrClosed
	}
	err := s.w.do(ctx, func(t *txn) error {
		var n int
		if err := t.queryRow("planApplied", t.w.s.args(planID)...).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return refusal{ErrPlanApplied}
		}
		if _, err := t.exec("insertPlan", t.w.s.args(planID, t.now)...); err != nil {
			return err
		}
		t.changed = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark plan %s applied: %w", planID, err)
	}
	return nil
}

// PlanApplied reports whether the saved plan with this id was applied, so a
// second apply of one plan file can say so before any other check.
func (s *State) PlanApplied(ctx context.Context, planID string) (bool, error) {
	if s.db == nil {
		return false, nil
	}
	var n int
	if err := s.db.QueryRowContext(ctx, s.q.planApplied, s.args(planID)...).Scan(&n); err != nil {
		return false, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return n > 0, nil
}
