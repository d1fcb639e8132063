// Package cli is smsform's command line: it parses arguments, wires the
// packages together for each command and writes what a person or a CI job
// reads. It never decides exit codes: [Run] returns errors, and main maps
// them to codes in one place.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/words"
)

// Env is everything a command may touch of the outside world besides files
// and the network.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// IsTerminal reports whether f is an interactive terminal.
	IsTerminal func(f any) bool
	// Width is stdout's terminal width, 0 when it is not a terminal.
	Width func() int
	// Clock is the time send windows are judged by, and what apply --wait
	// sleeps on; nil is the system clock. Tests set one they control.
	Clock apply.Clock
	// Interrupt, when set, learns what quitting at once would leave behind.
	Interrupt *Interrupt
	// ColourErrors, when set, learns whether Run's error may be written in
	// colour on Stderr, by the flags as Run parsed them (--no-color): the
	// one parse of the command line.
	ColourErrors *bool

	noColor *bool // --no-color, as parsed
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

// Run runs the command in args (without the program name).
func Run(ctx context.Context, args []string, env Env) error {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.IsTerminal == nil {
		env.IsTerminal = func(any) bool { return false }
	}
	if env.Clock == nil {
		env.Clock = apply.SystemClock()
	}
	env.noColor = new(bool)
	if env.ColourErrors != nil {
		defer func() { *env.ColourErrors = colour(env, env.Stderr) }()
	}
	root := newRootCmd(env)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// newRootCmd is the command tree. Cobra parses; errors go back to main
// unprinted (SilenceErrors), so that one place words them and picks the exit
// code.
func newRootCmd(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "smsform",
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          unknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if v, _ := cmd.Flags().GetBool("version"); v {
				return writeVersion(env.Stdout, false)
			}
			cmd.SetOut(env.Stderr)
			cmd.Usage()
			return withHint(fmt.Errorf("%w: no command given", ErrUsage), "run smsform plan CAMPAIGN.yaml to see what a campaign would send")
		},
	}
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.Flags().BoolP("version", "v", false, "print the version")
	// Colour is for terminals only; the flag is accepted everywhere, before
	// or after a command, so scripts can pass it without knowing where.
	if env.noColor == nil {
		env.noColor = new(bool)
	}
	root.PersistentFlags().BoolVar(env.noColor, "no-color", false, "no colour in the output")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newValidateCmd(env), newPlanCmd(env), newShowCmd(env), newApplyCmd(env), newTokenCmd(env),
		newStateCmd(env), newSandboxCmd(env), newVersionCmd(env), newOptOutCmd(env))
	root.AddCommand(newInitCmd(env))
	root.AddCommand(newPauseCmd(env), newResumeCmd(env), newTestCmd(env))
	root.AddCommand(newReceiveCmd(env), newReportsCmd(env))
	root.AddCommand(newManCmd(env, root))
	root.SetHelpCommand(newHelpCmd(root))
	document(root)
	return root
}

// positional checks the number of arguments a command takes.
func positional(minPos, maxPos int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < minPos || len(args) > maxPos {
			return withHint(fmt.Errorf("%w: %s takes %s", ErrUsage, cmd.CommandPath(), what), "run %s --help", cmd.CommandPath())
		}
		return nil
	}
}

// unknownCommand refuses an argument where a command was expected, with the
// nearest command as a suggestion.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	err := fmt.Errorf("%w: unknown command %q for %s", ErrUsage, args[0], cmd.CommandPath())
	var names []string
	for _, sub := range cmd.Commands() {
		names = append(names, sub.Name())
	}
	if best := nearest(args[0], names); best != "" {
		return withHint(err, "did you mean %s %s?", cmd.CommandPath(), best)
	}
	return withHint(err, "run %s --help to see the commands", cmd.CommandPath())
}

// flagError words a flag mistake as one error line, with the nearest flag
// as a suggestion, or the subcommand a flag belongs to when it came too early
// ("smsform state --json list").
func flagError(cmd *cobra.Command, err error) error {
	name, unknown := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !unknown {
		return withHint(fmt.Errorf("%w: %s: %v", ErrUsage, cmd.CommandPath(), err), "run %s --help", cmd.CommandPath())
	}
	err = fmt.Errorf("%w: %s: unknown flag --%s", ErrUsage, cmd.CommandPath(), name)
	for _, sub := range cmd.Commands() {
		if sub.Flags().Lookup(name) != nil {
			return withHint(fmt.Errorf("%w: %s: --%s is a flag of %s, so it goes after it", ErrUsage, cmd.CommandPath(), name, sub.Name()),
				"put it after the subcommand, e.g. %s --%s", sub.CommandPath(), name)
		}
	}
	var names []string
	add := func(f *pflag.Flag) { names = append(names, f.Name) }
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	if best := nearest(name, names); best != "" {
		return withHint(err, "did you mean --%s? (run %s --help for every flag)", best, cmd.CommandPath())
	}
	return withHint(err, "run %s --help for every flag", cmd.CommandPath())
}

// nearest is the candidate closest to name by edit distance, if it is close
// enough to be what was meant (at most 2 edits, or a prefix).
func nearest(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		d := editDistance(name, c)
		if strings.HasPrefix(c, name) && d > 2 {
			d = 2
		}
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
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
	return base + stateExt
}

// stateExt ends the name of a state file smsform makes.
const stateExt = ".smsstate"

// inAutomation is true under CI=true or SMSFORM_IN_AUTOMATION=1: no prompt,
// no colour, no progress bar, no "run this next" hints.
func inAutomation(env Env) bool {
	return env.Getenv("CI") == "true" || env.Getenv("SMSFORM_IN_AUTOMATION") == "1"
}

// warnf writes a warning on stderr, each of its lines (a joined error has
// several) after the prefix; what it quotes from outside is made visible
// (words.Visible), never written raw, as main does with errors.
func warnf(env Env, format string, args ...any) {
	for line := range strings.SplitSeq(fmt.Sprintf(format, args...), "\n") {
		fmt.Fprintf(env.Stderr, "smsform: warning: %s\n", words.Visible(line))
	}
}

// newProgress shows a run as the command line asks: JSON events with
// --json, a bar on a terminal outside automation, else lines for logs.
func newProgress(env Env, jsonOut bool, total int) *report.Progress {
	return report.NewProgress(env.Stdout, env.Stderr, report.ProgressOptions{JSON: jsonOut, Total: total,
		Bar: !inAutomation(env) && env.IsTerminal(env.Stderr)})
}

// colour reports whether output to w may be coloured: a terminal, and not
// NO_COLOR, --no-color or automation.
func colour(env Env, w any) bool {
	return env.IsTerminal(w) && env.Getenv("NO_COLOR") == "" && !inAutomation(env) && (env.noColor == nil || !*env.noColor)
}
