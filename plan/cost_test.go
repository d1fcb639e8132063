package plan

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/state"
)

// TestCostByHand holds the plan's cost to figures worked out by hand from
// internal/report/testdata/campaigns (prices: GB 0.035, GB +447400 0.05, US 0.0079, no FR).
func TestCostByHand(t *testing.T) {
	p, err := Compute(context.Background(), testharness.GoldenCampaign(t, "personalised"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cost
	if c == nil {
		t.Fatal("no cost with a price table")
	}
	// Ann 1 segment × 0.035 (the country row); Ben 178 characters, 2
	// segments × 0.05 (the +447400 row wins); Cid UCS-2, 1 × 0.05; the row
	// with an empty name 1 × 0.05; Eve 1 × 0.0079 (US); Fay (FR) no price.
	if c.Currency != "EUR" || c.Total.String() != "0.2429" || !c.AlreadySpent.IsZero() {
		t.Errorf("cost = %s %s, spent %s; want EUR 0.2429, 0", c.Currency, c.Total, c.AlreadySpent)
	}
	got := fmt.Sprint(c.ByCountry)
	if want := "[{GB 4 5 0.235} {US 1 1 0.0079}]"; got != want {
		t.Errorf("by country = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(c.Unpriced), "[{FR 1 1}]"; got != want {
		t.Errorf("unpriced = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(p.Countries), "[{GB 4 5} {FR 1 1} {US 1 1}]"; got != want {
		t.Errorf("countries = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(p.Distribution), "[{GSM-7 1 3 3} {GSM-7 2 1 2} {UCS-2 1 2 2}]"; got != want {
		t.Errorf("distribution = %s, want %s", got, want)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "1 recipient has no price in prices.csv: FR (1)") }) {
		t.Errorf("no warning names the recipient without a price: %q", p.Warnings)
	}

	// Resumed (Gus is not excluded here): Ann's body is today's (priced
	// exactly, 0.035), Ben's changed (priced as today's, 0.10, and counted
	// as an estimate); Cid is in doubt, neither spent nor to send. To send:
	// the empty name 0.05, Eve 0.0079, Gus 0.05, Fay no price.
	p, err = Compute(context.Background(), testharness.GoldenCampaign(t, "resumed"), testharness.ResumedState())
	if err != nil {
		t.Fatal(err)
	}
	c = p.Cost
	if c.Total.String() != "0.1079" || c.AlreadySpent.String() != "0.135" || c.AlreadySpentEstimated != 1 {
		t.Errorf("resumed: total %s, spent %s (%d estimated); want 0.1079, 0.135 (1)", c.Total, c.AlreadySpent, c.AlreadySpentEstimated)
	}
}

// TestCostUCS2 checks what one curly quote costs: 99 x and a ” are 100
// UTF-16 units, 2 UCS-2 segments where GSM-7 would need 1.
func TestCostUCS2(t *testing.T) {
	prices := map[string]string{"p.csv": "country,prefix,price_per_segment,currency\nGB,,0.1,EUR\nGB,+447400,0.05,EUR\n"}
	for _, tt := range []struct {
		name, body, total, extra string
	}{
		{"GSM-7", strings.Repeat("x", 100), "0.25", ""},
		{"UCS-2 doubles", strings.Repeat("x", 99) + "”", "0.5", "UCS-2 costs EUR 0.25 more than the same messages in GSM-7 would"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Three GB numbers on the 0.05 range, one on the country's 0.1:
			// 3 × 0.05 + 0.1 = 0.25 a segment each.
			c := testharness.LoadCampaign(t, header+"prices: p.csv\nrecipients:\n  - numbers: [\"+447400123459\", \"+447400123564\", \"+447400123669\", \"+447800123456\"]\nbody: \""+tt.body+"\"\n", prices)
			p, err := Compute(context.Background(), c, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Cost.Total.String(); got != tt.total {
				t.Errorf("total = %s, want %s", got, tt.total)
			}
			has := slices.Contains(p.Warnings, tt.extra)
			if tt.extra != "" && !has {
				t.Errorf("warnings %q lack %q", p.Warnings, tt.extra)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	prices := "country,prefix,price_per_segment,currency\nGB,,0.035,EUR\nGB,+447400,0.05,EUR\n"
	list := "phone,n\n+447800123456,a\n+447400123459," + strings.Repeat("y", 200) + "\n+447400123564,c\n"
	// Costs 0.035 + 2 × 0.05 + 0.05 = 0.185 for 4 segments; the longest
	// message has 2.
	tests := []struct {
		name, budget string
		state        testharness.Recorded
		want         []string // what is exceeded; none: within budget
	}{
		{"within", "  max_total: 0.185\n  max_segments_per_message: 2\n  max_recipients: 3\n", nil, nil},
		{"cost", "  max_total: 0.18\n", nil, []string{"cost EUR 0.185 exceeds max_total EUR 0.180 by EUR 0.005"}},
		{"segments", "  max_segments_per_message: 1\n", nil, []string{"1 message needs more than max_segments_per_message 1: up to 2, 1 over"}},
		{"recipients", "  max_recipients: 2\n", nil, []string{"3 recipients (to send + already sent) exceed max_recipients 2 by 1"}},
		{"all three", "  max_total: 0.1\n  max_segments_per_message: 1\n  max_recipients: 1\n", nil, []string{
			"cost EUR 0.185 exceeds max_total EUR 0.100 by EUR 0.085",
			"1 message needs more than max_segments_per_message 1: up to 2, 1 over",
			"3 recipients (to send + already sent) exceed max_recipients 1 by 2"}},
		// What the state records as sent counts against the campaign's budget.
		{"spent counts", "  max_total: 0.15\n", testharness.Recorded{{Phone: "+447800123456", Status: state.Sent, BodyHash: state.BodyHash("a")}},
			[]string{"cost EUR 0.185 (EUR 0.150 to send + EUR 0.035 already spent) exceeds max_total EUR 0.150 by EUR 0.035"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testharness.LoadCampaign(t, header+"prices: p.csv\nrecipients:\n  - file: l.csv\nbody: \"{{ .n }}\"\nbudget:\n"+tt.budget,
				map[string]string{"p.csv": prices, "l.csv": list})
			var rec Recorded
			if tt.state != nil {
				rec = tt.state
			}
			p, err := Compute(context.Background(), c, rec)
			var be *BudgetError
			if len(tt.want) == 0 {
				if err != nil || p.Budget == nil || len(p.Budget.Exceeded) != 0 {
					t.Fatalf("err = %v, budget %+v; want within budget", err, p.Budget)
				}
				return
			}
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want a BudgetError", err)
			}
			if !slices.Equal(be.Exceeded, tt.want) || !slices.Equal(p.Budget.Exceeded, tt.want) {
				t.Errorf("exceeded = %q\nwant       %q", be.Exceeded, tt.want)
			}
			// apply holds a saved plan to the budget again: the same verdict.
			_, again := CheckBudget(p, c.Budget)
			if again == nil || again.Error() != err.Error() {
				t.Errorf("CheckBudget = %v, want %v", again, err)
			}
		})
	}

	t.Run("no price", func(t *testing.T) {
		c := testharness.LoadCampaign(t, header+"prices: p.csv\nrecipients:\n  - numbers: [\"+447800123456\", \"+33612345678\"]\nbody: hi\nbudget:\n  max_total: 100\n",
			map[string]string{"p.csv": prices})
		_, err := Compute(context.Background(), c, nil)
		if err == nil || !strings.Contains(err.Error(), "1 recipient in FR has no price, so the cost cannot be held against max_total EUR 100.00") {
			t.Fatalf("err = %v; a recipient without a price must not pass a cost budget", err)
		}
	})
}

func TestEmptyVariables(t *testing.T) {
	list := "phone,first_name\n+447800123456,Ann\n+447400123459,\n+447400123564,  \n"
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\nbody: \"Hi {{ .first_name }}\"\n", map[string]string{"l.csv": list})
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := p.EmptyVariables
	if ev.Recipients != 2 || len(ev.Rows) != 2 || !strings.HasSuffix(ev.Rows[0], "l.csv:3: first_name") || !strings.HasSuffix(ev.Rows[1], "l.csv:4: first_name") {
		t.Errorf("empty variables = %+v, want rows 3 and 4", ev)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "2 recipients get a message with an empty variable") && strings.Contains(w, `{{ default "friend" .first_name }}`)
	}) {
		t.Errorf("no warning: %q", p.Warnings)
	}
	if len(p.Samples) == 0 || !slices.ContainsFunc(p.Samples, func(s Sample) bool { return slices.Contains(s.Why, "empty variable") && s.Body == "Hi " }) {
		t.Errorf("samples %+v show no message with the empty variable", p.Samples)
	}

	c = testharness.LoadCampaign(t, header+"empty_variables: error\nrecipients:\n  - file: l.csv\nbody: \"Hi {{ .first_name }}\"\n", map[string]string{"l.csv": list})
	_, err = Compute(context.Background(), c, nil)
	var ce *campaign.Error
	if !errors.As(err, &ce) || !strings.HasSuffix(ce.File, "l.csv") || ce.Line != 3 || ce.Field != "first_name" || !strings.Contains(err.Error(), "l.csv:4: first_name") {
		t.Fatalf("err = %v, want l.csv:3 and l.csv:4 named", err)
	}
}

func TestDuplicateRows(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.txt\n  - numbers: [\"+447400123459\", \"+447800123456\"]\nexclude:\n  - numbers: [\"+447800123456\"]\nbody: hi\n",
		map[string]string{"l.txt": "+447400123459\n+447800123456\n\n+44 7400 123459\n"})
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range p.DuplicateRows {
		got = append(got, filepath.Base(d.Row)+" kept "+filepath.Base(d.Kept)+" "+d.Phone)
	}
	want := []string{
		"l.txt:4 kept l.txt:1 +447400123459",
		"c.yaml:6 kept l.txt:1 +447400123459",
		"c.yaml:6 kept . +447800123456", // the first one was excluded: none is kept
	}
	if !slices.Equal(got, want) || p.Summary.Duplicates != 3 {
		t.Errorf("duplicates (%d) = %q\nwant %q", p.Summary.Duplicates, got, want)
	}
}

// TestDuplicateKeptLines names the kept row of each duplicate across gaps
// (blank lines, invalid numbers) and sources: the plan writes a line down
// only where rows stop following each other.
func TestDuplicateKeptLines(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.txt\n  - file: m.txt\nbody: hi\n", map[string]string{
		"l.txt": "+447400123451\n\nnonsense\n+447400123452\n+447400123453\n",
		"m.txt": "+447400123454\n+447400123453\n+447400123452\n+447400123454\n+447400123451\n",
	})
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range p.DuplicateRows {
		got = append(got, filepath.Base(d.Row)+" kept "+filepath.Base(d.Kept))
	}
	want := []string{"m.txt:2 kept l.txt:5", "m.txt:3 kept l.txt:4", "m.txt:4 kept m.txt:1", "m.txt:5 kept l.txt:1"}
	if !slices.Equal(got, want) {
		t.Errorf("duplicates = %q\nwant %q", got, want)
	}
}
