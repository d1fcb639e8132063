package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// ErrStalePlan is returned when a saved plan no longer matches the state.
var ErrStalePlan = errors.New("stale plan: state changed since it was made, plan again")

func runApply(ctx context.Context, args []string, env Env) error {
	fs := newFlags("apply", "apply CAMPAIGN.yaml|PLANFILE [flags]", env)
	stateFlag := fs.String("state", "", "state file (default: next to the campaign, NAME.smsstate)")
	autoApprove := fs.Bool("auto-approve", false, "apply without asking (needed without a terminal, in automation and with --json)")
	jsonOut := fs.Bool("json", false, "print one JSON event per line instead of the plan and progress (with a saved plan or --auto-approve)")
	lockTimeout := fs.Duration("lock-timeout", 0, "wait this long for another apply to release the state (default: fail at once)")
	maxErrors := fs.Int("max-errors", 10, "stop after this many failed or in-doubt batches")
	insecure := fs.Bool("insecure-http", false, "allow a plain-http base URL that is not loopback")
	timeout := fs.Duration("request-timeout", 30*time.Second, "give up waiting for one API answer after this long (the batch is then in doubt)")
	showNumbers := fs.Bool("show-numbers", false, "show phone numbers whole (they are masked by default)")
	pos, err := parse(fs, args, env, 1, 1, "one campaign file or saved plan")
	if err != nil {
		return err
	}
	saved, campaignPath, err := applyTarget(pos[0])
	if err != nil {
		return err
	}
	if saved == nil && !*autoApprove {
		if err := canConfirm(env, *jsonOut, campaignPath); err != nil {
			return err
		}
	}
	c, err := campaign.Load(campaignPath)
	if err != nil {
		return err
	}
	sender, err := connection(c, env, *insecure, *timeout)
	if err != nil {
		return err
	}
	sp := statePath(campaignPath, *stateFlag)
	if saved != nil && *stateFlag == "" && saved.StatePath != "" {
		sp = saved.StatePath
	}
	if saved != nil {
		if err := saved.CheckFiles(); err != nil {
			return withHint(err, "plan again and have the new plan reviewed")
		}
		if _, err := os.Stat(sp); errors.Is(err, os.ErrNotExist) && saved.Plan.State.Lineage != "" {
			return withHint(fmt.Errorf("%w: the plan was made against state %s, which is gone", state.ErrLineage, sp),
				"restore the state file, or plan again")
		}
	}

	st, err := state.Open(ctx, sp, state.Options{Campaign: c.Name, LockTimeout: *lockTimeout})
	if err != nil {
		return err
	}
	defer st.Close()

	out := plan.Output{ShowNumbers: *showNumbers}
	var p *plan.Plan
	if saved != nil {
		if applied, err := st.PlanApplied(ctx, saved.ID); err != nil {
			return err
		} else if applied {
			return withHint(fmt.Errorf("%w: %s", state.ErrPlanApplied, pos[0]), "a saved plan is applied once; plan again to send what is left")
		}
		if err := checkStamp(saved.Plan.State, st); err != nil {
			return err
		}
		p = saved.Plan
	} else {
		if p, err = plan.Compute(ctx, c, st); err != nil {
			return err
		}
		if !*jsonOut {
			if err := plan.WriteTable(env.Stdout, p, out); err != nil {
				return err
			}
		}
		if p.Summary.ToSend > 0 && !*autoApprove {
			if err := confirm(env); err != nil {
				return err
			}
		}
	}
	if p.Summary.ToSend == 0 {
		if *jsonOut {
			newProgress(env, true, 0).nothingToSend()
		} else {
			fmt.Fprintln(env.Stdout, "Nothing to send.")
		}
		return nil
	}

	// The token is had before anything is recorded, so that a credentials
	// mistake stops the run while the state, and a saved plan, are as they
	// were (see markApplied).
	if _, err := sender.Token(ctx); err != nil {
		return tokenRefused(err, saved, pos[0])
	}
	prog := newProgress(env, *jsonOut, p.Summary.ToSend)
	serial := st.Serial()
	res, err := apply.Run(ctx, p, st, sender, apply.Options{
		From:          c.Sender,
		RatePerSecond: c.Rate.PerSecond(),
		Concurrency:   c.Concurrency,
		MaxErrors:     *maxErrors,
		Events:        prog.event,
	})
	prog.done()
	if saved != nil {
		markApplied(ctx, env, st, saved, pos[0], serial)
	}
	if !*jsonOut {
		if werr := writeResult(env.Stdout, res); werr != nil {
			return werr
		}
	}
	if errors.Is(err, apply.ErrStateRefused) {
		return withHint(err, "make room on the disk that holds %s, or make it writable; everything sent so far is recorded, so rerunning apply carries on", sp)
	}
	var incomplete *apply.IncompleteError
	if errors.As(err, &incomplete) && !inAutomation(env) {
		return withHint(err, "see them with smsform state list; after checking with the provider, smsform state resolve --in-doubt --as sent|unsent")
	}
	return err
}

