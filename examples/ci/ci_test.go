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

func TestGitHubWorkflowsPassActionlint(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("github-actions", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"plan.yml", "apply.yml"} {
		if !slices.Contains(files, filepath.Join("github-actions", want)) {
			t.Errorf("github-actions/%s is missing (found %v)", want, files)
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			content, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
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

// The properties the recipes promise, beyond what actionlint can know.
func TestGitHubWorkflowsPromises(t *testing.T) {
	type job struct {
		Permissions map[string]string `yaml:"permissions"`
		Concurrency struct {
			Group            string `yaml:"group"`
			CancelInProgress bool   `yaml:"cancel-in-progress"`
		} `yaml:"concurrency"`
		Strategy struct {
			FailFast *bool `yaml:"fail-fast"`
		} `yaml:"strategy"`
		Steps []struct {
			ID   string            `yaml:"id"`
			If   string            `yaml:"if"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
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
	load := func(name string) workflow {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("github-actions", name))
		if err != nil {
			t.Fatal(err)
		}
		var w workflow
		if err := yaml.Unmarshal(b, &w); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return w
	}

	t.Run("plan", func(t *testing.T) {
		w := load("plan.yml")
		if got := w.Permissions; len(got) != 1 || got["contents"] != "read" {
			t.Errorf("workflow permissions = %v, want contents: read only", got)
		}
		p := w.Jobs["plan"]
		if p.Permissions["pull-requests"] != "write" || len(p.Permissions) != 2 {
			t.Errorf("plan job permissions = %v, want contents: read, pull-requests: write", p.Permissions)
		}
		var planned, uploaded bool
		for _, s := range p.Steps {
			if strings.Contains(s.Run, "smsform plan") && strings.Contains(s.Run, "--format markdown") &&
				strings.Contains(s.Run, "--out") {
				planned = true
				if s.Env["SMSFORM_STATE"] != "${{ secrets.SMSFORM_STATE_READONLY }}" {
					t.Errorf("plan step env SMSFORM_STATE = %q, want the read-only state URL from secrets", s.Env["SMSFORM_STATE"])
				}
			}
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
				uploaded = true
				if d := s.With["retention-days"]; d == "" || len(d) > 1 {
					t.Errorf("plan artifact retention-days = %q, want a short one (plan files are personal data)", d)
				}
			}
		}
		if !planned || !uploaded {
			t.Errorf("plan job: planned=%v uploaded=%v, want both", planned, uploaded)
		}
	})

	t.Run("apply", func(t *testing.T) {
		w := load("apply.yml")
		a := w.Jobs["apply"]
		if a.Concurrency.Group != "smsform-apply-${{ matrix.campaign }}" || a.Concurrency.CancelInProgress {
			t.Errorf("apply concurrency = %+v, want one group per campaign, never cancel-in-progress", a.Concurrency)
		}
		if a.Strategy.FailFast == nil || *a.Strategy.FailFast {
			t.Error("apply matrix must set fail-fast: false (a failure must not cancel another campaign's send)")
		}
		if a.Permissions["contents"] != "read" {
			t.Errorf("apply job contents permission = %q, want read: nothing is committed", a.Permissions["contents"])
		}
		applied := false
		for _, s := range a.Steps {
			if s.ID == "apply" {
				applied = true
				if !strings.Contains(s.Run, "smsform apply") {
					t.Error(`the step with id "apply" does not run smsform apply`)
				}
				for _, k := range []string{"SMSFORM_CLIENT_ID", "SMSFORM_CLIENT_SECRET", "SMSFORM_BASE_URL", "SMSFORM_STATE"} {
					if s.Env[k] != "${{ secrets."+k+" }}" {
						t.Errorf("apply step env %s = %q, want it from secrets", k, s.Env[k])
					}
				}
			}
			// The state is in PostgreSQL: numbers never go to git.
			if strings.Contains(s.Run, "git push") || strings.Contains(s.Run, "git commit") || strings.Contains(s.Run, ".smsstate") {
				t.Errorf("step %q commits to git or touches a state file", s.Run)
			}
		}
		if !applied {
			t.Error(`no step with id "apply"`)
		}
		// Scheduled runs apply campaigns until done: exit 5 (waiting for a
		// send window) is not a failure there.
		if len(w.On.Schedule) == 0 || w.On.Schedule[0].Cron == "" {
			t.Error("apply.yml has no schedule trigger for campaigns with send windows")
		}
		var exitStep string
		for _, s := range a.Steps {
			if strings.Contains(s.Run, `case "$RC" in`) {
				exitStep = s.Run
			}
		}
		five := regexp.MustCompile(`(?m)^\s*5\)`).FindStringIndex(exitStep)
		if five == nil {
			t.Fatal("the exit code step does not handle 5")
		}
		if rest := exitStep[five[0]:]; strings.Contains(rest[:strings.Index(rest, ";;")], "exit 5") {
			t.Error("the exit code step fails the job on 5; a closed send window is not a failure")
		}
	})
}

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
	type job struct {
		Stage         string         `yaml:"stage"`
		ResourceGroup string         `yaml:"resource_group"`
		Rules         []rule         `yaml:"rules"`
		Artifacts     map[string]any `yaml:"artifacts"`
		Script        []yaml.Node    `yaml:"script"`
		AfterScript   []yaml.Node    `yaml:"after_script"`
	}
	jobs := map[string]job{}
	hidden := map[string]job{} // ".name": templates pulled in with !reference
	var stages []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i].Value, root.Content[i+1]
		switch {
		case key == "stages":
			if err := val.Decode(&stages); err != nil {
				t.Fatalf("stages: %v", err)
			}
		case val.Kind == yaml.MappingNode:
			var j job
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
	for _, want := range []string{"smsform apply", "--auto-approve", "--lock-timeout", `[ "$rc" != 5 ]`} {
		if !strings.Contains(ss, want) {
			t.Errorf("smsform-scheduled script lacks %q", want)
		}
	}
	if !strings.Contains(script(applyJob.Script), `[ "$rc" != 5 ]`) {
		t.Error("smsform-apply fails the job on 5; a closed send window is not a failure")
	}
	for name, j := range map[string]job{"smsform-plan": planJob, "smsform-apply": applyJob} {
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
	for _, want := range []string{"smsform plan", "--format markdown", "--out", "/notes", "<!-- smsform-plan:"} {
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
	if !strings.Contains(ps, `export SMSFORM_STATE="${SMSFORM_STATE_READONLY:-}"`) {
		t.Error("smsform-plan must read the state with the read-only URL")
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

func anyRule[R any](rules []R, f func(R) bool) bool { return slices.ContainsFunc(rules, f) }

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
