package report

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// wholeForms are the ways a template or a list may print +447400123459,
// and that no output may show unless asked: each holds 6 of its digits in
// a row.
var wholeForms = []string{"+447400123459", "447400123459", "7400123459", "07400 123459", "7400 123459", "123459"}

func showsNumber(out string) string {
	for _, f := range wholeForms {
		if strings.Contains(out, f) {
			return f
		}
	}
	return ""
}

// TestNumbersMaskedInBodies: a body that prints the recipient's number,
// whole, sliced or in the national form of a list column, shows none of
// them in the table, the markdown or the JSON; --show-numbers shows them.
func TestNumbersMaskedInBodies(t *testing.T) {
	list := "phone,name,national\n+447400123459,Ann,07400 123459\n+447400123458,Ben,07400 123458\n+447400123459,Ann again,07400 123459\n"
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\n  - numbers: [\"07400 123459\"]\n"+
		"body: \"Hi {{ .name }}: {{ .phone }}, {{ slice .phone 1 }}, {{ slice .phone 3 }}, {{ .national }}\"\n",
		map[string]string{"l.csv": list})
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) == 0 || len(p.Invalid) != 1 || p.Summary.Duplicates != 1 {
		t.Fatalf("the plan should have samples, an invalid number and a duplicate: %+v", p.Summary)
	}
	for _, show := range []bool{false, true} {
		for name, write := range map[string]func(*bytes.Buffer, *plan.Plan, Output) error{
			"table":    func(b *bytes.Buffer, p *plan.Plan, o Output) error { return WriteTable(b, p, o) },
			"markdown": func(b *bytes.Buffer, p *plan.Plan, o Output) error { return WriteMarkdown(b, p, o) },
			"json":     func(b *bytes.Buffer, p *plan.Plan, o Output) error { return WriteJSON(b, p, o) },
		} {
			var b bytes.Buffer
			if err := write(&b, p, Output{ShowNumbers: show}); err != nil {
				t.Fatal(err)
			}
			if f := showsNumber(b.String()); (f != "") != show {
				t.Errorf("%s with ShowNumbers=%v: shows %q\n%s", name, show, f, b.String())
			}
		}
	}
}

// TestNumbersMaskedInReasons: a provider's reason that echoes a number is
// masked in the plan's held recipients, the state list, the events and
// the progress lines.
func TestNumbersMaskedInReasons(t *testing.T) {
	reason := "HTTP 400: recipient 447400123459 is blocked"
	p := &plan.Plan{Campaign: "t", Sender: "ACME",
		InDoubt: []plan.Held{{Phone: "+447400123459", BatchID: "b-1", Reason: reason}},
		Failed:  []plan.Held{{Phone: "+447400123459", BatchID: "b-2", Reason: reason}}}
	rec := state.Recipient{Phone: "+447400123459", Status: state.Failed, BatchID: "b-2", At: time.Unix(0, 0), Reason: reason}
	walk := func(fn func(state.Recipient) error) error { return fn(rec) }
	for _, show := range []bool{false, true} {
		o := Output{ShowNumbers: show}
		outs := map[string]*bytes.Buffer{}
		buf := func(name string) *bytes.Buffer { outs[name] = &bytes.Buffer{}; return outs[name] }
		WriteTable(buf("table"), p, o)
		WriteJSON(buf("json"), p, o)
		WriteStateTable(buf("state list"), StateList{Path: "s", Counts: map[state.Status]int{state.Failed: 1}}, walk, o)
		WriteStateJSON(buf("state list --json"), StateList{Path: "s"}, walk, o)
		NewProgress(buf("events"), nil, ProgressOptions{JSON: true, ShowNumbers: show}).
			Event(apply.Event{Type: "batch_failed", Batch: "b-2", Recipients: 1, Reason: reason})
		NewProgress(nil, buf("retry line"), ProgressOptions{ShowNumbers: show}).
			Event(apply.Event{Type: "retry", Reason: "dial +44 7400 123459: refused", Attempt: 1})
		for name, b := range outs {
			if f := showsNumber(b.String()); (f != "") != show {
				t.Errorf("%s with ShowNumbers=%v: shows %q\n%s", name, show, f, b.String())
			}
		}
	}
}

// TestNumbersNeverReadTheSame: within one output two different numbers
// never read the same, however much of them the mask hides; one number
// reads the same wherever it is shown (issue 35.9). JSON keeps the plain
// mask.
func TestNumbersNeverReadTheSame(t *testing.T) {
	a, b := "+12025550001", "+12025556001"
	at := time.Date(2026, 11, 25, 14, 2, 0, 0, time.UTC)
	var out strings.Builder
	walk := func(fn func(ledger.OptOut) error) error {
		for _, n := range []string{a, b} {
			if err := fn(ledger.OptOut{Phone: n, At: at, By: "alice"}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := WriteOptOutTable(&out, OptOutList{Project: "p", State: "s"}, walk, Output{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "+1 20•• •••001  ") || !strings.Contains(out.String(), "+1 20•• •••001 #2") {
		t.Errorf("opt-out list:\n%s", out.String())
	}

	p := &plan.Plan{Campaign: "c", Sender: "ACME", Summary: plan.Summary{ToSend: 3, Batches: 2, Segments: 3},
		Batches: []plan.Batch{
			{ID: "b-1", Body: "hi", Encoding: "GSM-7", Segments: 1, Recipients: []string{a, b}},
			{ID: "b-2", Body: "ho", Encoding: "GSM-7", Segments: 1, Recipients: []string{"+447400123459"}},
		},
		Samples: []plan.Sample{{Why: []string{"longest"}, Phone: b, Body: "hi", Encoding: "GSM-7", Segments: 1, Characters: 2}},
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, p, Output{}); err != nil {
		t.Fatal(err)
	}
	// The sample (b) comes first, so b reads plain and a gets the tag, in
	// the batch too.
	if !strings.Contains(md.String(), "`+1 20•• •••001`, GSM-7") || !strings.Contains(md.String(), ": +1 20•• •••001 #\u200b2, +1 20•• •••001\n") {
		t.Errorf("the sample and its batch do not show the second number alike:\n%s", md.String())
	}
	var js strings.Builder
	if err := WriteJSON(&js, p, Output{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), "#2") {
		t.Errorf("JSON tags a number: it keeps the plain mask")
	}
}
