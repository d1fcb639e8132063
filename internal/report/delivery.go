package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// Delivery is what `reports show` shows of a campaign: what the provider
// reported of its messages (counts only, never a number) and what the
// undelivered ones cost.
type Delivery struct {
	Campaign string
	Summary  state.DeliverySummary
	// Cost is what was spent on the undelivered messages; nil: not priced.
	Cost *plan.Spent
}

type deliveryJSON struct {
	FormatVersion string `json:"format_version"`
	Campaign      string `json:"campaign"`
	state.DeliveryCounts
	Unmatched       int                   `json:"unmatched"`
	Anomalies       int                   `json:"anomalies"`
	ByCountry       []countryDeliveryJSON `json:"by_country"`
	Reasons         []reasonJSON          `json:"undelivered_reasons"`
	UndeliveredCost []undeliveredCostJSON `json:"undelivered_cost"`
}

type countryDeliveryJSON struct {
	Country string `json:"country"`
	state.DeliveryCounts
}

type reasonJSON struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// undeliveredCostJSON is one country's undelivered messages and their
// cost; Cost is absent when no price covers them ("no price").
type undeliveredCostJSON struct {
	Country  string           `json:"country"`
	Messages int              `json:"messages"`
	Segments int              `json:"segments"`
	Currency string           `json:"currency,omitempty"`
	Cost     *decimal.Decimal `json:"cost,omitempty"`
}

