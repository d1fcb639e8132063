package state

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/smsform/smsform/internal/e164"
)

// DeliveryCounts counts a campaign's recipients on the second axis of
// their records (see [Delivery]), with one definition that every output
// uses (reports show, state list, plan):
//
//   - Delivered, Undelivered and Pending split the recipients recorded
//     sent: by their latest report, a sent recipient with no report yet
//     counting as pending. They add up to the recipients sent.
//   - InDoubt counts the recipients in doubt (a pending report proves
//     nothing, so one with only that stays in doubt);
//     InDoubtWithoutReport those of them with no report at all.
//
// A report for a recipient recorded failed, unsent or suppressed is an
// anomaly: counted by [DeliverySummary.Anomalies], never as delivered.
type DeliveryCounts struct {
	Delivered            int `json:"delivered"`
	Undelivered          int `json:"undelivered"`
	Pending              int `json:"pending"`
	InDoubt              int `json:"in_doubt"`
	InDoubtWithoutReport int `json:"in_doubt_without_report"`
}

// DeliveryOf is the delivery r counts as, given ds, the latest report of
// each recipient (see [State.Deliveries]): a sent recipient with no
// report is Pending; any other without a report is NoReport.
func DeliveryOf(r Recipient, ds map[string]DeliveryRecord) Delivery {
	d, ok := ds[r.Phone]
	switch {
	case ok:
		return d.Delivery
	case r.Status == Sent:
		return Pending
	}
	return NoReport
}

// Add counts r.
func (c *DeliveryCounts) Add(r Recipient, ds map[string]DeliveryRecord) {
	switch r.Status {
	case Sent:
		switch DeliveryOf(r, ds) {
		case Delivered:
			c.Delivered++
		case Undelivered:
			c.Undelivered++
		default:
			c.Pending++
		}
	case InDoubt:
		c.InDoubt++
		if _, ok := ds[r.Phone]; !ok {
			c.InDoubtWithoutReport++
		}
	}
}

// DeliverySummary is what the provider reported of a campaign.
type DeliverySummary struct {
	DeliveryCounts
	// Reported: the campaign has at least one report. Without any, every
	// sent recipient is pending, which says nothing of the provider.
	Reported bool
	// Anomalies counts the recipients with a report that contradicts the
	// record (the provider delivered what smsform recorded unsent, failed
	// or suppressed).
	Anomalies int
	// Unmatched counts the reports of the state that were matched to no
	// recipient, of any campaign: nobody can tell which campaign they
	// were about.
	Unmatched int
	// ByCountry counts each country's recipients (ISO 3166, "001" for
	// non-geographical numbers, "??" when the number cannot be read).
	ByCountry map[string]*DeliveryCounts
	// Reasons counts the undelivered recipients by what the provider said
	// of them (its reason, else its status), as it wrote it: text from
	// outside, to be made visible before it is shown.
	Reasons map[string]int
	// UndeliveredPhones holds the numbers of the undelivered recipients, for
	// what their messages cost.
	UndeliveredPhones map[string]bool
}

// DeliverySummary reads what the provider reported of the campaign: its
// reports, walked with every recipient of its record. A campaign without
// any report reads quickly: Reported is false and the rest counts the
// record alone.
func (s *State) DeliverySummary(ctx context.Context) (DeliverySummary, error) {
	sum := DeliverySummary{ByCountry: map[string]*DeliveryCounts{}, Reasons: map[string]int{}, UndeliveredPhones: map[string]bool{}}
	ds, err := s.Deliveries(ctx)
	if err != nil {
		return sum, err
	}
	if sum.Unmatched, err = s.UnmatchedReports(ctx); err != nil {
		return sum, err
	}
	sum.Reported = len(ds) > 0
	for _, d := range ds {
		if d.Anomaly != "" {
			sum.Anomalies++
		}
	}
	norm := e164.NewNormalizer("")
	err = s.EachRecipient(ctx, func(r Recipient) error {
		if r.Status != Sent && r.Status != InDoubt {
			return nil // on the first axis only: nothing was delivered
		}
		sum.Add(r, ds)
		country := "??"
		if n, err := norm.Normalize(r.Phone); err == nil {
			country = n.Region
		}
		c := sum.ByCountry[country]
		if c == nil {
			c = &DeliveryCounts{}
			sum.ByCountry[country] = c
		}
		c.Add(r, ds)
		if r.Status == Sent && DeliveryOf(r, ds) == Undelivered {
			sum.UndeliveredPhones[r.Phone] = true
			sum.Reasons[undeliveredWords(ds[r.Phone])]++
		}
		return nil
	})
	return sum, err
}

// undeliveredWords is what the provider said of an undelivered message:
// its reason, else its status.
func undeliveredWords(d DeliveryRecord) string {
	if w := strings.TrimSpace(d.Reason); w != "" {
		return w
	}
	if w := strings.TrimSpace(d.ProviderStatus); w != "" {
		return w
	}
	return "(no reason given)"
}

// Countries is s.ByCountry's countries, the most recipients first.
func (s DeliverySummary) Countries() []string {
	out := make([]string, 0, len(s.ByCountry))
	for c := range s.ByCountry {
		out = append(out, c)
	}
	total := func(c *DeliveryCounts) int { return c.Delivered + c.Undelivered + c.Pending + c.InDoubt }
	slices.SortFunc(out, func(a, b string) int {
		if d := total(s.ByCountry[b]) - total(s.ByCountry[a]); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return out
}

// Anomalies counts the campaign's recipients whose reports contradict the
// record: what every plan and apply of the campaign warns of. One count,
// whatever the number of reports.
func (s *State) Anomalies(ctx context.Context) (int, error) {
	if s.db == nil || s.unscoped || s.schema < 5 || !s.recorded() {
		return 0, nil
	}
	var n int
	if err := s.db.QueryRowContext(ctx, s.q[qAnomalies], s.args()...).Scan(&n); err != nil {
		return 0, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return n, nil
}
