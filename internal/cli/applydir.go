package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan/planfile"
	"github.com/smsform/smsform/state"
)

// isDir reports whether path is a folder.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// runApplyDir is smsform apply DIR: the saved plans that plan --out DIR/
// wrote and listed in DIR's manifest, checked first (see reviewedPlans),
// then each, in name order, as smsform apply PLANFILE, under its own
// campaign's lock. It stops at the first that fails, leaving the rest
// unapplied; a plan that stops because nothing more may be sent now (exit
// 5, a closed send window, the frequency cap) or because its campaign is
// paused (exit 6, which wins) is no failure: it says why, as apply of that
// plan alone would, and the next is applied. A plan the state records as
// applied whole is passed over, saying so: the folder applied again (a CI
// job run again after such a stop) carries on with the plans that stopped.
func runApplyDir(ctx context.Context, env Env, f applyFlags, dir string) error {
	plans, err := reviewedPlans(ctx, dir)
	if err != nil {
		return err
	}
	var stopped []string
	var paused, waiting error
	before := 0 // plans applied whole before
	for i, p := range plans {
		fmt.Fprintf(env.Stderr, "smsform: applying %s (%d of %d)\n", p, i+1, len(plans))
		err := runApply(ctx, env, f, p)
		var closed *apply.ClosedError
		switch {
		case err == nil:
			continue
		case errors.Is(err, state.ErrPlanApplied):
			fmt.Fprintf(env.Stderr, "smsform: %s was applied whole before: passed over\n", p)
			before++
			continue
		case errors.As(err, &closed):
			waiting = closed
		case errors.Is(err, state.ErrPaused):
			paused = pauseOf(err)
		default:
			if rest := plans[i+1:]; len(rest) > 0 {
				err = withHint(&campaignError{file: p, err: err}, "%s not applied: %s", words.N(len(rest), "plan was", "plans were"), strings.Join(rest, ", "))
			}
			return err
		}
		// Said now, where the plan's output is, rather than once at the
		// end for the last one.
		sayStopped(env, p, err)
		stopped = append(stopped, p)
	}
	if before == len(plans) {
		fmt.Fprintf(env.Stderr, "smsform: every plan of %s was applied whole before: nothing was sent\n", dir)
	}
	return dirStopped(len(plans), stopped, paused, waiting)
}

// pauseOf is the pause that stopped a plan, without the hints its error
// carries (they were said with it).
func pauseOf(err error) error {
	var p *state.PausedError
	if errors.As(err, &p) {
		return p
	}
	return state.ErrPaused
}

// sayStopped writes why plan stopped, in the words smsform apply of that
// plan alone ends with: its error, then its hints.
func sayStopped(env Env, plan string, err error) {
	for line := range strings.SplitSeq(err.Error(), "\n") {
		fmt.Fprintf(env.Stderr, "smsform: %s: %s\n", plan, line)
	}
	for _, h := range hintsOf(err) {
		fmt.Fprintf(env.Stderr, "hint: %s\n", h)
	}
}

// hintsOf is the hints an error carries, outermost first, each once.
func hintsOf(err error) []string {
	var hints []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		if h, ok := e.(*HintError); ok && h.Hint != "" && !slices.Contains(hints, h.Hint) {
			hints = append(hints, h.Hint)
		}
	}
	return hints
}

// stoppedError ends an apply DIR whose plans stopped without failing: each
// said why as it stopped, so this only sums up, and carries what decides
// the exit code (a pause, else a closed window), without hints.
type stoppedError struct {
	msg   string
	cause error
}

func (e *stoppedError) Error() string { return e.msg }
func (e *stoppedError) Unwrap() error { return e.cause }

// dirStopped is what apply DIR of n plans returns once every plan was
// applied or stopped: nil when none stopped.
func dirStopped(n int, stopped []string, paused, waiting error) error {
	if len(stopped) == 0 {
		return nil
	}
	cause := waiting
	if paused != nil {
		cause = paused // a person's decision: the plans are kept (exit 6)
	}
	return &stoppedError{cause: cause,
		msg: fmt.Sprintf("%s of %d stopped before the end, as said above: %s", words.N(len(stopped), "plan", "plans"), n, strings.Join(stopped, ", "))}
}

