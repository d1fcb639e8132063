// Package ci holds the CI recipes for smsform (GitHub Actions and GitLab CI)
// and checks them: actionlint over the GitHub workflows, and the shape of the
// GitLab pipeline.
package ci

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"gopkg.in/yaml.v3"
)

// lint runs actionlint over one workflow's content. Shellcheck and pyflakes
// are left out (empty executables) so the test needs no external binaries;
// the config file is an empty one of our own, so no repository config leaks in.
func lint(t *testing.T, path string, content []byte) []*actionlint.Error {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "actionlint.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{
		Shellcheck: "",
		Pyflakes:   "",
		ConfigFile: cfg,
		LogWriter:  io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint(path, content, nil)
	if err != nil {
		t.Fatalf("actionlint %s: %v", path, err)
	}
	return errs
}

// workflowFiles are the GitHub workflows to check: the recipes here and
// the pair smsform init writes.
func workflowFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{filepath.Join("github-actions", "*.yml"), filepath.Join(initWorkflows, "*.yml")} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, want := range []string{"github-actions/plan.yml", "github-actions/apply.yml", initWorkflows + "/smsform-plan.yml", initWorkflows + "/smsform-apply.yml"} {
		if !slices.Contains(files, filepath.FromSlash(want)) {
			t.Errorf("%s is missing (found %v)", want, files)
		}
	}
	return files
}

// initWorkflows holds the workflows smsform init writes.
const initWorkflows = "../../internal/cli/initfiles/.github/workflows"

func TestGitHubWorkflowsPassActionlint(t *testing.T) {
	for _, f := range workflowFiles(t) {
		t.Run(f, func(t *testing.T) {
			content, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// smsform init pins the action to its own version.
			content = []byte(strings.ReplaceAll(string(content), "@ACTION_REF@", "v0.3.0"))
			for _, e := range lint(t, f, content) {
				t.Errorf("%s:%d:%d: %s [%s]", f, e.Line, e.Column, e.Message, e.Kind)
			}
		})
	}
}

// The check above must be able to fail: a broken workflow is reported.
func TestActionlintCatchesBrokenWorkflow(t *testing.T) {
	broken := `name: broken
on:
  pull_request:
permissions:
  pull-requests: writ
jobs:
  plan:
    runs-on: ubuntu-latest
    concurrency:
      group: smsform-apply-${{ matrix.campaign }}
      cancel-in-progress: maybe
    steps:
      - uses: actions/upload-artifact@v4
        with:
          name: plan
          retention-day: 1
      - run: echo "${{ steps.nope.outputs.rc }}"
`
	errs := lint(t, "broken.yml", []byte(broken))
	if len(errs) == 0 {
		t.Fatal("actionlint reported nothing for a broken workflow")
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"writ", "retention-day", "nope"} {
		if !strings.Contains(all, want) {
			t.Errorf("no error mentions %q; got:\n%s", want, all)
		}
	}
}

// step is a workflow's or a composite action's step.
type step struct {
	ID   string            `yaml:"id"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

type job struct {
	Permissions map[string]string `yaml:"permissions"`
	Concurrency struct {
		Group            string `yaml:"group"`
		CancelInProgress bool   `yaml:"cancel-in-progress"`
	} `yaml:"concurrency"`
	Steps []step `yaml:"steps"`
}

type workflow struct {
	On struct {
		Schedule []struct {
			Cron string `yaml:"cron"`
		} `yaml:"schedule"`
	} `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]job    `yaml:"jobs"`
}

func loadYAML[T any](t *testing.T, path string) T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// actionInputs are action.yml's inputs, and which are required.
func actionInputs(t *testing.T) map[string]bool {
	t.Helper()
	a := loadYAML[struct {
		Inputs map[string]struct {
			Required bool `yaml:"required"`
		} `yaml:"inputs"`
	}](t, "../../action.yml")
	in := map[string]bool{}
	for name, i := range a.Inputs {
		in[name] = i.Required
	}
	return in
}

