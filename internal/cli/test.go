package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/state"
)

// smsform test sends a campaign's messages to the numbers a person names
// (apply.SendTests) and says what became of them (report.WriteTestSends).

// testFlags are smsform test's flags.
type testFlags struct {
	to          []string
	row         string
	state       *pflag.Flag
	lockTimeout time.Duration
	insecure    bool
	timeout     time.Duration
}

func newTestCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "test CAMPAIGN.yaml"}
	var f testFlags
	fs := cmd.Flags()
	fs.StringSliceVar(&f.to, "to", nil, "the numbers to send the test messages to, comma-separated (default: test_recipients in the project file)")
	fs.StringVar(&f.row, "row", "", fmt.Sprintf("send the message of this recipient, FILE:LINE as plan names rows (default: one message per distinct body, up to %d)", apply.MaxTestMessages))
	fs.String("state", "", stateFlagUsage)
	fs.DurationVar(&f.lockTimeout, "lock-timeout", 0, "wait this long for a running apply to release the state (default: fail at once)")
	fs.BoolVar(&f.insecure, "insecure-http", false, "allow a plain-http base URL that is not loopback")
	fs.DurationVar(&f.timeout, "request-timeout", 30*time.Second, "give up waiting for one API answer after this long")
	f.state = fs.Lookup("state")
	cmd.Args = positional(1, 1, "one campaign file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		req, why, err := testRequest(cmd.Context(), env, f, pos[0])
		if err != nil {
			return err
		}
		res, err := apply.SendTests(cmd.Context(), req)
		if res != nil {
			werr := errors.Join(report.WriteTestNotes(env.Stderr, res), report.WriteTestSends(env.Stdout, res, report.Output{}))
			if werr != nil {
				return errors.Join(werr, err)
			}
		}
		if err != nil {
			return why.explain(err)
		}
		return notTaken(res)
	}
	return cmd
}

// testRequest reads the command line into the test send it asks for, and
// what an error of it needs to say what to do.
func testRequest(ctx context.Context, env Env, f testFlags, path string) (apply.TestRequest, testWhy, error) {
	why := testWhy{row: f.row, lockTimeout: f.lockTimeout}
	c, err := campaign.Load(path)
	if err != nil {
		return apply.TestRequest{}, why, err
	}
	why.campaign, why.c = c.Path, c
	numbers, err := testNumbers(env, c, f.to)
	if err != nil {
		return apply.TestRequest{}, why, err
	}
	row, err := parseRow(f.row)
	if err != nil {
		return apply.TestRequest{}, why, err
	}
	client, err := connection(c, env, f.insecure, f.timeout)
	if err != nil {
		return apply.TestRequest{}, why, err
	}
	why.base, why.baseFrom = client.Client.BaseURL, baseURLSource(c, env)
	if why.choice, err = testState(ctx, env, path, c, f.state); err != nil {
		return apply.TestRequest{}, why, err
	}
	return apply.TestRequest{Campaign: c, To: numbers, Row: row, By: actor(env), Client: client, State: why.choice.loc,
		StateOptions: state.Options{LockTimeout: f.lockTimeout, LockWait: sayLockWait(env), RunURL: runURL(env),
			Shared: why.choice.shared, Signs: earlierStateSigns(ctx, why.choice, c.Name)},
		Clock: env.Clock, Events: newProgress(env, false, 0).Event, Warn: func(err error) { warnf(env, "%v", err) }}, why, nil
}

// testNumbers are the numbers a test goes to: --to, else the project's
// test_recipients, each checked as a list's number is (a wrong one is a
// mistake of the command line, or of the project file), and named once.
func testNumbers(env Env, c *campaign.Campaign, to []string) ([]string, error) {
	if len(to) > 0 {
		return normalizeTestNumbers(env, c, to, func(_ int, raw string, err error) error {
			return withHint(fmt.Errorf("%w: --to: %s is not a valid number: %v", ErrUsage, campaign.Quote(e164.MaskInvalid(raw)), err), "%s", testNumberHint)
		})
	}
	p := c.Project
	if p == nil || len(p.TestRecipients) == 0 {
		return nil, withHint(fmt.Errorf("%w: smsform test needs the numbers to send to", ErrUsage),
			"name them: --to +447400123456,+447400123457 (or list them as test_recipients in the project file, %s)", campaign.ProjectFile)
	}
	return normalizeTestNumbers(env, c, p.TestRecipients, func(i int, raw string, err error) error {
		e := &campaign.Error{File: p.Path, Field: fmt.Sprintf("test_recipients[%d]", i), Hint: testNumberHint,
			Msg: fmt.Sprintf("%s is not a valid number: %v", campaign.Quote(e164.MaskInvalid(raw)), err)}
		if i < len(p.TestRecipientLines) {
			e.Line = p.TestRecipientLines[i]
		}
		return e
	})
}