// reviewedPlans is the plan files of dir that apply DIR applies, in name
// order: those plan --out DIR/ listed in the folder's manifest. It refuses
// the folder, before anything is asked of the API or the state, when a
// plan listed is missing or changed (another SHA-256), a plan file is
// there that the manifest does not list, or a plan's campaign is not one
// of its project's campaigns (campaigns: in smsform.yaml).
func reviewedPlans(ctx context.Context, dir string) ([]string, error) {
	m, err := planfile.ReadManifest(dir)
	if err != nil {
		return nil, manifestError(dir, err)
	}
	if err := m.Check(ctx, dir); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, withHint(err, "nothing was sent or recorded: apply %s sends exactly the plans smsform plan --out %s wrote and listed in %s, which are what the review saw; remove a plan file nobody meant to send, or make the plans again (smsform plan --out %s) and have them reviewed",
			dir, slashed(dir), planfile.ManifestName, slashed(dir))
	}
	if len(m.Plans) == 0 {
		return nil, withHint(fmt.Errorf("%w: %s lists no plan: the plan that wrote it saved none", ErrUsage, filepath.Join(dir, planfile.ManifestName)),
			"save plans there with smsform plan --out %s", slashed(dir))
	}
	plans := make([]string, len(m.Plans))
	for i, p := range m.Plans {
		plans[i] = filepath.Join(dir, p.File)
		if err := planOfProject(ctx, plans[i]); err != nil {
			return nil, err
		}
	}
	return plans, nil
}

// manifestError words a folder's manifest that could not be read.
func manifestError(dir string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return withHint(err, "nothing was sent or recorded; make the plans again with smsform plan --out %s and have them reviewed", slashed(dir))
	}
	if there, _ := filepath.Glob(filepath.Join(dir, "*.plan")); len(there) == 0 {
		return withHint(fmt.Errorf("%w: %s holds no plan file (*.plan)", ErrUsage, dir), "save plans there with smsform plan --out %s", slashed(dir))
	}
	return withHint(fmt.Errorf("%s holds no %s: apply %s applies only the plans that smsform plan --out %s listed there, and nothing was sent or recorded", dir, planfile.ManifestName, dir, slashed(dir)),
		"make the plans with smsform plan --out %s (it writes the list) and have them reviewed, or apply one plan file: smsform apply %s", slashed(dir), filepath.Join(dir, "NAME.plan"))
}

// slashed is dir as --out takes a folder: with a trailing slash.
func slashed(dir string) string {
	if outIsDir(dir) {
		return dir
	}
	return dir + "/"
}

// planOfProject refuses a saved plan whose campaign is not one of its
// project's campaigns.
func planOfProject(ctx context.Context, planPath string) error {
	saved, err := planfile.OpenHeader(ctx, planPath)
	if err != nil {
		return withHint(err, "nothing was sent or recorded; make the plans again with smsform plan --out %s and have them reviewed", slashed(filepath.Dir(planPath)))
	}
	defer saved.Close()
	if err := projectCampaign(saved.CampaignPath); err != nil {
		return withHint(&campaignError{file: planPath, err: err},
			"nothing was sent or recorded: a folder of plans sends only the campaigns its project lists; remove that plan file if nobody meant to send it, or add its campaign to campaigns: in %s and plan again", campaign.ProjectFile)
	}
	return nil
}

// projectCampaign refuses a campaign file that its project's campaigns:
// globs do not find. A campaign outside any project has no such list.
func projectCampaign(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	proj, err := campaign.ProjectOfFile(path)
	if err != nil || proj == nil {
		return err
	}
	files, err := proj.CampaignFiles()
	if err != nil {
		return err
	}
	for _, f := range files {
		if other, err := os.Stat(f); err == nil && os.SameFile(fi, other) {
			return nil
		}
	}
	return fmt.Errorf("campaign %s is not one of the project's campaigns (campaigns: %s in %s)", path, strings.Join(proj.Campaigns, ", "), proj.Path)
}