// actionStep is the step of j that uses smsform's action, checked against
// action.yml's inputs.
func actionStep(t *testing.T, file string, j job) step {
	t.Helper()
	inputs := actionInputs(t)
	for _, s := range j.Steps {
		if !strings.HasPrefix(s.Uses, "smsform/smsform@") {
			continue
		}
		for k := range s.With {
			if _, ok := inputs[k]; !ok {
				t.Errorf("%s: the action has no input %q", file, k)
			}
		}
		for k, required := range inputs {
			if _, given := s.With[k]; required && !given {
				t.Errorf("%s: the action's required input %q is not given", file, k)
			}
		}
		return s
	}
	t.Fatalf("%s: no step uses smsform/smsform@", file)
	return step{}
}

// The properties the recipes promise, beyond what actionlint can know.
func TestGitHubWorkflowsPromises(t *testing.T) {
	for _, pair := range [][2]string{{"github-actions/plan.yml", "github-actions/apply.yml"}, {initWorkflows + "/smsform-plan.yml", initWorkflows + "/smsform-apply.yml"}} {
		t.Run("plan "+pair[0], func(t *testing.T) {
			w := loadYAML[workflow](t, pair[0])
			if got := w.Permissions; len(got) != 1 || got["contents"] != "read" {
				t.Errorf("workflow permissions = %v, want contents: read only", got)
			}
			p := w.Jobs["plan"]
			if p.Permissions["pull-requests"] != "write" || len(p.Permissions) != 2 {
				t.Errorf("plan job permissions = %v, want contents: read, pull-requests: write", p.Permissions)
			}
			if len(p.Steps) == 0 || !strings.HasPrefix(p.Steps[0].Uses, "actions/checkout@") || p.Steps[0].With["fetch-depth"] != "0" {
				t.Error("the plan job must check out the history first (fetch-depth: 0): the changed campaigns are found against the base")
			}
			s := actionStep(t, pair[0], p)
			if s.With["command"] != "plan" || s.With["state"] != "${{ secrets.SMSFORM_STATE_READONLY }}" {
				t.Errorf("plan step with = %v, want command: plan and the read-only state from secrets", s.With)
			}
		})
		t.Run("apply "+pair[1], func(t *testing.T) {
			w := loadYAML[workflow](t, pair[1])
			a := w.Jobs["apply"]
			if a.Concurrency.Group == "" || a.Concurrency.CancelInProgress {
				t.Errorf("apply concurrency = %+v, want a group, never cancel-in-progress", a.Concurrency)
			}
			if a.Permissions["contents"] != "read" || a.Permissions["actions"] != "write" {
				t.Errorf("apply job permissions = %v, want contents: read (nothing committed), actions: write (the plans artifact)", a.Permissions)
			}
			s := actionStep(t, pair[1], a)
			if s.With["command"] != "apply" || s.With["state"] != "${{ secrets.SMSFORM_STATE }}" {
				t.Errorf("apply step with = %v, want command: apply and the state from secrets", s.With)
			}
			for _, k := range []string{"SMSFORM_CLIENT_ID", "SMSFORM_CLIENT_SECRET", "SMSFORM_BASE_URL"} {
				if s.Env[k] != "${{ secrets."+k+" }}" {
					t.Errorf("apply step env %s = %q, want it from secrets", k, s.Env[k])
				}
			}
		})
	}
	// Campaigns with send windows are carried on by a schedule.
	if w := loadYAML[workflow](t, "github-actions/apply.yml"); len(w.On.Schedule) == 0 || w.On.Schedule[0].Cron == "" {
		t.Error("apply.yml has no schedule trigger for campaigns with send windows")
	}
}

