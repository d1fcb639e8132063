// Command smsform is Terraform for SMS campaigns: campaigns are YAML files in
// git, `smsform plan` shows what would be sent to whom, and `smsform apply`
// sends it through the messaging API, never messaging anyone twice.
//
// main only wires the process to [cli.Run] and turns the error it returns
// into words on stderr and an exit code of [exitcode]'s table.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/internal/exitcode"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan/planfile"
	"github.com/smsform/smsform/state"
)

func main() {
	os.Exit(run())
}

// gcPercent is the collector's pace unless GOGC says otherwise. A large
// plan's heap is mostly packed numbers and other arrays the collector need
// not scan, so collecting twice as often costs little: measured on 10,000,000
// recipients, peak memory 1,140 -> 896 MB (one body) and 1,864 -> 1,650 MB
// (a body each), wall time unchanged.
const gcPercent = 50

func run() int {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	defer startProfile(os.Getenv)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first SIGINT/SIGTERM cancels ctx: apply starts no new batch and
	// records what is in flight. A second one quits at once.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	var interrupt cli.Interrupt
	go func() {
		sig := <-signals
		// On a terminal the line starts afresh: a progress bar or ^C may
		// be on the current one.
		nl := ""
		if term.IsTerminal(int(os.Stderr.Fd())) {
			nl = "\n"
		}
		// At a prompt nothing is in flight: the command ends at once and
		// says so itself.
		if !interrupt.Prompting() {
			fmt.Fprintf(os.Stderr, "%ssmsform: %s\n", nl, stopping(sig))
		}
		cancel()
		<-signals
		if note := interrupt.Note(); note != "" {
			fmt.Fprintf(os.Stderr, "%ssmsform: quit at once: %s\n", nl, note)
		} else {
			fmt.Fprintf(os.Stderr, "%ssmsform: quit at once\n", nl)
		}
		os.Exit(exitcode.Interrupted)
	}()

	var colourErrors bool
	err := cli.Run(ctx, os.Args[1:], cli.Env{
		Interrupt:    &interrupt,
		ColourErrors: &colourErrors,
		Stdin:        os.Stdin,
		Stdout:       os.Stdout,
		Stderr:       os.Stderr,
		Getenv:       os.Getenv,
		Width: func() int {
			w, _, err := term.GetSize(int(os.Stdout.Fd()))
			if err != nil {
				return 0
			}
			return w
		},
		IsTerminal: func(f any) bool {
			file, ok := f.(*os.File)
			return ok && term.IsTerminal(int(file.Fd()))
		},
	})
	var stderr io.Writer = os.Stderr
	if colourErrors {
		stderr = colourTerminal{os.Stderr}
	}
	return exitCode(err, stderr)
}

// stopping is what the first signal does, in words: SIGTERM is how a
// service manager or a CI runner stops a process (receive, sandbox), no
// interruption.
func stopping(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "stopping (SIGTERM): finishing what is in flight (signal again to quit at once)"
	}
	return "interrupted: finishing what is in flight (interrupt again to quit at once)"
}

// exitCode is the one place that turns an error into words and a code; the
// codes and what they mean are the table of [exitcode].
func exitCode(err error, stderr io.Writer) int {
	var incomplete *apply.IncompleteError
	var closed *apply.ClosedError
	var expired *apply.ExpiredError
	var silent *apply.SilentError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitcode.OK
	case errors.Is(err, cli.ErrPending):
		return exitcode.Pending
	case errors.As(err, &incomplete), errors.As(err, &expired), errors.As(err, &silent):
		report(stderr, err)
		return exitcode.Incomplete
	case errors.As(err, &closed):
		report(stderr, err)
		return exitcode.Closed
	case errors.Is(err, state.ErrLocked):
		report(stderr, err)
		return exitcode.Locked
	case errors.Is(err, state.ErrPaused):
		report(stderr, err)
		return exitcode.Paused
	case errors.Is(err, cli.ErrPromptInterrupted):
		report(stderr, err)
		return exitcode.Interrupted
	case errors.Is(err, apply.ErrInterrupted):
		report(stderr, err)
		return exitcode.Interrupted
	case errors.Is(err, context.Canceled):
		// Cancelled outside the send loop (which says ErrInterrupted):
		// while planning, waiting for a token or for the lock.
		fmt.Fprintln(stderr, "smsform: interrupted before sending anything")
		return exitcode.Interrupted
	}
	report(stderr, err)
	return exitcode.Error
}

// report writes err on stderr as "smsform: error:" lines, each error of a
// joined list followed by its own hints. Errors and hints quote what came
// from outside (paths, names, a provider's words): every line goes through
// words.Visible, so that no escape sequence reaches the terminal raw.
func report(stderr io.Writer, err error) {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			report(stderr, e)
		}
		return
	}
	prefix, hintPrefix := "smsform: error:", "hint:"
	if _, ok := stderr.(colourTerminal); ok {
		prefix, hintPrefix = "\x1b[1;31msmsform: error:\x1b[0m", "\x1b[1mhint:\x1b[0m"
	}
	paths := quotedPaths(err)
	for line := range strings.SplitSeq(paths.Replace(err.Error()), "\n") {
		fmt.Fprintf(stderr, "%s %s\n", prefix, words.Visible(line))
	}
	seen := map[string]bool{}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if h := hint(e); h != "" && !seen[h] {
			seen[h] = true
			fmt.Fprintf(stderr, "%s %s\n", hintPrefix, words.Visible(paths.Replace(h)))
		}
	}
}

// quotedPaths quotes the paths with a line break that err's system errors
// carry (a file or folder named so), wherever a message repeats them:
// report splits messages at line breaks, and such a name would otherwise
// show as two lines of error.
func quotedPaths(err error) *strings.Replacer {
	var pairs []string
	add := func(path string) {
		if strings.ContainsAny(path, "\n\r") {
			pairs = append(pairs, path, campaign.Quote(path))
		}
	}
	var walk func(error)
	walk = func(e error) {
		switch e := e.(type) {
		case nil:
			return
		case *fs.PathError:
			add(e.Path)
		case *os.LinkError:
			add(e.Old)
			add(e.New)
		case *planfile.WriteFolderError:
			add(e.Dir)
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return strings.NewReplacer(pairs...)
}

// colourTerminal is stderr when it is a terminal that may show colour:
// not with NO_COLOR set, --no-color given, or in automation.
type colourTerminal struct{ io.Writer }

// hint is what err itself says to do next, if anything.
func hint(err error) string {
	switch e := err.(type) {
	case *cli.HintError:
		return e.Hint
	case *campaign.Error:
		return e.Hint
	}
	var h interface{ Hint() string } // a library error that knows (plan.SpillError)
	if errors.As(err, &h) {
		return h.Hint()
	}
	return ""
}
