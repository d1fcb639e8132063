package ghaction

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// event is what the action reads of the event that started the job.
type event struct {
	PullRequest *struct {
		Number int `json:"number"`
		Base   struct {
			SHA string `json:"sha"`
		} `json:"base"`
		Head struct {
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_request"`
}

func readEvent(env Env) (event, error) {
	var e event
	p := env.Getenv("GITHUB_EVENT_PATH")
	if p == "" {
		return e, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return e, fmt.Errorf("the event: %w", err)
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("the event %s: %w", p, err)
	}
	return e, nil
}

// campaignArgs is what smsform is told to work on: the campaigns input
// (files or folders, one a line or separated by spaces); else, on a pull
// request, the campaigns changed since its base; else the project's.
func campaignArgs(env Env, ev event) []string {
	if in := strings.Fields(env.Getenv("INPUT_CAMPAIGNS")); len(in) > 0 {
		return in
	}
	if ev.PullRequest != nil && ev.PullRequest.Base.SHA != "" {
		return []string{"--changed-since", ev.PullRequest.Base.SHA}
	}
	return nil
}

// runPlan plans, saves the plans for the artifact, writes the comment on
// the pull request and the job summary. It fails the step when a campaign
// does not plan; the comment says why first.
func runPlan(ctx context.Context, env Env) error {
	ev, err := readEvent(env)
	if err != nil {
		return err
	}
	dir := planDir(env)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	args := append([]string{"plan", "--format", "markdown", "--out", dir + "/", "--detailed-exitcode"}, campaignArgs(env, ev)...)
	md, code, err := smsform(ctx, env, args...)
	if err != nil {
		return err
	}
	if code != 0 && code != 2 && !strings.HasPrefix(md, "### smsform plan") {
		// smsform stopped before planning (a usage or git error): its
		// words are in the log.
		return fmt.Errorf("smsform plan exited %d", code)
	}
	section, err := plansSection(dir)
	if err != nil {
		return err
	}
	md += section
	if err := summary(env, md); err != nil {
		return err
	}
	if ev.PullRequest != nil {
		if err := postComment(ctx, env, ev.PullRequest.Number, md); err != nil {
			return err
		}
	}
	saved := code == 2 || code == 0 && hasPlans(dir)
	for _, kv := range [][2]string{{"exit-code", fmt.Sprint(code)}, {"pending", fmt.Sprint(code == 2)}, {"plans", map[bool]string{true: dir}[saved]}} {
		if err := output(env, kv[0], kv[1]); err != nil {
			return err
		}
	}
	if code != 0 && code != 2 {
		return fmt.Errorf("smsform plan exited %d: a campaign does not plan (the comment and the log say why)", code)
	}
	return nil
}

// postComment keeps the pull request's one smsform comment up to date. A pull
// request that changes no campaign gets none, unless it had one (the
// campaigns it changed were changed back).
func postComment(ctx context.Context, env Env, pr int, md string) error {
	g, err := newGitHub(env)
	if err != nil {
		return err
	}
	create := !strings.HasPrefix(md, "### smsform plan: 0 campaigns")
	if run := runLink(env); run != "" {
		md += "\n<sub>" + run + "</sub>\n"
	}
	if len(md)+len(commentMarker)+1 > githubCommentLimit {
		md = "The plan is too long for a comment: see the job summary of " + runLink(env) + ".\n"
	}
	return g.upsertComment(ctx, pr, md, create)
}

// githubCommentLimit is the largest comment GitHub takes, in characters.
const githubCommentLimit = 65536

// runLink names the run that made the comment, and the commit it planned.
func runLink(env Env) string {
	server, repo, id, sha := env.Getenv("GITHUB_SERVER_URL"), env.Getenv("GITHUB_REPOSITORY"), env.Getenv("GITHUB_RUN_ID"), env.Getenv("GITHUB_SHA")
	if server == "" || repo == "" || id == "" {
		return ""
	}
	s := fmt.Sprintf("Planned by [run %s](%s/%s/actions/runs/%s)", id, server, repo, id)
	if len(sha) >= 7 {
		s += " at " + sha[:7]
	}
	return s + "; the plan files are kept 7 days as the run's artifact."
}

func hasPlans(dir string) bool {
	es, err := os.ReadDir(dir)
	return err == nil && len(es) > 0
}
