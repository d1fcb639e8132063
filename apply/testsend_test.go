package apply_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/pgtest"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// pg is this test binary's PostgreSQL server, started when a test first
// needs it.
var pg = pgtest.New(pgtest.Options{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// stateBackends are the places a state can live: test sends promise the
// same in each.
var stateBackends = []struct {
	name string
	loc  func(t *testing.T) string
}{
	{"file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "smsform.smsstate") }},
	{"postgres", func(t *testing.T) string { return pg.Database(t) }},
}

const testCampaign = `version: 1
name: spring
sender: ACME
recipients:
  - file: lists/people.csv
    phone_column: phone
body: "Hi {{ .name }}, your code is {{ .code }}."
batch_size: 1
`

var testLists = map[string]string{"lists/people.csv": "phone,name,code\n" +
	"+447400123001,Alexandra,A1\n+447400123002,Bob,B2\n+447400123003,Cy,C3\n+447400123004,Dorothea,D4\n"}

// testRig is a campaign, a sandbox and a state location, empty.
type testRig struct {
	camp *campaign.Campaign
	srv  *testharness.Server
	loc  string
}

func newTestRig(t *testing.T, loc string, cfg sandbox.Config) *testRig {
	t.Helper()
	return &testRig{camp: testharness.LoadCampaign(t, testCampaign, testLists), srv: testharness.Start(t, cfg), loc: loc}
}

func (r *testRig) request(to ...string) apply.TestRequest {
	client := &api.Client{BaseURL: r.srv.URL, ClientID: testharness.ClientID, ClientSecret: testharness.ClientSecret}
	return apply.TestRequest{Campaign: r.camp, To: to, By: "ann", Client: &api.Authenticated{Client: client}, State: state.MustParseLocation(r.loc),
		StateOptions: state.Options{Shared: true}}
}

// lastTest is the campaign's last test send in the state, and its serial.
func (r *testRig) lastTest(t *testing.T) (*state.TestSend, int64) {
	t.Helper()
	st, err := state.OpenSharedReadOnly(context.Background(), state.MustParseLocation(r.loc), r.camp.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ts, err := st.LastTestSend(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ts, st.Serial()
}

// Each distinct body, up to 3, goes to every number named, in requests of
// at most a batch of numbers; each request is recorded as a test send,
// and the campaign's record stays as it was: its next plan is a first
// send of all four recipients.
func TestSendTests(t *testing.T) {
	for _, b := range stateBackends {
		t.Run(b.name, func(t *testing.T) {
			r := newTestRig(t, b.loc(t), sandbox.Config{})
			res, err := apply.SendTests(context.Background(), r.request("+447400999001", "+447400999002"))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) != apply.MaxTestMessages || len(res.Sent) != 2*apply.MaxTestMessages || res.Taken() != apply.MaxTestMessages {
				t.Fatalf("%d messages, %d requests, %d taken", len(res.Messages), len(res.Sent), res.Taken())
			}
			got := r.srv.Messages()
			if len(got) != 2*apply.MaxTestMessages {
				t.Fatalf("the sandbox delivered %d messages, want %d", len(got), 2*apply.MaxTestMessages)
			}
			for _, m := range got {
				if m.To != "+447400999001" && m.To != "+447400999002" {
					t.Errorf("a test message went to %s", m.To)
				}
			}
			for _, s := range res.Sent {
				if s.Outcome != state.Sent || len(s.Phones) != 1 || s.HTTPStatus != 200 || s.By != "ann" {
					t.Errorf("request: %+v", s)
				}
			}
			last, serial := r.lastTest(t)
			if last == nil || last.Outcome != state.Sent || serial != 0 {
				t.Fatalf("last test send %+v, serial %d", last, serial)
			}
			st, err := state.OpenSharedReadOnly(context.Background(), state.MustParseLocation(r.loc), r.camp.Name)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			p, err := plan.Compute(context.Background(), r.camp, st)
			if err != nil {
				t.Fatal(err)
			}
			if !p.State.FirstSend || p.Summary.ToSend != 4 {
				t.Errorf("plan after the test: first send %v, %d to send", p.State.FirstSend, p.Summary.ToSend)
			}
		})
	}
}

// A number opted out in the project's state gets no test: the whole test
// is refused, naming the number masked with the opt-out's date and reason;
// nothing is sent or recorded.
func TestSendTestsRefusesOptedOut(t *testing.T) {
	for _, b := range stateBackends {
		t.Run(b.name, func(t *testing.T) {
			r := newTestRig(t, b.loc(t), sandbox.Config{})
			at := time.Date(2026, 11, 25, 9, 30, 0, 0, time.UTC)
			_, err := ledger.ChangeOptOuts(context.Background(), state.MustParseLocation(r.loc), []ledger.OptOutChange{{Phone: "+447400999002", At: at, By: "bob", Reason: "STOP by SMS"}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := apply.SendTests(context.Background(), r.request("+447400999001", "+447400999002"))
			var oe *apply.OptedOutError
			if !errors.As(err, &oe) || res != nil {
				t.Fatalf("SendTests to an opted-out number: %v, %+v", err, res)
			}
			if len(oe.OptOuts) != 1 || oe.OptOuts[0].Phone != "+447400999002" || oe.OptOuts[0].Reason != "STOP by SMS" {
				t.Errorf("opt-outs named: %+v", oe.OptOuts)
			}
			words := err.Error()
			for _, want := range []string{"+44 74•• •••002", "2026-11-25 09:30 UTC", `"STOP by SMS"`, "nothing was sent"} {
				if !strings.Contains(words, want) {
					t.Errorf("%q does not say %q", words, want)
				}
			}
			if strings.Contains(words, "999002") {
				t.Errorf("%q shows the number whole", words)
			}
			if n := len(r.srv.Messages()); n != 0 {
				t.Errorf("the sandbox delivered %d messages", n)
			}
			if last, _ := r.lastTest(t); last != nil {
				t.Errorf("a refused test was recorded: %+v", last)
			}
		})
	}
}

// --row sends one recipient's message; a row where no recipient is sends
// nothing and asks for nothing, not even a token.
func TestSendTestsRow(t *testing.T) {
	r := newTestRig(t, filepath.Join(t.TempDir(), "c.smsstate"), sandbox.Config{})
	req := r.request("+447400999001")
	req.Row = &apply.Row{File: filepath.Join(r.camp.Dir, "lists", "people.csv"), Line: 3}
	res, err := apply.SendTests(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Body != "Hi Bob, your code is B2." || !strings.Contains(res.Messages[0].Why, "people.csv:3") {
		t.Errorf("messages: %+v", res.Messages)
	}
	req.Row.Line = 9
	before := len(r.srv.Requests())
	if _, err := apply.SendTests(context.Background(), req); !errors.Is(err, apply.ErrNoRow) {
		t.Errorf("a row without a recipient: %v", err)
	}
	if after := len(r.srv.Requests()); after != before {
		t.Errorf("the sandbox was asked %d times, then %d", before, after)
	}
}

// A message the provider refuses is recorded as a failed test send, with
// the provider's status and words, and the others still go; credentials
// that get no token stop the test with the state as it was: no state
// file, no lock file.
func TestSendTestsRefusedAndNoToken(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "c.smsstate")
	r := newTestRig(t, loc, sandbox.Config{MaxBody: 10})
	res, err := apply.SendTests(context.Background(), r.request("+447400999001"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Taken() != 0 || len(res.Sent) != apply.MaxTestMessages {
		t.Fatalf("%d taken of %d requests", res.Taken(), len(res.Sent))
	}
	for _, s := range res.Sent {
		if s.Outcome != state.Failed || s.HTTPStatus != 400 || s.Reason == "" {
			t.Errorf("refused request: %+v", s)
		}
	}
	if last, _ := r.lastTest(t); last == nil || last.Outcome != state.Failed {
		t.Errorf("last test send: %+v", last)
	}

	other := newTestRig(t, filepath.Join(t.TempDir(), "none.smsstate"), sandbox.Config{})
	req := other.request("+447400999001")
	req.Client.(*api.Authenticated).Client.ClientSecret = "wrong"
	_, err = apply.SendTests(context.Background(), req)
	var nt *apply.NoTokenError
	if !errors.As(err, &nt) {
		t.Fatalf("wrong secret: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(other.loc), "*"))
	if len(left) != 0 || len(other.srv.Messages()) != 0 {
		t.Errorf("after no token: %v left, %d messages", left, len(other.srv.Messages()))
	}
}
