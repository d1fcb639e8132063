package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/clipperhouse/displaywidth"

	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
)

// OptOutList is what `optout list` shows of a project besides its opt-outs.
type OptOutList struct {
	Project string // the project file
	State   string // where the state is, as it may be shown
}

// OptOuts walks a project's opt-outs, calling fn with each.
type OptOuts func(fn func(ledger.OptOut) error) error

type optOutListJSON struct {
	FormatVersion string       `json:"format_version"`
	Project       string       `json:"project"`
	State         string       `json:"state"`
	OptOuts       []optOutJSON `json:"opt_outs"` // empty: streamed in its place
}

type optOutJSON struct {
	Phone  string    `json:"phone"`
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	Source string    `json:"source,omitempty"` // "reply": the number replied a stop word
}

// WriteOptOutTable writes a line per opt-out, in the order walk gives
// them, then how many there are. Like the state's list, its columns have
// fixed widths, so that a million opt-outs stream through, and a reason
// that does not fit o.Width goes on a line of its own.
func WriteOptOutTable(w io.Writer, l OptOutList, walk OptOuts, o Output) error {
	o = o.forPeople(true) // opt-outs come sorted by number
	fmt.Fprintf(w, "Opt-outs of project %s\nState %s\n\n", oneLine(l.Project), oneLine(l.State))
	const row = "%-16s  %-16s  %-24s"
	n := 0
	err := walk(func(x ledger.OptOut) error {
		if n == 0 {
			fmt.Fprintln(w, cutLine(fmt.Sprintf(row+"  %s", "PHONE", "SINCE (UTC)", "BY", "REASON"), o.Width))
		}
		n++
		line := fmt.Sprintf(row, o.number(x.Phone), x.At.UTC().Format("2006-01-02 15:04"), oneLine(x.By))
		// The BY column keeps its width before a reason (the header's).
		if reason := oneLine(o.text(x.Reason, x.Phone)); reason != "" && (o.Width <= 0 || displaywidth.String(line)+2+displaywidth.String(reason) <= o.Width) {
			line += "  " + reason
		} else if reason != "" {
			_, err := fmt.Fprintf(w, "%s\n    %s\n", cutLine(strings.TrimRight(line, " "), o.Width), cutLine(reason, max(o.Width-4, 3)))
			return err
		} else {
			line = strings.TrimRight(line, " ")
		}
		_, err := fmt.Fprintln(w, cutLine(line, o.Width))
		return err
	})
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Fprintln(w)
	}
	_, err = fmt.Fprintf(w, "%s opted out.\n", words.N(n, "number", "numbers"))
	return err
}

// WriteOptOutJSON writes the opt-outs as one JSON document whose list is
// streamed one by one: memory does not grow with the opt-outs.
func WriteOptOutJSON(w io.Writer, l OptOutList, walk OptOuts, o Output) error {
	doc := optOutListJSON{FormatVersion: plan.FormatVersion, Project: l.Project, State: l.State, OptOuts: []optOutJSON{}}
	return streamJSON(w, doc, "opt_outs", true, func(add func(any) error) error {
		return walk(func(x ledger.OptOut) error {
			return add(optOutJSON{Phone: o.number(x.Phone), At: x.At.UTC(), By: x.By, Reason: o.text(x.Reason, x.Phone), Source: x.Source})
		})
	})
}