// action.yml: a composite action whose scripts get every input through
// env:, never from an expression inside run: (an input holding
// "$(curl evil)" would run), and that builds the smsform of its own ref.
func TestActionTakesInputsThroughEnv(t *testing.T) {
	a := loadYAML[struct {
		Runs struct {
			Using string `yaml:"using"`
			Steps []step `yaml:"steps"`
		} `yaml:"runs"`
	}](t, "../../action.yml")
	if a.Runs.Using != "composite" {
		t.Errorf("runs.using = %q, want composite", a.Runs.Using)
	}
	built, ran := false, false
	for _, s := range a.Runs.Steps {
		if s.Run == "" {
			continue
		}
		if pasted(s) {
			t.Errorf("a run: holds an expression, which is pasted into the script: %q", s.Run)
		}
		built = built || strings.Contains(s.Run, "build.sh") && s.Env["ACTION_REF"] == "${{ github.action_ref }}"
		if strings.Contains(s.Run, "smsform-action") {
			ran = true
			for _, in := range []string{"command", "campaigns", "state"} {
				if s.Env["INPUT_"+strings.ToUpper(in)] != "${{ inputs."+in+" }}" {
					t.Errorf("input %s does not reach smsform-action through env: %v", in, s.Env)
				}
			}
		}
	}
	if !built || !ran {
		t.Errorf("action.yml: built from its own ref = %v, runs smsform-action = %v; want both", built, ran)
	}
	// The check can fail: an input pasted into run: is caught, one given
	// through env: is not.
	if !pasted(step{Run: `smsform-action "${{ inputs.command }}"`}) || pasted(step{Run: `smsform-action "$INPUT_COMMAND"`, Env: map[string]string{"INPUT_COMMAND": "${{ inputs.command }}"}}) {
		t.Error("pasted does not tell an expression in run: from one in env:")
	}
}

// pasted reports whether a step's script holds an expression, which GitHub
// pastes into the script before the shell reads it.
func pasted(s step) bool { return strings.Contains(s.Run, "${{") }

