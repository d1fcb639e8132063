// Package cli is smsform's command line: it parses arguments, wires the
// packages together for each command and writes what a person or a CI job
// reads. It never decides exit codes: [Run] returns errors, and main maps
// them to codes in one place.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Version is smsform's version, set at build time with -ldflags.
var Version = "dev"

// Env is everything a command may touch of the outside world besides files
// and the network.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// IsTerminal reports whether f is an interactive terminal.
	IsTerminal func(f any) bool
}

// ErrPending is returned by plan --detailed-exitcode when there is
// something to send (exit code 2, like terraform plan -detailed-exitcode).
var ErrPending = errors.New("plan has messages to send")

// ErrUsage wraps command-line mistakes.
var ErrUsage = errors.New("usage")

// HintError carries what the user should do next, printed as "hint: ...".
type HintError struct {
	Err  error
	Hint string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

func withHint(err error, format string, args ...any) error {
	return &HintError{Err: err, Hint: fmt.Sprintf(format, args...)}
}

const usage = `smsform: Terraform for SMS campaigns

Usage:
  smsform validate CAMPAIGN.yaml
  smsform plan CAMPAIGN.yaml [--state PATH] [--format table|markdown|json] [--json]
                [--out PLANFILE] [--detailed-exitcode] [--show-numbers]
  smsform show PLANFILE [--format table|markdown|json] [--json] [--show-numbers]
  smsform apply CAMPAIGN.yaml|PLANFILE [--state PATH] [--auto-approve] [--json]
                [--lock-timeout D] [--max-errors N] [--request-timeout D]
                [--insecure-http] [--show-numbers] [--new-state]
  smsform token [CAMPAIGN.yaml] [--insecure-http]
  smsform state list [CAMPAIGN.yaml] [--state PATH] [--json] [--show-numbers]
  smsform state resolve [CAMPAIGN.yaml] [--state PATH] --in-doubt|--failed --as sent|unsent
                [--batch ID] [--lock-timeout D]
  smsform state migrate [CAMPAIGN.yaml] --from STATE --to STATE [--lock-timeout D]
  smsform sandbox [--addr HOST:PORT] [--client-id ID] [--client-secret SECRET]
                [--outbox FILE] [--quiet] [--seed N] [--fail-rate P] [--ambiguous-rate P]
                [--error-rate P] [--rate-limit N] [--latency D] [--token-ttl D]
                [--max-recipients N] [--max-body N]
  smsform version

Every command also takes --no-color (smsform writes no colour), before or
after the command. D is a duration such as 30s or 2m; P a share from 0 to 1.
PATH and STATE are a state file or a postgres:// URL (default: $SMSFORM_STATE,
else the file next to the campaign).
Run "smsform COMMAND --help" for what each flag does.
`

// Run runs the command in args (without the program name).
func Run(ctx context.Context, args []string, env Env) error {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.IsTerminal == nil {
		env.IsTerminal = func(any) bool { return false }
	}
	args, err := skipGlobalFlags(args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return withHint(fmt.Errorf("%w: no command given", ErrUsage), "run smsform plan CAMPAIGN.yaml to see what a campaign would send")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "validate":
		return runValidate(ctx, rest, env)
	case "plan":
		return runPlan(ctx, rest, env)
	case "show":
		return runShow(ctx, rest, env)
	case "apply":
		return runApply(ctx, rest, env)
	case "token":
		return runToken(ctx, rest, env)
	case "state":
		return runState(ctx, rest, env)
	case "sandbox":
		return runSandbox(ctx, rest, env)
	case "version", "--version", "-v":
		fmt.Fprintf(env.Stdout, "smsform %s\n", Version)
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(env.Stdout, usage)
		return nil
	}
	fmt.Fprint(env.Stderr, usage)
	return fmt.Errorf("%w: unknown command %q", ErrUsage, cmd)
}

// parse parses flags that may come before or after the positional
// arguments ("plan c.yaml --json" as well as "plan --json c.yaml") and checks
// the number of positional arguments.
func parse(fs *flag.FlagSet, args []string, env Env, minPos, maxPos int, posName string) ([]string, error) {
	fs.SetOutput(env.Stderr)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %s: %v", ErrUsage, fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < minPos || len(pos) > maxPos {
		return nil, withHint(fmt.Errorf("%w: smsform %s takes %s", ErrUsage, fs.Name(), posName),
			"run smsform %s --help", fs.Name())
	}
	return pos, nil
}

// skipGlobalFlags drops the flags every command takes (--no-color) from the
// front of args, so that they may come before a command or a subcommand
// ("smsform --no-color state list", "smsform state --no-color list").
func skipGlobalFlags(args []string) ([]string, error) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(args[0][1:], "-"), "=")
		if name != "no-color" {
			break
		}
		if _, err := strconv.ParseBool(value); hasValue && err != nil {
			return nil, fmt.Errorf("%w: %s: --no-color takes true or false", ErrUsage, args[0])
		}
		args = args[1:]
	}
	return args, nil
}

// newFlags makes a flag set whose --help prints to stderr and returns
// flag.ErrHelp, which main treats as success.
func newFlags(name, synopsis string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// smsform writes no colour; the flag is accepted everywhere so that
	// scripts can pass it without knowing that.
	fs.Bool("no-color", false, "no colour")
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: smsform %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// statePath is where a campaign's state lives unless --state says otherwise:
// next to the campaign file, spring-sale.yaml -> spring-sale.smsstate.
func statePath(campaignPath, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	base := campaignPath
	for _, ext := range []string{".yaml", ".yml"} {
		if strings.HasSuffix(base, ext) {
			base = strings.TrimSuffix(base, ext)
			break
		}
	}
	return base + ".smsstate"
}

// inAutomation is true under CI=true or SMSFORM_IN_AUTOMATION=1: no prompt,
// no colour, no progress bar, no "run this next" hints.
func inAutomation(env Env) bool {
	return env.Getenv("CI") == "true" || env.Getenv("SMSFORM_IN_AUTOMATION") == "1"
}

func warnf(env Env, format string, args ...any) {
	fmt.Fprintf(env.Stderr, "smsform: warning: "+format+"\n", args...)
}
