package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// A test send puts a campaign's messages on a person's phone before the
// campaign goes: the same client and token as apply, to numbers the person
// names, recorded in the campaign's state as test sends. They are never the
// campaign's recipients: nothing of the plan, the serial or the real send
// changes. A number that opted out gets no test either: opted out means no
// message from any campaign.

// MaxTestMessages is how many distinct messages a test sends when no row
// is named.
const MaxTestMessages = 3

// TestRequest is one test send.
type TestRequest struct {
	Campaign *campaign.Campaign
	// To are the numbers the messages go to, in E.164, each once.
	To []string
	// Row, when set, sends the message of that recipient; else one message
	// per distinct body, up to [MaxTestMessages].
	Row *Row
	By  string // who tests, for the record
	// Client sends, with a token had before the state is opened.
	Client Client
	// State is where the test sends are recorded (a file or a PostgreSQL
	// location), opened and locked with StateOptions as apply does (its
	// Campaign is the campaign's): an apply running holds it.
	State        state.Location
	StateOptions state.Options
	// Clock dates the records; nil is the system clock.
	Clock Clock
	// Events receives the waits for a token (retry events); nil discards
	// them.
	Events func(Event)
	// Warn receives what does not stop the test (the campaign as it is
	// would not be applied); nil discards it.
	Warn func(error)
}

// Row is a recipient named by its place: a list of the campaign (as the
// campaign names it, or as a path from the current folder), or the
// campaign file for its inline numbers, and a line of it.
type Row struct {
	File string
	Line int
}

func (r Row) String() string { return fmt.Sprintf("%s:%d", r.File, r.Line) }

// ErrNoRow is returned for a [Row] where no recipient of the campaign is.
var ErrNoRow = errors.New("no recipient there")

// TestMessage is a message a test sends, and why it was chosen.
type TestMessage struct {
	Body string
	Why  string
}

// TestSent is one request of a test send: its message (an index of
// [TestResult.Messages]) and the test send recorded for it.
type TestSent struct {
	Message int
	state.TestSend
}

// TestResult is what a test send did, in order; it is returned, as far
// as it went, with an error that stopped it.
type TestResult struct {
	Messages []TestMessage
	To       []string
	Sent     []TestSent   // every request made, each recorded
	Paused   *state.Pause // the campaign's pause: tests go anyway
}

// Taken is how many messages the provider took whole: every request of
// the message sent.
func (r *TestResult) Taken() int {
	n := 0
	for i := range r.Messages {
		whole, tried := true, false
		for _, s := range r.Sent {
			if s.Message == i {
				tried, whole = true, whole && s.Outcome == state.Sent
			}
		}
		if tried && whole {
			n++
		}
	}
	return n
}

// OptedOutError refuses a test to numbers that opted out: nothing was
// sent or recorded. Its words mask the numbers.
type OptedOutError struct {
	OptOuts []ledger.OptOut
}

func (e *OptedOutError) Error() string {
	each := make([]string, len(e.OptOuts))
	for i, o := range e.OptOuts {
		each[i] = fmt.Sprintf("%s (since %s", e164.Mask(o.Phone), o.At.UTC().Format("2006-01-02 15:04 UTC"))
		if o.By != "" {
			each[i] += " by " + o.By
		}
		if o.Reason != "" {
			each[i] += fmt.Sprintf(": %q", o.Reason)
		}
		each[i] += ")"
	}
	return fmt.Sprintf("%s opted out, and opted out means no message from any campaign, tests included: %s; nothing was sent",
		words.N(len(e.OptOuts), "test number", "test numbers"), strings.Join(each, ", "))
}

// SendTests sends the campaign's test messages to r.To and records each
// request as a test send. It picks the messages first (a bad row stops it
// there), opens and locks the state (state.Open's errors as they are),
// refuses numbers opted out in the state's ledger ([OptedOutError]), gets
// a token ([NoTokenError]), then sends each message in requests
// of at most a batch (and provider.max_recipients) of numbers. A message
// the provider did not take does not stop the others; a token that
// cannot be had does, nothing more sent.
func SendTests(ctx context.Context, r TestRequest) (*TestResult, error) {
	msgs, err := testMessages(ctx, r)
	if err != nil {
		return nil, err
	}
	opts := r.StateOptions
	opts.Campaign = r.Campaign.Name
	st, err := state.Open(ctx, r.State, opts)
	if err != nil {
		return nil, err
	}
	// Closed with nothing recorded, the state is as it was: no file made,
	// no lock file left.
	defer st.Close()
	if err := refuseOptedOut(ctx, r.State, r.To); err != nil {
		return nil, err
	}
	// What the state says (locked, opted out) is said before the token is
	// asked for, as apply does.
	if err := Prepare(ctx, r.Client, Options{Events: r.Events}); err != nil {
		return nil, &NoTokenError{Err: err}
	}
	res := &TestResult{Messages: msgs, To: r.To, Paused: st.Paused()}
	return res, sendTests(ctx, r, st, res)
}