func TestGitLabPipeline(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("gitlab", ".gitlab-ci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf(".gitlab-ci.yml: %v", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		t.Fatal(".gitlab-ci.yml is not a mapping")
	}
	root := doc.Content[0]

	type rule struct {
		If      string `yaml:"if"`
		Changes any    `yaml:"changes"`
		When    string `yaml:"when"`
	}
	type glJob struct {
		Stage         string         `yaml:"stage"`
		ResourceGroup string         `yaml:"resource_group"`
		Rules         []rule         `yaml:"rules"`
		Artifacts     map[string]any `yaml:"artifacts"`
		Script        []yaml.Node    `yaml:"script"`
		AfterScript   []yaml.Node    `yaml:"after_script"`
	}
	jobs := map[string]glJob{}
	hidden := map[string]glJob{} // ".name": templates pulled in with !reference
	var stages []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i].Value, root.Content[i+1]
		switch {
		case key == "stages":
			if err := val.Decode(&stages); err != nil {
				t.Fatalf("stages: %v", err)
			}
		case val.Kind == yaml.MappingNode:
			var j glJob
			if err := val.Decode(&j); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if strings.HasPrefix(key, ".") {
				hidden[key] = j
			} else {
				jobs[key] = j
			}
		}
	}
	// script joins a script's lines, inlining "!reference [.hidden, script]".
	var script func(nodes []yaml.Node) string
	script = func(nodes []yaml.Node) string {
		var s strings.Builder
		for _, n := range nodes {
			if n.Tag == "!reference" {
				if len(n.Content) != 2 || n.Content[1].Value != "script" {
					t.Fatalf("line %d: unexpected !reference", n.Line)
				}
				h, ok := hidden[n.Content[0].Value]
				if !ok {
					t.Fatalf("line %d: !reference to missing %s", n.Line, n.Content[0].Value)
				}
				s.WriteString(script(h.Script))
				continue
			}
			s.WriteString(n.Value + "\n")
		}
		return s.String()
	}

	planJob, ok := jobs["smsform-plan"]
	if !ok {
		t.Fatalf("no smsform-plan job; jobs: %v", keys(jobs))
	}
	applyJob, ok := jobs["smsform-apply"]
	if !ok {
		t.Fatalf("no smsform-apply job; jobs: %v", keys(jobs))
	}
	scheduled, ok := jobs["smsform-scheduled"]
	if !ok {
		t.Fatalf("no smsform-scheduled job; jobs: %v", keys(jobs))
	}
	if scheduled.ResourceGroup != "smsform-apply" || !anyRule(scheduled.Rules, func(r rule) bool {
		return strings.Contains(r.If, `$CI_PIPELINE_SOURCE == "schedule"`)
	}) {
		t.Errorf("smsform-scheduled: resource_group %q, rules %+v; want smsform-apply and schedule pipelines", scheduled.ResourceGroup, scheduled.Rules)
	}
	ss := script(scheduled.Script)
	for _, want := range []string{"smsform apply", "--auto-approve", "--lock-timeout", `[ "$rc" != 5 ]`, `[ "$rc" != 6 ]`} {
		if !strings.Contains(ss, want) {
			t.Errorf("smsform-scheduled script lacks %q", want)
		}
	}
	if !strings.Contains(script(applyJob.Script), `[ "$rc" != 5 ]`) {
		t.Error("smsform-apply fails the job on 5; a closed send window is not a failure")
	}
	if !strings.Contains(script(applyJob.Script), `[ "$rc" != 6 ]`) {
		t.Error("smsform-apply fails the job on 6; a paused campaign is not a failure")
	}
	for name, j := range map[string]glJob{"smsform-plan": planJob, "smsform-apply": applyJob} {
		if !slices.Contains(stages, j.Stage) {
			t.Errorf("%s: stage %q is not in stages %v", name, j.Stage, stages)
		}
		if len(j.Rules) == 0 {
			t.Errorf("%s has no rules", name)
		}
	}

	if !anyRule(planJob.Rules, func(r rule) bool {
		return strings.Contains(r.If, `$CI_PIPELINE_SOURCE == "merge_request_event"`) && r.Changes != nil
	}) {
		t.Errorf("smsform-plan must run on merge requests that change campaigns; rules: %+v", planJob.Rules)
	}
	ps := script(planJob.Script)
	for _, want := range []string{"smsform plan", "--format markdown", "--out", "/notes", "<!-- smsform-plan -->", "--changed-since"} {
		if !strings.Contains(ps, want) {
			t.Errorf("smsform-plan script lacks %q", want)
		}
	}
	exp, _ := planJob.Artifacts["expire_in"].(string)
	if !strings.Contains(exp, "day") && !strings.Contains(exp, "hour") {
		t.Errorf("smsform-plan artifacts expire_in = %q, want a short expiry (plan files are personal data)", exp)
	}

	if applyJob.ResourceGroup != "smsform-apply" {
		t.Errorf("smsform-apply resource_group = %q, want smsform-apply", applyJob.ResourceGroup)
	}
	if !anyRule(applyJob.Rules, func(r rule) bool {
		return strings.Contains(r.If, "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH")
	}) {
		t.Errorf("smsform-apply must run on the default branch; rules: %+v", applyJob.Rules)
	}
	if anyRule(applyJob.Rules, func(r rule) bool { return strings.Contains(r.If, "merge_request_event") }) {
		t.Error("smsform-apply must never run in a merge-request pipeline")
	}
	as := script(applyJob.Script)
	for _, want := range []string{"smsform apply", "state resolve", "--in-doubt --as sent|unsent"} {
		if !strings.Contains(as, want) {
			t.Errorf("smsform-apply script lacks %q", want)
		}
	}
	// The state is in PostgreSQL: numbers never go to git.
	for _, s := range []string{as, ps, script(applyJob.AfterScript)} {
		if strings.Contains(s, "git push") || strings.Contains(s, "git commit") || strings.Contains(s, ".smsstate") {
			t.Error("a job commits to git or touches a state file")
		}
	}
	if !strings.Contains(ps, `export SMSFORM_STATE="$SMSFORM_STATE_READONLY"`) || !strings.Contains(ps, `=~ ^postgres(ql)?://`) {
		t.Error("smsform-plan must read the state with the read-only URL, and refuse a bare password")
	}
	// The note lists the plan files with their digests, as the GitHub
	// action's comment does; the merge applies the folder, as reviewed.
	for _, want := range []string{"plans/plans.manifest.json", ".sha256", "| plan file | campaign | SHA-256 |"} {
		if !strings.Contains(ps, want) {
			t.Errorf("smsform-plan's note lacks the plans' list: no %q", want)
		}
	}
	if !strings.Contains(as, "smsform apply plans/ ") || strings.Contains(as, `smsform apply "$p"`) || strings.Contains(as, "for p in plans/") {
		t.Error("smsform-apply must apply the folder (smsform apply plans/, checked against its manifest), not each plan file in turn")
	}
	if !strings.Contains(as, `"$SMSFORM_STATE" =~ ^postgres(ql)?://`) {
		t.Error("the jobs must refuse an SMSFORM_STATE that is not a URL: smsform would take a bare password for a file name")
	}
	if !strings.Contains(as, `--out plans/`) {
		t.Error("smsform-apply's re-plan must save into the folder (with its manifest) that apply plans/ applies")
	}
	applied := strings.Index(as, "smsform apply")
	if !strings.Contains(as[applied:], "|| rc=$?") {
		t.Error("smsform-apply script must catch apply's exit code to report every campaign")
	}
	for _, secret := range []string{"SMSFORM_CLIENT_ID", "SMSFORM_CLIENT_SECRET", "SMSFORM_BASE_URL", "SMSFORM_STATE"} {
		if strings.Contains(string(b), secret+":") {
			t.Errorf("%s is set in the file; it must come from CI/CD variables", secret)
		}
	}
}

