package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/state"
)

// isDir reports whether path is a folder.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// runApplyDir is smsform apply DIR: each saved plan in DIR (plan --out
// DIR), in name order, each as smsform apply PLANFILE, under its own
// campaign's lock. It stops at the first that fails, leaving the rest
// unapplied; a plan that stops because nothing more may be sent now
// (exit 5, a closed send window) or because its campaign is paused (exit 6,
// said at the end) is no failure, and the next is applied.
func runApplyDir(ctx context.Context, env Env, f applyFlags, dir string) error {
	plans, err := filepath.Glob(filepath.Join(dir, "*.plan"))
	if err != nil {
		return err
	}
	if len(plans) == 0 {
		return withHint(fmt.Errorf("%w: %s holds no plan file (*.plan)", ErrUsage, dir), "save plans there with smsform plan --out %s", dir)
	}
	var waiting, paused error
	for i, p := range plans {
		fmt.Fprintf(env.Stderr, "smsform: applying %s (%d of %d)\n", p, i+1, len(plans))
		err := runApply(ctx, env, f, p)
		var closed *apply.ClosedError
		switch {
		case err == nil:
		case errors.As(err, &closed):
			waiting = err
		case errors.Is(err, state.ErrPaused):
			// One campaign paused stops only that one (exit 6 at the end).
			warnf(env, "%s: %v", p, err)
			paused = err
		default:
			if rest := plans[i+1:]; len(rest) > 0 {
				err = withHint(&campaignError{file: p, err: err}, "%s not applied: %s", words.N(len(rest), "plan was", "plans were"), strings.Join(rest, ", "))
			}
			return err
		}
	}
	if paused != nil {
		return paused
	}
	return waiting
}
