package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// A test send puts the campaign's messages on a person's phone before the
// campaign goes: the same client and token as apply, to numbers the person
// names, recorded in the campaign's state as test sends. They are never the
// campaign's recipients: nothing of the plan, the serial or the real send
// changes.

// maxTestBodies is how many distinct messages a test sends by default.
const maxTestBodies = 3

func newTestCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "test CAMPAIGN.yaml"}
	fs := cmd.Flags()
	to := fs.StringSlice("to", nil, "the numbers to send the test messages to, comma-separated (default: test_recipients in the project file)")
	row := fs.String("row", "", "send the message of this recipient, FILE:LINE as plan names rows (default: one message per distinct body, up to 3)")
	fs.String("state", "", stateFlagUsage)
	lockTimeout := fs.Duration("lock-timeout", 0, "wait this long for a running apply to release the state (default: fail at once)")
	insecure := fs.Bool("insecure-http", false, "allow a plain-http base URL that is not loopback")
	timeout := fs.Duration("request-timeout", 30*time.Second, "give up waiting for one API answer after this long")
	cmd.Args = positional(1, 1, "one campaign file")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		c, err := campaign.Load(pos[0])
		if err != nil {
			return err
		}
		numbers, err := testNumbers(env, c, *to)
		if err != nil {
			return err
		}
		msgs, err := testMessages(ctx, env, c, *row)
		if err != nil {
			return err
		}
		client, err := connection(c, env, *insecure, *timeout)
		if err != nil {
			return err
		}
		if err := apply.Prepare(ctx, client, apply.Options{Events: newProgress(env, false, 0).Event}); err != nil {
			return withHint(err, "nothing was sent or recorded: check %s and %s (or %s), and the base URL %s (from %s)",
				envClientID, envClientSecret, envToken, client.Client.BaseURL, baseURLSource(c, env))
		}
		st, err := openForTest(ctx, env, pos[0], c, cmd, *lockTimeout)
		if err != nil {
			return err
		}
		defer st.Close()
		if p := st.Paused(); p != nil {
			fmt.Fprintf(env.Stderr, "smsform: note: the campaign is %s; test sends go anyway, the campaign's recipients wait for smsform resume\n", report.PauseWords(p))
		}
		t := testSend{from: c.Sender, by: actor(env), now: env.Clock.Now, to: numbers, size: c.BatchSize}
		if m := c.Provider.MaxRecipients; m > 0 && m < t.size {
			t.size = m
		}
		sent, err := sendTests(ctx, client, st, t, msgs, env)
		if err != nil {
			return err
		}
		return testSummary(env, sent, len(msgs), numbers)
	}
	return cmd
}

