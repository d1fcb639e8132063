package report

import (
	"context"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
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

func (l ledgerState) CapHolds(context.Context, state.Cap, time.Time) (*e164.Map[time.Time], error) {
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
	p, err := plan.ComputeWith(context.Background(), c, rec, plan.Options{Now: until.Add(-2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	checkGoldens(t, "ledger", p)
	if got := PromptSummary(p); got != "Summary: 3 messages to send; when: now; 2 recipients held back by the frequency cap until Wed 2026-11-25 09:12 UTC at the latest." {
		t.Errorf("prompt summary: %q", got)
	}
}
