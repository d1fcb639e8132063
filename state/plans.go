package state

import (
	"context"
	"errors"
)

// ErrPlanApplied is returned by MarkPlanApplied for a plan already applied.
var ErrPlanApplied = errors.New("plan was already applied")

// MarkPlanApplied durably records that the saved plan with this id is being
// applied, or returns ErrPlanApplied if it was before. A saved plan is
// applied at most once.
func (s *State) MarkPlanApplied(ctx context.Context, planID string) error { panic("todo") }
