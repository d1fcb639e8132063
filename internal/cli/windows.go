package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/plan"
)

// This file holds what the commands say about send windows: plan --at,
// and the hints of a run that stopped because nothing more could be sent
// now (report words the waits of apply --wait).

// parseAt reads plan --at: an RFC 3339 time.
func parseAt(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, withHint(fmt.Errorf("%w: --at %q is not an RFC 3339 time", ErrUsage, s),
			"write a date, a time and an offset, e.g. --at 2026-12-01T09:00:00+01:00 or --at 2026-12-01T08:00:00Z")
	}
	return t, nil
}

// noteNothingNow tells the person about to confirm an apply that nothing
// may be sent now, so that a "yes" does not come as a surprise exit 5.
func noteNothingNow(env Env, p *plan.Plan, wait bool) {
	s := p.Schedule
	if s == nil || len(s.Groups) > 0 && s.Groups[0].Reason == window.ReasonNow {
		return
	}
	if wait {
		fmt.Fprintln(env.Stderr, "\nNothing may be sent now (see When above): with --wait, apply waits for the first window to open.")
		return
	}
	fmt.Fprintln(env.Stderr, "\nNothing may be sent now (see When above): apply would stop at once (exit 5) and record nothing; pass --wait to wait for the windows.")
}

// windowError adds to a run's ClosedError or ExpiredError what to do next.
// Like the hints of a finished run, they are left out in automation, where
// a scheduled run carries on by itself.
func (n nextStep) windowError(err error) (error, bool) {
	var closed *apply.ClosedError
	var expired *apply.ExpiredError
	switch {
	case errors.As(err, &closed):
		if inAutomation(n.env) {
			return err, true
		}
		opens := "the window opens"
		if closed.Held > 0 {
			opens = "the window opens or the frequency cap allows"
			if closed.Waiting == 0 {
				opens = "the frequency cap allows"
			}
		}
		switch {
		case n.saved == nil:
			return withHint(err, "nothing was recorded for them: run apply again once %s (a scheduled run does it: see examples/ci), or keep it running with --wait", opens), true
		case !n.recorded:
			return withHint(err, "nothing was recorded, so the plan is not used up: apply it again once %s (smsform apply %s), or with --wait", opens, n.planFile), true
		}
		return withHint(err, "once %s, apply the plan again (smsform apply %s): it sends the recipients it has not attempted yet, as long as nothing else changes the campaign's state meanwhile; apply --wait keeps a run going until then", opens, n.planFile), true
	case errors.As(err, &expired):
		if inAutomation(n.env) {
			return err, true
		}
		if !expired.Ended {
			return withHint(err, "their send window and the hours their rules allow never meet: widen send_window in %s (plan names the rule that narrows it) and plan again", n.campaign), true
		}
		return withHint(err, "not_after ends the campaign: to send them anyway, move not_after later in %s and plan again", n.campaign), true
	}
	return err, false
}