// testNumberHint says how to write a test number.
const testNumberHint = "write it in E.164, with + and the country code, e.g. +447400123456 (or set default_region for national numbers)"

// normalizeTestNumbers reads raw as the campaign reads its lists' numbers,
// each once; invalid words the first invalid one (the i-th).
func normalizeTestNumbers(env Env, c *campaign.Campaign, raw []string, invalid func(i int, raw string, err error) error) ([]string, error) {
	norm := e164.NewNormalizer(c.DefaultRegion)
	var numbers []string
	for i, r := range raw {
		n, err := norm.Normalize(strings.TrimSpace(r))
		if err != nil {
			return nil, invalid(i, r, err)
		}
		if n.FixedLineOnly {
			warnf(env, "%s is a fixed-line number and may not receive SMS", e164.Mask(n.E164))
		}
		if !slices.Contains(numbers, n.E164) {
			numbers = append(numbers, n.E164)
		}
	}
	return numbers, nil
}

// parseRow reads --row FILE:LINE; nil when not given.
func parseRow(spec string) (*apply.Row, error) {
	if spec == "" {
		return nil, nil
	}
	i := strings.LastIndexByte(spec, ':')
	line, err := strconv.Atoi(spec[i+1:])
	if i <= 0 || err != nil || line < 1 {
		return nil, withHint(fmt.Errorf("%w: --row %s is not FILE:LINE", ErrUsage, campaign.Quote(spec)),
			"name a recipient's row as plan does, e.g. --row lists/customers.csv:12")
	}
	return &apply.Row{File: spec[:i], Line: line}, nil
}

// testState is the state a test of the campaign at path records in, as
// apply's: chosen the same way, one ledger, and the project's state
// folder made on first use.
func testState(ctx context.Context, env Env, path string, c *campaign.Campaign, flag *pflag.Flag) (stateChoice, error) {
	choice, err := chooseState(env, path, flag)
	if err != nil {
		return choice, err
	}
	// A test send messages only the numbers it names, whatever an
	// enclosing project's state records of the campaign's recipients: one
	// that cannot be read is said, not a refusal.
	var unchecked *ledger.UncheckedError
	switch err := choice.splitLedger(ctx, path, c.Name); {
	case errors.As(err, &unchecked):
		warnf(env, "%v", err)
	case err != nil:
		return choice, withHint(err, "nothing was sent or recorded: one campaign, one ledger")
	}
	return choice, choice.makeFolder()
}

// testWhy is what the hints of a test's errors name.
type testWhy struct {
	campaign, row  string // the campaign file; --row as given
	c              *campaign.Campaign
	choice         stateChoice
	lockTimeout    time.Duration
	base, baseFrom string // the API's base URL, and where it comes from
}

// explain adds what to do to an error of apply.SendTests.
func (w testWhy) explain(err error) error {
	var noToken *apply.NoTokenError
	var optedOut *apply.OptedOutError
	switch {
	case errors.As(err, &noToken):
		return withHint(err, "nothing was sent or recorded: check %s and %s (or %s), and the base URL %s (from %s)",
			envClientID, envClientSecret, envToken, w.base, w.baseFrom)
	case errors.As(err, &optedOut):
		return withHint(err, "leave %s out of the test numbers; if the person opted in again, smsform optout remove NUMBER --reason \"…\" records the re-consent",
			words.Plural(len(optedOut.OptOuts), "it", "them"))
	case w.c.MissingHint(err) != "":
		return withHint(err, "%s", w.c.MissingHint(err))
	case errors.Is(err, apply.ErrNoRow):
		return withHint(fmt.Errorf("%w: --row %s: no recipient of %s is there", ErrUsage, campaign.Quote(w.row), w.campaign),
			"name a list of the campaign (as its recipients: section does, or as a path from here) and a line that holds a number")
	case errors.Is(err, state.ErrLocked):
		return withHint(lockedHint(err, w.lockTimeout), "nothing was sent: test sends are recorded in the state, which that apply holds")
	case errors.Is(err, state.ErrEarlierState):
		return earlierStateHint(err, w.choice.loc)
	case errors.Is(err, state.ErrMoved):
		return movedError(err)
	}
	return lineageHint(err)
}

// notTaken fails a test whose messages the provider did not all take.
func notTaken(res *apply.TestResult) error {
	total := len(res.Messages)
	if taken := res.Taken(); taken < total {
		return withHint(fmt.Errorf("%d of %s not taken by the provider (see above); each attempt is recorded as a test send", total-taken,
			words.N(total, "test message was", "test messages were")), "fix the cause (the provider's words above), then run smsform test again")
	}
	return nil
}
