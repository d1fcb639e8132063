package ghaction

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/smsform/smsform/internal/exitcode"
)

// errPaused says a campaign was paused (smsform pause): no failure, but
// its plans are kept, for once it is resumed.
var errPaused = errors.New("paused")

// runApply applies the plans reviewed in the pull request that was merged
// into this commit; with campaigns named, it applies those campaign files
// as they are (for scheduled runs that carry on campaigns with send
// windows). Exit 5 (nothing more may be sent now) and 6 (the campaign is
// paused: a person's decision) are no failure.
func runApply(ctx context.Context, env Env) error {
	if in := strings.Fields(env.Getenv("INPUT_CAMPAIGNS")); len(in) > 0 {
		for _, c := range in {
			if err := applyOne(ctx, env, c, "--auto-approve"); err != nil && !errors.Is(err, errPaused) {
				return err
			}
		}
		return nil
	}
	g, err := newGitHub(env)
	if err != nil {
		return err
	}
	sha := env.Getenv("GITHUB_SHA")
	pr, err := g.mergedPullRequest(ctx, sha)
	if err != nil {
		return err
	}
	if pr == nil {
		notice(env, "warning", "no merged pull request brought "+sha+": nothing reviewed to apply (campaigns changed by a push straight to the branch are never sent)")
		return nil
	}
	a, err := g.plansArtifact(ctx, pr.Head.SHA)
	if err != nil {
		return err
	}
	if a == nil {
		notice(env, "notice", fmt.Sprintf("pull request #%d left no plans to apply (no campaign to send, or the artifact expired: re-plan it in a new pull request)", pr.Number))
		return nil
	}
	// The same folder as the plan job's: a plan file names its campaign
	// relative to itself, and the checkout sits where it sat there.
	dir := planDir(env)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	names, err := g.download(ctx, a, dir)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	fmt.Fprintf(env.Stdout, "applying the %d plans reviewed in pull request #%d (run %d)\n", len(names), pr.Number, a.WorkflowRun.ID)
	switch err := applyOne(ctx, env, dir); {
	case errors.Is(err, errPaused):
		return nil // kept: once resumed, the plans send what they did not attempt
	case err != nil:
		return err
	}
	// Used up: an applied plan is refused if applied again, and it holds
	// phone numbers. Deleting needs actions: write; without it the
	// artifact expires on its own.
	if err := g.deleteArtifact(ctx, a); err != nil {
		notice(env, "notice", "the applied plans' artifact stays until it expires: "+err.Error())
	}
	return nil
}

// applyOne runs smsform apply on target (a folder of plans or a campaign).
func applyOne(ctx context.Context, env Env, target string, flags ...string) error {
	_, code, err := smsform(ctx, env, append([]string{"apply", target}, flags...)...)
	if err != nil {
		return err
	}
	switch code {
	case exitcode.OK:
		return nil
	case exitcode.Closed:
		notice(env, "notice", "smsform apply "+target+": nothing more may be sent now (send window closed or not_before ahead): a later run sends the rest")
		return nil
	case exitcode.Paused:
		notice(env, "notice", "smsform apply "+target+": the campaign is paused (smsform pause; who, when and why are above): it stopped there, or did not start; once someone runs smsform resume, a later run carries on")
		return errPaused
	case exitcode.Incomplete:
		return fmt.Errorf("smsform apply %s exited 3: some recipients failed or are in doubt: check with the provider, then smsform state resolve", target)
	}
	return fmt.Errorf("smsform apply %s exited %d", target, code)
}
