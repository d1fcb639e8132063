package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// controlsIn is what may not reach a human output raw: C0 controls but
// the line breaks an output makes, DEL, C1 controls, the bidirectional
// controls and the line and paragraph separators.
var controlsIn = regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029]")

// tainted is text from outside at its worst: an escape sequence that sets
// the terminal's title, a bell, a right-to-left override and the other bidi
// controls, C1's next-line and CSI, a carriage return, a tab, NUL, DEL; and
// a line break followed by a word that must never start a line.
const tainted = "x\x1b]0;pwned\x07\u202eevil\u2066\u200f\u061c\u0085\u009b31m\r\t\x00\x7f\nMARK</details>"

// taintedBody is tainted as a message body may be: its line breaks are the
// message's own and are shown as such, so it has none before the marker.
var taintedBody = strings.TrimSuffix(tainted, "\nMARK</details>") + "\nsecond line"

// taintedPlan is a plan with tainted text in every place a user's or a
// provider's words reach.
func taintedPlan() *plan.Plan {
	p := hostilePlan(tainted)
	p.Batches[0].Body, p.Batches[1].Body = taintedBody, "Hi "+taintedBody
	p.Samples[0].Body = taintedBody
	p.Template = "Hi {{ .name }} " + taintedBody
	at := time.Date(2026, 11, 25, 14, 2, 0, 0, time.UTC)
	p.Paused = &state.Pause{At: at, By: tainted, Reason: tainted}
	p.LastTest = &state.TestSend{At: at, By: tainted, Phones: []string{"+447400123459"}, Outcome: state.Failed, Reason: tainted}
	p.Failed = []plan.Held{{Phone: "+447400123451", BatchID: "b-0", Reason: tainted}}
	return p
}

// checkVisible fails when out holds a raw control or a line that starts
// with the text that followed a line break in tainted.
func checkVisible(t *testing.T, what, out string) {
	t.Helper()
	if out == "" {
		t.Errorf("%s: wrote nothing", what)
	}
	if loc := controlsIn.FindStringIndex(out); loc != nil {
		t.Errorf("%s: a raw %q at byte %d:\n%s", what, out[loc[0]:loc[1]], loc[0], out)
	}
	for i, line := range strings.Split(out, "\n") {
		if l := strings.TrimLeft(line, " |-*>#`\t"); strings.HasPrefix(l, "MARK") {
			t.Errorf("%s: line %d starts with text from outside: %q", what, i+1, line)
		}
	}
	if !strings.Contains(out, `\x1b]0;pwned\a`) && !strings.Contains(out, `\\x1b\]0;pwned\\a`) {
		t.Errorf("%s: the escape is not shown escaped:\n%s", what, out)
	}
}

// TestEveryOutputShowsControlsVisibly feeds tainted text through every
// field of every human output: the plan's table and comment (one campaign
// and several), a message, the state and opt-out lists, state where,
// progress lines and the pause and test-send words. None may reach a
// person raw; JSON keeps the text as data.
func TestEveryOutputShowsControlsVisibly(t *testing.T) {
	at := time.Date(2026, 11, 25, 14, 2, 0, 0, time.UTC)
	render := func(fn func(*bytes.Buffer) error) string {
		var b bytes.Buffer
		if err := fn(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	p := taintedPlan()
	cps := []CampaignPlan{
		{File: "campaigns/" + tainted + ".yaml", Plan: p, Saved: "plans/" + tainted + ".plan"},
		{File: "campaigns/b" + tainted + ".yaml", Err: errors.New("campaigns/b.yaml:1: " + tainted)},
	}
	for _, width := range []int{0, 80} {
		o := Output{Width: width, Plain: true, MarkdownLimit: 1 << 30}
		checkVisible(t, "table", render(func(b *bytes.Buffer) error { return WriteTable(b, p, o) }))
		checkVisible(t, "markdown", render(func(b *bytes.Buffer) error { return WriteMarkdown(b, p, o) }))
		checkVisible(t, "campaigns table", render(func(b *bytes.Buffer) error { return WriteCampaignsTable(b, cps, o) }))
		checkVisible(t, "campaigns markdown", render(func(b *bytes.Buffer) error { return WriteCampaignsMarkdown(b, cps, o) }))
		checkVisible(t, "message", render(func(b *bytes.Buffer) error {
			return WriteMessage(b, "+447400123459", plan.Batch{ID: "b-1", Body: taintedBody}, o)
		}))
		l := StateList{Path: tainted, Campaign: tainted, Lineage: "l", Serial: 3,
			Counts: map[state.Status]int{state.Failed: 1}, Moved: &state.Moved{To: tainted, At: at, By: tainted}}
		recs := func(fn func(state.Recipient) error) error {
			return fn(state.Recipient{Phone: "+447400123459", Status: state.Failed, BatchID: "b-1", At: at, Reason: tainted})
		}
		checkVisible(t, "state list", render(func(b *bytes.Buffer) error { return WriteStateTable(b, l, recs, o) }))
		outs := func(fn func(ledger.OptOut) error) error {
			return fn(ledger.OptOut{Phone: "+447400123459", At: at, By: tainted, Reason: tainted})
		}
		checkVisible(t, "opt-out list", render(func(b *bytes.Buffer) error {
			return WriteOptOutTable(b, OptOutList{Project: tainted, State: tainted}, outs, o)
		}))
	}
	checkVisible(t, "state where", render(func(b *bytes.Buffer) error {
		return WriteStateWhere(b, StateWhere{Campaign: tainted, Location: tainted, From: tainted, Project: tainted, Shared: true,
			Lineage: tainted, Moved: &state.Moved{To: tainted, At: at, By: tainted},
			Paused: &state.Pause{At: at, By: tainted, Reason: tainted}, SecondLedger: tainted})
	}))
	var stderr bytes.Buffer
	pr := NewProgress(&bytes.Buffer{}, &stderr, ProgressOptions{Total: 2})
	for _, e := range []apply.Event{
		{Type: "retry", Reason: tainted, Attempt: 1, Wait: time.Second},
		{Type: "wait", Reason: tainted, Recipients: 2, Wait: time.Hour, Until: at},
		{Type: "paused", Reason: tainted},
	} {
		pr.Event(e)
	}
	checkVisible(t, "progress", stderr.String())
	checkVisible(t, "pause words", PauseWords(p.Paused))
	checkVisible(t, "test send words", TestSendWords(p.LastTest))

	// JSON is data: the text comes back exactly as it went in.
	doc := render(func(b *bytes.Buffer) error { return WriteJSON(b, p, Output{}) })
	var got struct {
		Campaign string
		Paused   struct{ Reason string }
	}
	if err := json.Unmarshal([]byte(doc), &got); err != nil {
		t.Fatal(err)
	}
	if got.Campaign != "c"+tainted || got.Paused.Reason != tainted {
		t.Errorf("JSON changed the text: campaign %q, reason %q", got.Campaign, got.Paused.Reason)
	}
}
