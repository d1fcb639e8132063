package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/clipperhouse/displaywidth"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// StateList is what `state list` shows of a state besides its recipients.
type StateList struct {
	Path     string // where the state is, as it may be shown
	Campaign string
	Lineage  string
	Serial   int64
	Counts   map[state.Status]int
	Moved    *state.Moved // set when state migrate copied the record elsewhere
	// Deliveries is the latest report of each recipient that has one;
	// nil when the campaign has no report, and then no delivery is shown.
	Deliveries map[string]state.DeliveryRecord
	// InDoubtWithoutReport counts the recipients in doubt with no report
	// (see state.DeliveryCounts).
	InDoubtWithoutReport int
}

// Recipients walks a state's records, calling fn with each.
type Recipients func(fn func(state.Recipient) error) error

type stateListJSON struct {
	FormatVersion string               `json:"format_version"`
	Campaign      string               `json:"campaign"`
	Lineage       string               `json:"lineage"`
	Serial        int64                `json:"serial"`
	Counts        map[state.Status]int `json:"counts"`
	Moved         *state.Moved         `json:"moved,omitempty"`
	// InDoubtWithoutReport: of counts.in_doubt, those with no delivery
	// report.
	InDoubtWithoutReport int                  `json:"in_doubt_without_report"`
	Recipients           []stateRecipientJSON `json:"recipients"` // empty: streamed in its place
}

type stateRecipientJSON struct {
	Phone    string       `json:"phone"`
	Status   state.Status `json:"status"`
	BatchID  string       `json:"batch"`
	BodyHash string       `json:"body_sha256"`
	At       time.Time    `json:"at"`
	Reason   string       `json:"reason,omitempty"`
	// What the provider said: the status it gave (when not plainly sent),
	// its id for the message and for the request.
	ProviderStatus  string `json:"provider_status,omitempty"`
	ProviderID      string `json:"provider_id,omitempty"`
	ProviderBatchID string `json:"provider_batch_id,omitempty"`
	// What the provider reported since (only when the campaign has
	// reports): delivered, undelivered or pending, and its words.
	Delivery       string `json:"delivery,omitempty"`
	DeliveryReason string `json:"delivery_reason,omitempty"`
}

// delivery is r's delivery as shown, and the provider's words of it; ""
// when the campaign has no report.
func (l StateList) delivery(r state.Recipient) (string, string) {
	if l.Deliveries == nil {
		return "", ""
	}
	d := state.DeliveryOf(r, l.Deliveries)
	rec := l.Deliveries[r.Phone]
	why := rec.Reason
	if why == "" && d == state.Undelivered {
		why = rec.ProviderStatus
	}
	return d.String(), why
}

// WriteStateTable writes the state's counts and a line per recipient, in
// the order walk gives them. Its columns have fixed widths, so that lines
// are written as the recipients stream in (a table that measured them
// first would hold them all); a reason that does not fit o.Width after
// the other columns goes on a line of its own, cut to the width there.
func WriteStateTable(w io.Writer, l StateList, walk Recipients, o Output) error {
	o = o.forPeople(true) // the table is sorted by number
	sent, failed, inDoubt, suppressed := l.Counts[state.Sent], l.Counts[state.Failed], l.Counts[state.InDoubt], l.Counts[state.Suppressed]
	if m := l.Moved; m != nil {
		fmt.Fprintf(w, "Moved to %s on %s by %s (serial %d): this record is kept only to read.\n\n", oneLine(m.To), m.At.UTC().Format(time.RFC3339), oneLine(m.By), m.Serial)
	}
	fmt.Fprintf(w, "State %s\nCampaign %s, lineage %s, serial %d\n%s sent, %s failed, %s in doubt",
		oneLine(l.Path), oneLine(l.Campaign), l.Lineage, l.Serial, words.Count(sent), words.Count(failed), words.Count(inDoubt))
	if inDoubt > 0 {
		fmt.Fprintf(w, " (%s with no delivery report)", words.Count(l.InDoubtWithoutReport))
	}
	if suppressed > 0 {
		fmt.Fprintf(w, ", %s suppressed (opted out)", words.Count(suppressed))
	}
	fmt.Fprint(w, "\n\n")
	// The delivery column is there only when the campaign has reports:
	// without any, "pending" everywhere would say nothing. It stands
	// beside the status, and its columns are one space apart, so that a
	// line still fits 80 columns (79 before a reason).
	row, cols := "%-16s  %-10s  %-18s  %-20s", []any{"PHONE", "STATUS", "BATCH", "AT"}
	if l.Deliveries != nil {
		row, cols = "%-16s %-10s %-11s %-18s %-20s", []any{"PHONE", "STATUS", "DELIVERY", "BATCH", "AT"}
	}
	if sent+failed+inDoubt+suppressed > 0 {
		head := fmt.Sprintf(row, cols...) + "  REASON"
		if o.Width > 0 && displaywidth.String(head) > o.Width {
			head = fmt.Sprintf(row, cols...) // a reason then goes on a line of its own
		}
		fmt.Fprintln(w, cutLine(strings.TrimRight(head, " "), o.Width))
	}
	return walk(func(r state.Recipient) error {
		d, why := l.delivery(r)
		r = o.recipient(r)
		at := r.At.UTC().Format(time.RFC3339)
		cells := []any{r.Phone, r.Status, r.BatchID, at}
		if l.Deliveries != nil {
			cells = []any{r.Phone, r.Status, d, r.BatchID, at}
		}
		line := strings.TrimRight(fmt.Sprintf(row, cells...), " ")
		reason := r.Reason
		if reason == "" {
			reason = e164.MaskAny(why) // the provider's words, from outside
		}
		if reason := oneLine(reason); reason != "" {
			if o.Width > 0 && displaywidth.String(line)+2+displaywidth.String(reason) > o.Width {
				// Too long for the line: the reason, what a reader came
				// for, goes on a line of its own, cut only there.
				_, err := fmt.Fprintf(w, "%s\n    %s\n", cutLine(line, o.Width), cutLine(reason, max(o.Width-4, 3)))
				return err
			}
			line += "  " + reason
		}
		_, err := fmt.Fprintln(w, cutLine(line, o.Width))
		return err
	})
}

// WriteStateJSON writes the state as one JSON document whose recipients,
// in the order walk gives them, are streamed one by one: memory does not
// grow with the state.
func WriteStateJSON(w io.Writer, l StateList, walk Recipients, o Output) error {
	doc := stateListJSON{FormatVersion: plan.FormatVersion, Campaign: l.Campaign, Lineage: l.Lineage, Serial: l.Serial, Moved: l.Moved,
		InDoubtWithoutReport: l.InDoubtWithoutReport,
		Counts: map[state.Status]int{state.Sent: l.Counts[state.Sent], state.Failed: l.Counts[state.Failed], state.InDoubt: l.Counts[state.InDoubt],
			state.Suppressed: l.Counts[state.Suppressed]}}
	doc.Recipients = []stateRecipientJSON{}
	return streamJSON(w, doc, "recipients", true, func(add func(any) error) error {
		return walk(func(r state.Recipient) error {
			d, why := l.delivery(r)
			if !o.ShowNumbers {
				why = e164.MaskAny(why)
			}
			r = o.recipient(r)
			return add(stateRecipientJSON{Phone: r.Phone, Status: r.Status,
				BatchID: r.BatchID, BodyHash: r.BodyHash, At: r.At, Reason: r.Reason,
				ProviderStatus: r.ProviderStatus, ProviderID: r.ProviderID, ProviderBatchID: r.ProviderBatchID,
				Delivery: d, DeliveryReason: why})
		})
	})
}