// reasons are the undelivered reasons, the most frequent first, each made
// visible and with any number in it masked: they are the provider's
// words, from outside.
func (d Delivery) reasons() []reasonJSON {
	m := map[string]int{}
	for r, n := range d.Summary.Reasons {
		m[words.Visible(e164.MaskAny(r))] += n
	}
	out := make([]reasonJSON, 0, len(m))
	for r, n := range m {
		out = append(out, reasonJSON{r, n})
	}
	slices.SortFunc(out, func(a, b reasonJSON) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	return out
}

// costs are the undelivered messages by country, priced ones first.
func (d Delivery) costs() []undeliveredCostJSON {
	out := []undeliveredCostJSON{}
	if d.Cost == nil {
		return out
	}
	for _, c := range d.Cost.ByCountry {
		cost := c.Cost
		out = append(out, undeliveredCostJSON{Country: c.Country, Messages: c.Recipients, Segments: c.Segments, Currency: d.Cost.Currency, Cost: &cost})
	}
	for _, c := range d.Cost.Unpriced {
		out = append(out, undeliveredCostJSON{Country: c.Country, Messages: c.Recipients, Segments: c.Segments})
	}
	return out
}

// WriteDeliveryJSON writes d as one JSON document.
func WriteDeliveryJSON(w io.Writer, d Delivery) error {
	s := d.Summary
	doc := deliveryJSON{FormatVersion: plan.FormatVersion, Campaign: d.Campaign, DeliveryCounts: s.DeliveryCounts,
		Unmatched: s.Unmatched, Anomalies: s.Anomalies, ByCountry: []countryDeliveryJSON{}, Reasons: d.reasons(), UndeliveredCost: d.costs()}
	for _, c := range s.Countries() {
		doc.ByCountry = append(doc.ByCountry, countryDeliveryJSON{Country: c, DeliveryCounts: *s.ByCountry[c]})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// deliveryHeadline is the counts in one sentence.
func deliveryHeadline(s state.DeliverySummary) string {
	line := fmt.Sprintf("%s delivered, %s undelivered, %s pending", words.Count(s.Delivered), words.Count(s.Undelivered), words.Count(s.Pending))
	if s.InDoubt > 0 {
		line += fmt.Sprintf("; %s in doubt (%s with no report)", words.Count(s.InDoubt), words.Count(s.InDoubtWithoutReport))
	}
	return line
}

// DeliverySoFar is the line plan's markdown shows of a campaign already
// partly sent whose state holds reports.
func DeliverySoFar(s state.DeliverySummary) string {
	line := fmt.Sprintf("Delivery so far: %s delivered, %s undelivered, %s pending", words.Count(s.Delivered), words.Count(s.Undelivered), words.Count(s.Pending))
	if s.Anomalies > 0 {
		line += fmt.Sprintf(" (%s)", words.N(s.Anomalies, "anomaly", "anomalies"))
	}
	return line + "."
}

// AnomalyWarning is the warning every plan and apply of a campaign gives
// while its state holds anomalies; "" when it holds none.
func AnomalyWarning(n int, campaignPath string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("the provider reported %s that smsform recorded unsent, failed or suppressed (%s): see smsform reports show %s",
		words.N(n, "message", "messages"), words.Plural(n, "an anomaly", "anomalies"), campaignPath)
}

// deliveryRows are the table's rows: each country, then the total.
func deliveryRows(s state.DeliverySummary) [][]string {
	row := func(name string, c state.DeliveryCounts) []string {
		return []string{name, words.Count(c.Delivered), words.Count(c.Undelivered), words.Count(c.Pending), words.Count(c.InDoubt), words.Count(c.InDoubtWithoutReport)}
	}
	rows := [][]string{{"COUNTRY", "DELIVERED", "UNDELIVERED", "PENDING", "IN DOUBT", "NO REPORT"}}
	for _, c := range s.Countries() {
		rows = append(rows, row(c, *s.ByCountry[c]))
	}
	return append(rows, row("total", s.DeliveryCounts))
}

// costLines are the undelivered messages' cost, a line a country.
func (d Delivery) costLines() []string {
	var out []string
	for _, c := range d.costs() {
		what := words.N(c.Messages, "message", "messages") + ", " + words.N(c.Segments, "segment", "segments")
		if c.Cost == nil {
			out = append(out, fmt.Sprintf("%s: %s, no price", c.Country, what))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s, %s", c.Country, what, words.Money(c.Currency, *c.Cost)))
	}
	return out
}

// WriteDeliveryTable writes d for a terminal.
func WriteDeliveryTable(w io.Writer, d Delivery) error {
	s := d.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "Delivery of %s: %s.\n", oneLine(d.Campaign), deliveryHeadline(s))
	if !s.Reported {
		b.WriteString("No delivery report recorded yet: every message sent counts as pending.\n")
	}
	b.WriteString("\n")
	rows := deliveryRows(s)
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			if i == 0 {
				cells[i] = fmt.Sprintf("%-*s", widths[i], c)
			} else {
				cells[i] = fmt.Sprintf("%*s", widths[i], c)
			}
		}
		b.WriteString(strings.TrimRight(strings.Join(cells, "  "), " ") + "\n")
	}
	if rs := d.reasons(); len(rs) > 0 {
		b.WriteString("\nUndelivered, by the provider's reason:\n")
		for _, r := range rs {
			fmt.Fprintf(&b, "  %s  %s\n", fmt.Sprintf("%6s", words.Count(r.Count)), r.Reason)
		}
	}
	if cl := d.costLines(); len(cl) > 0 {
		b.WriteString("\nSpent on undelivered messages:\n")
		for _, l := range cl {
			b.WriteString("  " + l + "\n")
		}
	}
	writeDeliveryNotes(&b, s, "")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDeliveryNotes says what needs a look: anomalies, unmatched
// reports, recipients in doubt with no report.
func writeDeliveryNotes(b *strings.Builder, s state.DeliverySummary, bullet string) {
	var notes []string
	if s.Anomalies > 0 {
		notes = append(notes, fmt.Sprintf("Anomalies: the provider reported %s that smsform recorded unsent, failed or suppressed; check with the provider before sending more",
			words.N(s.Anomalies, "message", "messages")))
	}
	if s.Unmatched > 0 {
		notes = append(notes, fmt.Sprintf("Unmatched: %s of this state matched no recipient of any campaign", words.N(s.Unmatched, "report", "reports")))
	}
	if s.InDoubtWithoutReport > 0 {
		notes = append(notes, fmt.Sprintf("%s in doubt with no report: no report proves nothing; check with the provider, then smsform state resolve", words.Count(s.InDoubtWithoutReport)))
	}
	if len(notes) == 0 {
		return
	}
	b.WriteString("\n")
	for _, n := range notes {
		b.WriteString(bullet + n + ".\n")
	}
}

// WriteDeliveryMarkdown writes d for a pull request or a report.
func WriteDeliveryMarkdown(w io.Writer, d Delivery) error {
	s := d.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "### Delivery of %s\n\n%s.\n\n", mdText(d.Campaign), deliveryHeadline(s))
	rows := deliveryRows(s)
	b.WriteString("| " + strings.Join(rows[0], " | ") + " |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rows[1:] {
		r[0] = mdText(r[0])
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	if rs := d.reasons(); len(rs) > 0 {
		b.WriteString("\n| UNDELIVERED: PROVIDER'S REASON | COUNT |\n|---|---:|\n")
		for _, r := range rs {
			fmt.Fprintf(&b, "| %s | %s |\n", mdText(r.Reason), words.Count(r.Count))
		}
	}
	if cl := d.costLines(); len(cl) > 0 {
		b.WriteString("\nSpent on undelivered messages:\n\n")
		for _, l := range cl {
			b.WriteString("- " + mdText(l) + "\n")
		}
	}
	writeDeliveryNotes(&b, s, "- ")
	_, err := io.WriteString(w, b.String())
	return err
}