// The two-step rollout: a canary with --limit, then, after a person's
// approval, the rest of the same plan.
func TestRollout(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("github-actions", "rollout.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Jobs map[string]struct {
			Needs       any    `yaml:"needs"`
			Environment string `yaml:"environment"`
			Steps       []struct {
				Run  string            `yaml:"run"`
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	runs := func(job string) string {
		var all strings.Builder
		for _, s := range w.Jobs[job].Steps {
			all.WriteString(s.Run + "\n")
		}
		return all.String()
	}
	canary, rest := runs("canary"), runs("rest")
	if !strings.Contains(canary, `smsform apply "plans/$CAMPAIGN.plan" --limit "$CANARY"`) {
		t.Error("the canary job does not apply its plan with --limit")
	}
	if w.Jobs["rest"].Needs != "canary" || w.Jobs["rest"].Environment == "" {
		t.Errorf("the rest job needs %v in environment %q; want canary, and an environment whose reviewers approve", w.Jobs["rest"].Needs, w.Jobs["rest"].Environment)
	}
	if !strings.Contains(rest, `smsform apply "plans/$CAMPAIGN.plan" --json`) || strings.Contains(rest, "--limit") || strings.Contains(rest, "smsform plan") {
		t.Error("the rest job must apply the canary's plan, whole, without planning again")
	}
	for _, job := range []string{canary, rest} {
		if !regexp.MustCompile(`(?m)^\s*6\) echo`).MatchString(job) {
			t.Error("a rollout job fails on 6: a paused campaign is not a failure")
		}
	}

	g, err := os.ReadFile(filepath.Join("gitlab", ".gitlab-ci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(g, &top); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Needs []string `yaml:"needs"`
		Rules []struct {
			When string `yaml:"when"`
		} `yaml:"rules"`
	}
	node := top["smsform-rollout-rest"]
	if err := node.Decode(&r); err != nil {
		t.Fatalf("smsform-rollout-rest: %v", err)
	}
	if !slices.Equal(r.Needs, []string{"smsform-canary"}) || len(r.Rules) == 0 || r.Rules[0].When != "manual" {
		t.Errorf("smsform-rollout-rest: needs %v, rules %+v; want smsform-canary and a manual job", r.Needs, r.Rules)
	}
	if !strings.Contains(string(g), `smsform apply "plans/$c.plan" --limit "$canary"`) {
		t.Error("smsform-canary does not apply its plan with --limit")
	}
}

func anyRule[R any](rules []R, f func(R) bool) bool { return slices.ContainsFunc(rules, f) }

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
