// Package ghaction is the logic of smsform's GitHub Action (action.yml at
// the repository's root). On a pull request, [Run] "plan" plans the
// campaigns it changes, saves one plan file per campaign for the artifact
// the action uploads, and keeps one comment on the pull request up to date
// with the plans; after the merge, "apply" finds the plans reviewed in that
// pull request and applies exactly them (or, with campaigns named, applies
// those campaign files, for scheduled runs).
//
// It runs smsform as a program, the one the action built from its own ref,
// and reaches GitHub only through GITHUB_API_URL: its tests run it against
// a fake GitHub and the sandbox. Inputs come from the environment
// (INPUT_CAMPAIGNS, INPUT_STATE), which action.yml fills through env:, never
// by pasting them into a script.
package ghaction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/state"
)

// Env is what a run may touch besides the files of the work tree.
type Env struct {
	Getenv         func(string) string
	Environ        []string // smsform's environment, before what Run adds
	Stdout, Stderr io.Writer
	HTTP           *http.Client
	Smsform        string // the smsform program
	Dir            string // the work tree (the repository's checkout)
}

// Run runs the action's command, args[0]: plan or apply.
func Run(ctx context.Context, args []string, env Env) error {
	if len(args) != 1 {
		return errors.New("usage: smsform-action plan|apply")
	}
	if env.HTTP == nil {
		env.HTTP = http.DefaultClient
	}
	if env.Smsform == "" {
		env.Smsform = "smsform"
	}
	stateVars, err := stateEnv(env, args[0])
	if err != nil {
		return err
	}
	env.Environ = append(append(env.Environ, "CI=true", "SMSFORM_IN_AUTOMATION=1"), stateVars...)
	switch args[0] {
	case "plan":
		return runPlan(ctx, env)
	case "apply":
		return runApply(ctx, env)
	}
	return fmt.Errorf("unknown command %q: the action's command is plan or apply", args[0])
}

// stateEnv turns the state input into smsform's environment for command:
// a location (postgres://…, or host=… keywords) becomes SMSFORM_STATE;
// for apply, anything else is the password of the role the project file
// names (PGPASSWORD), the role that applies. Plan reads the state as
// another role, one that may only read it, which the project file does not
// name: its input must be that role's whole location, and a bare value is
// refused rather than tried as the applying role's password (whose refusal
// would lead people to give the pull-request job the applier's password).
// The state in effect must be PostgreSQL: a state file on a runner is gone
// when the job ends, and without its record every later run would take
// everyone for not yet messaged. No error shows the input.
func stateEnv(env Env, command string) ([]string, error) {
	in := strings.TrimSpace(env.Getenv("INPUT_STATE"))
	loc := in
	if !state.IsPostgres(in) {
		proj, err := campaign.ProjectFor(env.Dir)
		if err != nil {
			return nil, err
		}
		loc = ""
		if proj != nil {
			loc = proj.State
		}
	}
	if !state.IsPostgres(loc) {
		return nil, errors.New("the state is not in PostgreSQL: on a CI runner a state file is gone when the job ends, and smsform would take everyone for not yet messaged. " +
			"Name the database in smsform.yaml (state: postgres://ROLE@HOST/DB) and give the state input the whole postgres:// URL " +
			"(for plan, a read-only role's; for apply, the applying role's, or just its password)")
	}
	switch {
	case in == "":
		return nil, nil
	case state.IsPostgres(in):
		return []string{"SMSFORM_STATE=" + in}, nil
	case command == "plan":
		return nil, errors.New("the action's state input for plan is not a postgres:// URL (nor host=… keywords); it is not shown here. " +
			"Plan reads the state as a role that may only read it, which smsform.yaml does not name (it names the role that applies), " +
			"so a bare password cannot be used: put the read-only role's whole URL in the plan job's secret (SMSFORM_STATE_READONLY), " +
			"postgres://ROLE:PASSWORD@HOST/DB naming the database smsform.yaml names; never give plan the applying role's password")
	}
	return []string{"PGPASSWORD=" + in}, nil
}

// smsform runs smsform with args in the work tree, its stderr to the job's
// log, and returns its stdout and exit code; err only when it did not run.
func smsform(ctx context.Context, env Env, args ...string) (stdout string, code int, err error) {
	cmd := exec.CommandContext(ctx, env.Smsform, args...)
	cmd.Dir = env.Dir
	cmd.Env = env.Environ
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = env.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode(), nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("run smsform: %w", err)
	}
	return out.String(), 0, nil
}

// output sets a step output (GITHUB_OUTPUT).
func output(env Env, name, value string) error {
	return appendTo(env.Getenv("GITHUB_OUTPUT"), name+"="+value+"\n")
}

// summary adds markdown to the job's summary page (GITHUB_STEP_SUMMARY).
func summary(env Env, md string) error { return appendTo(env.Getenv("GITHUB_STEP_SUMMARY"), md+"\n") }

func appendTo(path, text string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// planDir is where plan files go: SMSFORM_PLAN_DIR, else under RUNNER_TEMP.
func planDir(env Env) string {
	if d := env.Getenv("SMSFORM_PLAN_DIR"); d != "" {
		return d
	}
	return filepath.Join(env.Getenv("RUNNER_TEMP"), "smsform-plans")
}

// notice writes a workflow command the job's log shows as an annotation.
func notice(env Env, level, msg string) {
	fmt.Fprintf(env.Stdout, "::%s::%s\n", level, strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(msg))
}
