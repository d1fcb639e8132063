package cli

import (
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/plan"
)

// applyProgress shows the run of p as the command line asks: JSON events
// with --json, a bar on a terminal outside automation, else lines for
// logs. The bar counts what this run may send (with send windows, what is
// open now, or with --wait what opens before the campaign ends), and the
// run says first how many wait for their window.
func applyProgress(env Env, p *plan.Plan, jsonOut, wait, showNumbers bool, limit int) *report.Progress {
	if p.Schedule == nil && p.Timed() {
		// A saved plan is not scheduled by apply.Start: it is here, as at
		// the run's start, for its counts alone (an error leaves them
		// as plan counted them).
		_ = p.ScheduleAt(env.Clock.Now())
	}
	run, waiting, next := report.Sendable(p, wait)
	if limit > 0 && limit < run {
		run = limit // apply --limit: this run sends no more
	}
	return report.NewProgress(env.Stdout, env.Stderr, report.ProgressOptions{JSON: jsonOut, Total: run,
		Waiting: waiting, NextOpen: next, Wait: wait, ShowNumbers: showNumbers, Now: env.Clock.Now,
		Bar: !inAutomation(env) && env.IsTerminal(env.Stderr)})
}
