package report

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clipperhouse/displaywidth"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
)

// ledgerState is a state in memory with a project's ledger: opt-outs and
// the frequency cap's holds.
type ledgerState struct {
	testharness.Recorded
	optedOut []string
	held     map[string]time.Time
}

func (l ledgerState) OptOutSet(context.Context, int64) (*e164.Map[struct{}], int64, error) {
	m := e164.NewMap[struct{}](0)
	for _, p := range l.optedOut {
		m.Ref(p)
	}
	return m, 7, nil
}

func (l ledgerState) CapHolds(context.Context, *ledger.Caps, time.Time) (*e164.Map[time.Time], error) {
	m := e164.NewMap[time.Time](0)
	for p, until := range l.held {
		v, _ := m.Ref(p)
		*v = until
	}
	return m, nil
}

// Every output says how many opted out and how many the cap holds back
// until when: the headline, a line of the table and the markdown, the
// JSON summary and the state stamp's opt-out log number.
func TestGoldenLedger(t *testing.T) {
	c := testharness.LoadCampaign(t, "version: 1\nname: ledger\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123401\", \"+447400123402\", \"+447400123403\", \"+447400123404\"]\nbody: \"Hi\"\n",
		map[string]string{"smsform.yaml": "version: 1\nstate: st/\nfrequency_cap: {max: 1, per: 24h}\n"})
	until := time.Date(2026, 11, 25, 9, 12, 0, 0, time.UTC)
	rec := ledgerState{optedOut: []string{"+447400123401"},
		held: map[string]time.Time{"+447400123402": until.Add(-time.Hour), "+447400123403": until}}
	p, err := plan.ComputeWith(context.Background(), c, rec, plan.Options{Now: until.Add(-2 * time.Hour), Ledger: rec})
	if err != nil {
		t.Fatal(err)
	}
	checkGoldens(t, "ledger", p)
	if got := PromptSummary(p); got != "Summary: 3 messages to send; when: now; 2 recipients held back by the frequency cap until Wed 2026-11-25 09:12 UTC at the latest." {
		t.Errorf("prompt summary: %q", got)
	}
}

// The opt-out table's columns line up under the header whatever the length
// of who added each number; a reason too long for the width goes below.
func TestOptOutTableColumns(t *testing.T) {
	walk := func(fn func(ledger.OptOut) error) error {
		at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
		for _, o := range []ledger.OptOut{
			{Phone: "+447400123456", At: at, By: "root@vm", Reason: "STOP by SMS"},
			{Phone: "+447400123457", At: at, By: "octocat (GitHub Actions)", Reason: "imported from stops.txt"},
			{Phone: "+447400123458", At: at, By: "ann"},
		} {
			if err := fn(o); err != nil {
				return err
			}
		}
		return nil
	}
	var b strings.Builder
	if err := WriteOptOutTable(&b, OptOutList{Project: "smsform.yaml", State: ".smsform/smsform.smsstate"}, walk, Output{Width: 200}); err != nil {
		t.Fatal(err)
	}
	var header string
	var reasons []int
	for line := range strings.Lines(b.String()) {
		if strings.HasPrefix(line, "PHONE") {
			header = line
		}
		for _, r := range []string{"STOP by SMS", "imported from"} {
			if i := strings.Index(line, r); i >= 0 {
				reasons = append(reasons, displaywidth.String(line[:i]))
			}
		}
		if strings.HasSuffix(line, " \n") {
			t.Errorf("trailing spaces: %q", line)
		}
	}
	col := displaywidth.String(header[:strings.Index(header, "REASON")])
	if len(reasons) != 2 || reasons[0] != col || reasons[1] != col {
		t.Errorf("reasons start at columns %v, the header's REASON at %d:\n%s", reasons, col, b.String())
	}
	b.Reset()
	if err := WriteOptOutTable(&b, OptOutList{}, walk, Output{Width: 64}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n    imported from stops.txt\n") {
		t.Errorf("a reason past the width is not on a line of its own:\n%s", b.String())
	}
}