// markApplied records that the saved plan was applied, if this run recorded
// anything; a run that recorded nothing leaves the plan as good as new, so
// that a mistake found before the first send (wrong credentials, say) does
// not use up a reviewed plan.
//
// Marking after the run cannot let a plan be applied twice. The plan holds
// the state's lineage and serial at plan time, apply refuses a plan whose
// serial is not the state's (checkStamp), and every change to the state
// (each intent, outcome, forgotten intent) bumps the serial in the
// transaction that makes the change. So the commit of this run's first
// intent is the instant the plan goes stale for every later apply, marked
// or not:
//
//   - kill -9 before that commit: nothing was recorded, and nothing was
//     sent, since a batch is sent only once its intent is durable. The
//     serial is the plan's, and applying the plan again is right.
//   - kill -9 after it, before the mark: the serial moved, so the plan is
//     refused as stale ("plan again"), never sent twice.
//   - after the mark: refused as already applied. The clearer message is
//     all that plans_applied adds.
//
// Two applies of one plan cannot interleave: the state lock is held from
// state.Open (which reads the serial) to Close, so the second one reads the
// serial, or the mark, that the first one left.
//
// The mark is written even after an interrupt; if it cannot be written, the
// moved serial still refuses the plan, so that is only a warning.
func markApplied(ctx context.Context, env Env, st *state.State, saved *plan.Saved, planFile string, serialBefore int64) {
	if st.Serial() == serialBefore {
		return
	}
	if err := st.MarkPlanApplied(context.WithoutCancel(ctx), saved.ID); err != nil {
		warnf(env, "could not record that %s was applied (%v); it cannot be applied again anyway: the state changed since it was made", planFile, err)
	}
}

// tokenRefused is the error for a token that could not be had before the
// run, when nothing was sent or recorded.
func tokenRefused(err error, saved *plan.Saved, planFile string) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	again := "nothing was sent or recorded; run apply again once fixed"
	if saved != nil {
		again = fmt.Sprintf("nothing was sent or recorded, so the plan is not used up: once fixed, run smsform apply %s again", planFile)
	}
	var ae *api.Error
	switch {
	case errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != 429:
		return withHint(err, "the API refused the client credentials: check %s and %s, and the base URL; %s", envClientID, envClientSecret, again)
	case errors.As(err, &ae):
		return withHint(err, "the API could not issue a token now; %s", again)
	}
	return withHint(err, "%s", again)
}

// canConfirm refuses an apply that cannot show the plan and ask for "yes":
// in automation, without a terminal, and with --json, whose output is for a
// program: a person would be asked about a plan they were not shown.
func canConfirm(env Env, jsonOut bool, campaignPath string) error {
	var why string
	switch {
	case jsonOut:
		why = "--json shows no plan to confirm"
	case inAutomation(env):
		why = "automation mode (CI=true or SMSFORM_IN_AUTOMATION=1) never asks"
	case !env.IsTerminal(env.Stdin):
		why = "no terminal to ask on"
	default:
		return nil
	}
	return withHint(fmt.Errorf("refusing to apply without confirmation: %s", why),
		"pass --auto-approve, or review a saved plan and apply that: smsform plan %s --out PLANFILE, then smsform apply PLANFILE", campaignPath)
}

// applyTarget tells a saved plan from a campaign file: plans are gzip,
// campaigns are YAML.
func applyTarget(path string) (*plan.Saved, string, error) {
	if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") {
		return nil, path, nil
	}
	saved, err := plan.Load(path)
	if err != nil {
		return nil, "", withHint(err, "apply takes a campaign file (.yaml) or a plan saved with smsform plan --out")
	}
	return saved, saved.CampaignPath, nil
}

// checkStamp refuses a saved plan made against another state, or against
// this state before it changed.
func checkStamp(s plan.StateStamp, st *state.State) error {
	switch {
	case s.Lineage == "" && st.Serial() == 0:
		return nil // planned before any state existed, and none was written since
	case s.Lineage != "" && s.Lineage != st.Lineage():
		return withHint(fmt.Errorf("%w: the plan was made against state lineage %s, this state is %s", state.ErrLineage, s.Lineage, st.Lineage()),
			"apply the plan with the state it was made against (--state), or plan again")
	case s.Serial != st.Serial():
		return withHint(ErrStalePlan, "run smsform plan again and have the new plan reviewed")
	}
	return nil
}

// confirm asks for "yes" on the terminal (runApply has made sure there is one).
func confirm(env Env) error {
	fmt.Fprint(env.Stderr, "\nDo you want to send these messages? Only 'yes' will be accepted: ")
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return errors.New("apply cancelled: no answer")
	}
	if strings.TrimSpace(line) != "yes" {
		return errors.New("apply cancelled")
	}
	return nil
}
