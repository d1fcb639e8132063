// Package report is everything smsform shows people and programs: a plan
// as a table for a terminal, as markdown for a pull request, as one JSON
// document ([WriteTable], [WriteMarkdown], [WriteJSON]); and an apply as it
// runs, as progress lines or JSON events, and its summary ([Progress],
// [WriteResult]). It computes nothing: plan and apply hand it their
// values, and internal/cli picks the output from the command line.
//
// Phone numbers are masked unless [Output.ShowNumbers] says otherwise.
package report

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// forPeople is o for one output a person reads: its numbers masked so
// that no two read the same. sorted says the output shows its numbers in
// order (a list that streams millions of them).
func (o Output) forPeople(sorted bool) Output {
	if o.masker == nil {
		o.masker = e164.NewMasker()
		if sorted {
			o.masker = e164.NewSortedMasker()
		}
	}
	return o
}

// Output says how a plan is shown.
type Output struct {
	// ShowNumbers prints phone numbers whole; by default they are masked,
	// because plans are pasted into pull requests.
	ShowNumbers bool
	// MaxBatches caps the batches the table lists (0: 50).
	MaxBatches int
	// Width is the width the table must fit, by cutting the body preview
	// short; 0 leaves the preview whole (--wide, or JSON-like use).
	Width int
	// Plain writes tables as aligned columns without rules, for logs,
	// pipes and files; rules are for terminals.
	Plain bool
	// Colour marks the summary line and the in-doubt recipients for a
	// terminal (ANSI bold and yellow).
	Colour bool
	// MarkdownLimit caps markdown output in bytes (0: 65,536, GitHub's
	// comment limit); the middle is cut, never the summary at the top.
	MarkdownLimit int

	// masker masks the numbers of one human output, so that two different
	// numbers never read the same in it (see [e164.Masker]); nil in JSON,
	// which writes each number as e164.Mask does.
	masker *e164.Masker

	// money is how the output writes each currency's amounts, when it
	// shows several plans: one precision per currency for all of them
	// (see [Output.withMoney]). Without it, a plan's own amounts decide.
	money map[string]words.Amounts
}

// Headline counts everything in one line, e.g. "Plan: 1,204 messages in 13
// batches (1,310 segments, EUR 45.85); 3 invalid, 12 excluded, 0 already
// sent, 0 in doubt." (the cost with a price table only).
func Headline(p *plan.Plan) string { return Output{}.headline(p) }

func (o Output) headline(p *plan.Plan) string {
	s := p.Summary
	var b strings.Builder
	cost := ""
	if c := p.Cost; c != nil {
		cost = ", " + o.amounts(p).Money(c.Total)
		if len(c.Unpriced) > 0 {
			cost += " + no price"
		}
	}
	fmt.Fprintf(&b, "Plan: %s %s in %s %s (%s %s%s); %s invalid, %s excluded, %s already sent, %s in doubt",
		words.Count(s.ToSend), words.Plural(s.ToSend, "message", "messages"),
		words.Count(s.Batches), words.Plural(s.Batches, "batch", "batches"),
		words.Count(s.Segments), words.Plural(s.Segments, "segment", "segments"), cost,
		words.Count(s.Invalid), words.Count(s.Excluded), words.Count(s.AlreadySent), words.Count(s.InDoubt))
	if s.Failed > 0 {
		fmt.Fprintf(&b, ", %s failed", words.Count(s.Failed))
	}
	if s.Duplicates > 0 {
		fmt.Fprintf(&b, ", %s %s", words.Count(s.Duplicates), words.Plural(s.Duplicates, "duplicate", "duplicates"))
	}
	if s.OptedOut > 0 {
		fmt.Fprintf(&b, ", %s opted out", words.Count(s.OptedOut))
	}
	b.WriteString(".")
	return b.String()
}

// amounts writes the money of a plan in o: every amount of one currency
// in an output with the same decimals, those of the amount that needs the
// most (never fewer than the currency's minor units).
func (o Output) amounts(p *plan.Plan) words.Amounts {
	cur, ds := planMoney(p)
	if a, ok := o.money[cur]; ok {
		return a
	}
	return words.NewAmounts(cur, ds...)
}

// planMoney is the currency of p and every amount its outputs show: the
// cost, what was spent, each country's, the budget, the amounts a budget
// line says.
func planMoney(p *plan.Plan) (cur string, ds []decimal.Decimal) {
	if c := p.Cost; c != nil {
		cur = c.Currency
		all := c.Total.Add(c.AlreadySpent)
		ds = append(ds, c.Total, c.AlreadySpent, all)
		for _, cc := range c.ByCountry {
			ds = append(ds, cc.Cost)
		}
		if b := p.Budget; b != nil && b.MaxTotal != nil {
			ds = append(ds, all.Sub(*b.MaxTotal))
		}
	}
	if b := p.Budget; b != nil && b.MaxTotal != nil {
		ds = append(ds, *b.MaxTotal)
	}
	return cur, ds
}

// withMoney is o for an output that shows all of plans (nil ones are
// skipped): each currency's amounts in all of them are written with one
// precision, so that EUR 10.345 and EUR 847.20 never stand in one output
// as EUR 10.345 and EUR 847.2.
func (o Output) withMoney(plans ...*plan.Plan) Output {
	byCur := map[string][]decimal.Decimal{}
	for _, p := range plans {
		if p == nil || p.Cost == nil {
			continue
		}
		cur, ds := planMoney(p)
		byCur[cur] = append(byCur[cur], ds...)
	}
	o.money = make(map[string]words.Amounts, len(byCur))
	for cur, ds := range byCur {
		o.money[cur] = words.NewAmounts(cur, ds...)
	}
	return o
}

// maxListed is how many invalid numbers, or recipients held back, a table
// lists.
const maxListed = 20

const (
	ansiBold   = "\x1b[1m"
	ansiYellow = "\x1b[1;33m"
	ansiReset  = "\x1b[0m"
)

// paint wraps s in an ANSI style when the output is coloured.
func (o Output) paint(style, s string) string {
	if !o.Colour {
		return s
	}
	return style + s + ansiReset
}

// PromptSummary is the plan in one line, repeated right above apply's
// question so that a long table cannot have scrolled it away: messages,
// cost, budget, when. "Summary: 1,204 messages to send; cost EUR 45.85;
// budget: within; when: 800 now, 404 from 2026-11-23 14:00 UTC."
func PromptSummary(p *plan.Plan) string {
	parts := []string{words.N(p.Summary.ToSend, "message", "messages") + " to send"}
	if c := p.Cost; c != nil {
		cost := "cost " + Output{}.amounts(p).Money(c.Total)
		if len(c.Unpriced) > 0 {
			cost += " + no price"
		}
		parts = append(parts, cost)
	}
	if b := p.Budget; b != nil {
		if len(b.Exceeded) == 0 {
			parts = append(parts, "budget: within")
		} else {
			parts = append(parts, "budget: OVER")
		}
	}
	when := "now"
	if p.Schedule != nil {
		now, waiting, next := Sendable(p, false)
		when = words.Count(now) + " now"
		if waiting > 0 {
			when += ", " + words.Count(waiting) + " from " + next
		}
	}
	if w := capWords(p); w != "" {
		when += "; " + w
	}
	parts = append(parts, "when: "+when)
	return "Summary: " + strings.Join(parts, "; ") + "."
}