// refuseOptedOut returns an *OptedOutError naming the numbers of to that
// are opted out in the state at loc.
func refuseOptedOut(ctx context.Context, loc state.Location, to []string) error {
	var out []ledger.OptOut
	_, err := ledger.OptOuts(ctx, loc, func(o ledger.OptOut) error {
		if slices.Contains(to, o.Phone) {
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(out) > 0 {
		return &OptedOutError{OptOuts: out}
	}
	return nil
}

// sendTests sends each message of res to r.To, in requests of at most
// the campaign's batch of numbers, recording each answer.
func sendTests(ctx context.Context, r TestRequest, st *state.State, res *TestResult) error {
	clock := r.Clock
	if clock == nil {
		clock = SystemClock()
	}
	size := r.Campaign.BatchSize
	if m := r.Campaign.Provider.MaxRecipients; m > 0 && m < size {
		size = m
	}
	for i, m := range res.Messages {
		for to := range slices.Chunk(r.To, max(size, 1)) {
			ts := state.TestSend{At: clock.Now().UTC(), By: r.By, BodyHash: state.BodyHash(m.Body), Phones: to}
			if err := sendTest(ctx, r.Client, r.Campaign.Sender, m.Body, &ts); err != nil {
				return err
			}
			if err := st.RecordTestSend(ctx, ts); err != nil {
				return fmt.Errorf("test message %d was sent but not recorded: %w", i+1, err)
			}
			res.Sent = append(res.Sent, TestSent{Message: i, TestSend: ts})
		}
	}
	return nil
}

// sendTest sends body to ts.Phones and says in ts what became of it, by
// [StatusOf]; an error means nothing was sent and nothing is to be
// recorded (no token).
func sendTest(ctx context.Context, s Sender, from, body string, ts *state.TestSend) error {
	resp, err := s.Send(ctx, api.SendRequest{From: from, To: ts.Phones, Body: body})
	var ae *api.Error
	switch {
	case err == nil:
		ts.Outcome, ts.HTTPStatus, ts.RequestID = state.Sent, cmp.Or(resp.Status, 200), resp.RequestID
	case errors.As(err, new(*api.TokenError)):
		return err
	case !errors.As(err, &ae):
		ts.Outcome, ts.Reason = state.InDoubt, err.Error()
	default:
		ts.Outcome, ts.HTTPStatus, ts.Reason = StatusOf(ae), ae.Status, ReasonOf(ae)
		if ts.Outcome == state.Unsent {
			// Not acted on: for a test, as good as refused (a test is
			// not retried).
			ts.Outcome = state.Failed
		}
	}
	return nil
}

// testMessages are the messages a test sends: the one of r.Row, else one
// per distinct body, up to MaxTestMessages: the plan's samples first (the
// longest, the shortest, the UCS-2 one…), then the first other bodies.
// The plan is made without the state: a message already sent to everyone
// can still be tested.
func testMessages(ctx context.Context, r TestRequest) ([]TestMessage, error) {
	if r.Row != nil {
		m, err := rowMessage(ctx, r.Campaign, *r.Row)
		return []TestMessage{m}, err
	}
	p, err := plan.Compute(ctx, r.Campaign, nil)
	if p == nil || len(p.Samples) == 0 {
		return nil, cmp.Or(err, error(errors.New("the campaign renders no message to test")))
	}
	if err != nil && r.Warn != nil {
		// The messages are what is tested; apply will refuse the plan.
		r.Warn(fmt.Errorf("apply would refuse this campaign as it is: %w", err))
	}
	var msgs []TestMessage
	add := func(body, why string) {
		if len(msgs) < MaxTestMessages && !slices.ContainsFunc(msgs, func(m TestMessage) bool { return m.Body == body }) {
			msgs = append(msgs, TestMessage{Body: body, Why: why})
		}
	}
	for _, s := range p.Samples {
		add(s.Body, strings.Join(s.Why, ", "))
	}
	err = p.EachBatch(func(_ int, b plan.Batch) error {
		if len(msgs) == MaxTestMessages {
			return errEnough
		}
		add(b.Body, "another body")
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	return msgs, nil
}

// errEnough stops a walk once it found what it looked for.
var errEnough = errors.New("enough")

// rowMessage is the message of the recipient at row.
func rowMessage(ctx context.Context, c *campaign.Campaign, row Row) (TestMessage, error) {
	norm := e164.NewNormalizer(c.DefaultRegion)
	var found *TestMessage
	for _, src := range c.Recipients {
		if !sameFile(c, row.File, cmp.Or(src.Path, c.Path)) {
			continue
		}
		err := src.ReadRows(ctx, func(r campaign.Row) error {
			if r.Line != row.Line {
				return nil
			}
			n, err := norm.Normalize(r.Raw)
			if err != nil {
				return fmt.Errorf("%s: the recipient's number is not valid (%v): plan skips it, there is no message to test", row, err)
			}
			body, err := c.RenderRow(r, n.E164)
			if err != nil {
				return fmt.Errorf("%s: %w", row, err)
			}
			found = &TestMessage{Body: body, Why: "the message of " + row.String()}
			return errEnough
		})
		if err != nil && !errors.Is(err, errEnough) {
			return TestMessage{}, err
		}
		if found != nil {
			return *found, nil
		}
	}
	return TestMessage{}, fmt.Errorf("%s: %w", row, ErrNoRow)
}

// sameFile reports whether name, as written relative to the campaign's
// folder or to the current one, is the file path.
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