// testNumbers are the numbers a test goes to: --to, else the project's
// test_recipients, each checked as a list's number is, and named once.
func testNumbers(env Env, c *campaign.Campaign, to []string) ([]string, error) {
	from := "--to"
	if len(to) == 0 && c.Project != nil {
		to, from = c.Project.TestRecipients, "test_recipients in "+c.Project.Path
	}
	if len(to) == 0 {
		return nil, withHint(fmt.Errorf("%w: smsform test needs the numbers to send to", ErrUsage),
			"name them: --to +447400123456,+447400123457 (or list them as test_recipients in the project file, %s)", campaign.ProjectFile)
	}
	norm := e164.NewNormalizer(c.DefaultRegion)
	var numbers []string
	for _, raw := range to {
		n, err := norm.Normalize(strings.TrimSpace(raw))
		if err != nil {
			return nil, withHint(fmt.Errorf("%w: %s: %s is not a valid number: %v", ErrUsage, from, campaign.Quote(e164.MaskInvalid(raw)), err),
				"write it in E.164, with + and the country code, e.g. +447400123456 (or set default_region for national numbers)")
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

// testMessage is a message a test sends, and why it was chosen.
type testMessage struct {
	body string
	why  string
}

// testMessages are the messages a test sends: the one of --row, else one
// per distinct body, up to maxTestBodies: the plan's samples first (the
// longest, the shortest, the UCS-2 one…), then the first other bodies. The
// plan is made without the state: a message already sent to everyone can
// still be tested.
func testMessages(ctx context.Context, env Env, c *campaign.Campaign, row string) ([]testMessage, error) {
	if row != "" {
		m, err := rowMessage(ctx, c, row)
		return []testMessage{m}, err
	}
	p, err := plan.Compute(ctx, c, nil)
	if p == nil || len(p.Samples) == 0 {
		return nil, cmp.Or(err, error(errors.New("the campaign renders no message to test")))
	}
	if err != nil {
		// The messages are what is tested; apply will refuse the plan.
		warnf(env, "apply would refuse this campaign as it is: %v", err)
	}
	var msgs []testMessage
	add := func(body, why string) {
		if len(msgs) < maxTestBodies && !slices.ContainsFunc(msgs, func(m testMessage) bool { return m.body == body }) {
			msgs = append(msgs, testMessage{body: body, why: why})
		}
	}
	for _, s := range p.Samples {
		add(s.Body, strings.Join(s.Why, ", "))
	}
	// Then the first other bodies, in the plan's order.
	err = p.EachBatch(func(_ int, b plan.Batch) error {
		if len(msgs) == maxTestBodies {
			return errEnoughBodies
		}
		add(b.Body, "another body")
		return nil
	})
	if err != nil && !errors.Is(err, errEnoughBodies) {
		return nil, err
	}
	return msgs, nil
}

// errEnoughBodies stops the walk of a plan's batches once a test has its
// messages.
var errEnoughBodies = errors.New("enough bodies")

// errRowFound stops the read of a list at the row sought.
var errRowFound = errors.New("row found")

// rowMessage is the message of the recipient at spec, FILE:LINE: a list
// (as the campaign names it, or as a path from here) or the campaign file
// for its inline numbers, and a line of it.
func rowMessage(ctx context.Context, c *campaign.Campaign, spec string) (testMessage, error) {
	i := strings.LastIndexByte(spec, ':')
	line, err := strconv.Atoi(spec[i+1:])
	if i <= 0 || err != nil || line < 1 {
		return testMessage{}, withHint(fmt.Errorf("%w: --row %s is not FILE:LINE", ErrUsage, campaign.Quote(spec)),
			"name a recipient's row as plan does, e.g. --row lists/customers.csv:12")
	}
	file := spec[:i]
	norm := e164.NewNormalizer(c.DefaultRegion)
	var found *testMessage
	for _, src := range c.Recipients {
		if !sameFile(c, file, cmp.Or(src.Path, c.Path)) {
			continue
		}
		err := src.ReadRows(ctx, func(r campaign.Row) error {
			if r.Line != line {
				return nil
			}
			n, err := norm.Normalize(r.Raw)
			if err != nil {
				return fmt.Errorf("%s:%d: the recipient's number is not valid (%v): plan skips it, there is no message to test", file, line, err)
			}
			body, err := c.RenderRow(r, n.E164)
			if err != nil {
				return fmt.Errorf("%s:%d: %w", file, line, err)
			}
			found = &testMessage{body: body, why: "the message of " + file + ":" + strconv.Itoa(line)}
			return errRowFound
		})
		if err != nil && !errors.Is(err, errRowFound) {
			return testMessage{}, err
		}
		if found != nil {
			return *found, nil
		}
	}
	return testMessage{}, withHint(fmt.Errorf("%w: --row %s: no recipient of %s is there", ErrUsage, campaign.Quote(spec), c.Path),
		"name a list of the campaign (as its recipients: section does, or as a path from here) and a line that holds a number")
}

// sameFile reports whether name, as written relative to the campaign's
// folder or to here, is the file path.
func sameFile(c *campaign.Campaign, name, path string) bool {
	want, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for _, n := range []string{name, filepath.Join(c.Dir, name)} {
		if abs, err := filepath.Abs(n); err == nil && abs == want {
			return true
		}
	}
	return false
}

// openForTest opens and locks the campaign's state for recording test
// sends, as apply would; an apply running holds it, which --lock-timeout
// waits for.
func openForTest(ctx context.Context, env Env, path string, c *campaign.Campaign, cmd *cobra.Command, lockTimeout time.Duration) (*state.State, error) {
	choice, err := chooseState(env, path, cmd.Flags().Lookup("state"))
	if err != nil {
		return nil, err
	}
	if err := choice.splitLedger(ctx, path, c.Name); err != nil {
		return nil, withHint(err, "nothing was sent or recorded: one campaign, one ledger")
	}
	st, err := state.Open(ctx, choice.loc, state.Options{Campaign: c.Name, LockTimeout: lockTimeout, LockWait: sayLockWait(env),
		RunURL: runURL(env), Shared: choice.shared, Signs: earlierStateSigns(choice, c.Name)})
	switch {
	case errors.Is(err, state.ErrLocked):
		return nil, withHint(lockedHint(err, lockTimeout), "nothing was sent: test sends are recorded in the state, which that apply holds")
	case errors.Is(err, state.ErrEarlierState):
		return nil, earlierStateHint(err, choice.loc)
	case errors.Is(err, state.ErrMoved):
		return nil, movedError(err)
	}
	return st, lineageHint(err)
}

// testSend is what every test send of one run shares.
type testSend struct {
	from, by string
	now      func() time.Time
	to       []string
	size     int // the most numbers in one request, as apply's batches
}

// sendTests sends each message to the test numbers, in requests of at most
// t.size numbers, and records each answer as a test send; it says each on
// stdout, and returns how many messages the provider took whole. A
// provider that did not take one does not stop the others; a token that
// cannot be had does, nothing more sent.
func sendTests(ctx context.Context, s apply.Sender, st *state.State, t testSend, msgs []testMessage, env Env) (int, error) {
	sent := 0
	for i, m := range msgs {
		a := sms.Analyze(m.body)
		all := true
		for to := range slices.Chunk(t.to, max(t.size, 1)) {
			ts, err := sendTest(ctx, s, t, to, m.body)
			if err != nil {
				return sent, err
			}
			if err := st.RecordTestSend(ctx, ts); err != nil {
				return sent, fmt.Errorf("test message %d was sent but not recorded: %w", i+1, err)
			}
			all = all && ts.Outcome == state.Sent
			fmt.Fprintf(env.Stdout, "Test message %d of %d (%s; %s, %s): %s\n", i+1, len(msgs), m.why, a.Encoding,
				words.N(a.Segments, "segment", "segments"), testOutcome(ts))
		}
		if all {
			sent++
		}
	}
	return sent, nil
}

// sendTest sends body to the numbers to and says what became of it; an
// error means nothing was sent and nothing is to be recorded.
func sendTest(ctx context.Context, s apply.Sender, t testSend, to []string, body string) (state.TestSend, error) {
	ts := state.TestSend{At: t.now().UTC(), By: t.by, BodyHash: state.BodyHash(body), Phones: to}
	resp, err := s.Send(ctx, api.SendRequest{From: t.from, To: to, Body: body})
	var ae *api.Error
	switch {
	case err == nil:
		ts.Outcome, ts.HTTPStatus, ts.RequestID = state.Sent, cmp.Or(resp.Status, 200), resp.RequestID
	case errors.As(err, new(*api.TokenError)):
		return ts, err // no token: nothing left
	case !errors.As(err, &ae):
		ts.Outcome, ts.Reason = state.InDoubt, err.Error()
	default:
		ts.Outcome, ts.HTTPStatus, ts.Reason = apply.StatusOf(ae), ae.Status, ae.Error()
		if ts.Outcome == state.Unsent {
			// Not acted on: for a test, as good as refused.
			ts.Outcome = state.Failed
		}
	}
	return ts, nil
}

// testOutcome words what became of a test message, the numbers masked.
func testOutcome(ts state.TestSend) string {
	masked := make([]string, len(ts.Phones))
	for i, p := range ts.Phones {
		masked[i] = e164.Mask(p)
	}
	to := strings.Join(masked, ", ")
	reason := e164.MaskAny(e164.MaskIn(ts.Reason, ts.Phones...))
	switch ts.Outcome {
	case state.Sent:
		id := ""
		if ts.RequestID != "" {
			id = ", request id " + ts.RequestID
		}
		return fmt.Sprintf("sent to %s (HTTP %d%s)", to, ts.HTTPStatus, id)
	case state.InDoubt:
		return fmt.Sprintf("no clear answer for %s: it may have gone: %s", to, reason)
	}
	return fmt.Sprintf("not sent to %s: %s", to, reason)
}

// testSummary says what the test did to whom, and fails when a message
// did not go.
func testSummary(env Env, sent, total int, numbers []string) error {
	if sent < total {
		return withHint(fmt.Errorf("%d of %s not taken by the provider (see above); each attempt is recorded as a test send", total-sent,
			words.N(total, "test message was", "test messages were")), "fix the cause (the provider's words above), then run smsform test again")
	}
	fmt.Fprintf(env.Stdout, "Sent %s to %s; recorded in the state as test sends. Nobody of the campaign was messaged, and its plan is unchanged.\n",
		words.N(total, "test message", "test messages"), words.N(len(numbers), "number", "numbers"))
	return nil
}
