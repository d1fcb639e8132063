package report

import (
	"fmt"
	"io"
	"time"

	"github.com/clipperhouse/displaywidth"
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
}

// Recipients walks a state's records, calling fn with each.
type Recipients func(fn func(state.Recipient) error) error

type stateListJSON struct {
	FormatVersion string               `json:"format_version"`
	Campaign      string               `json:"campaign"`
	Lineage       string               `json:"lineage"`
	Serial        int64                `json:"serial"`
	Counts        map[state.Status]int `json:"counts"`
	Recipients    []stateRecipientJSON `json:"recipients"` // empty: streamed in its place
}

type stateRecipientJSON struct {
	Phone    string       `json:"phone"`
	Status   state.Status `json:"status"`
	BatchID  string       `json:"batch"`
	BodyHash string       `json:"body_sha256"`
	At       time.Time    `json:"at"`
	Reason   string       `json:"reason,omitempty"`
}

// WriteStateTable writes the state's counts and a line per recipient, in
// the order walk gives them.
func WriteStateTable(w io.Writer, l StateList, walk Recipients, o Output) error {
	sent, failed, inDoubt := l.Counts[state.Sent], l.Counts[state.Failed], l.Counts[state.InDoubt]
	fmt.Fprintf(w, "State %s: campaign %s, lineage %s, serial %d\n%d sent, %d failed, %d in doubt\n\n",
		l.Path, l.Campaign, l.Lineage, l.Serial, sent, failed, inDoubt)
	// Columns of fixed width, written as the recipients stream in (a
	// table that measured them first would hold them all); a line longer
	// than o.Width has its reason cut.
	const row = "%-16s  %-8s  %-18s  %-20s"
	if sent+failed+inDoubt > 0 {
		fmt.Fprintf(w, row+"  %s\n", "PHONE", "STATUS", "BATCH", "AT", "REASON")
	}
	return walk(func(r state.Recipient) error {
		line := fmt.Sprintf(row, o.number(r.Phone), r.Status, r.BatchID, r.At.UTC().Format(time.RFC3339))
		if r.Reason != "" {
			line += "  " + r.Reason
			if o.Width > 0 {
				line = displaywidth.TruncateString(line, o.Width, "…")
			}
		}
		_, err := fmt.Fprintln(w, line)
		return err
	})
}

// WriteStateJSON writes the state as one JSON document whose recipients,
// in the order walk gives them, are streamed one by one: memory does not
// grow with the state.
func WriteStateJSON(w io.Writer, l StateList, walk Recipients, o Output) error {
	doc := stateListJSON{FormatVersion: plan.FormatVersion, Campaign: l.Campaign, Lineage: l.Lineage, Serial: l.Serial,
		Counts: map[state.Status]int{state.Sent: l.Counts[state.Sent], state.Failed: l.Counts[state.Failed], state.InDoubt: l.Counts[state.InDoubt]}}
	doc.Recipients = []stateRecipientJSON{}
	return streamJSON(w, doc, "recipients", true, func(add func(any) error) error {
		return walk(func(r state.Recipient) error {
			return add(stateRecipientJSON{Phone: o.number(r.Phone), Status: r.Status,
				BatchID: r.BatchID, BodyHash: r.BodyHash, At: r.At, Reason: r.Reason})
		})
	})
}
