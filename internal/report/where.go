package report

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// StateWhere is which state a campaign's commands use, and why.
type StateWhere struct {
	Campaign string `json:"campaign"`
	Location string `json:"location"` // a password masked
	From     string `json:"from"`     // in words: "--state", "state in /repo/smsform.yaml:2"…
	Source   string `json:"source"`   // --state, SMSFORM_STATE, project or default
	Project  string `json:"project,omitempty"`
	Shared   bool   `json:"shared"` // the project's state, holding its every campaign
	Postgres bool   `json:"postgres"`
	// What the state records of the campaign; Lineage "" when nothing.
	Lineage      string       `json:"lineage"`
	Serial       int64        `json:"serial"`
	Moved        *state.Moved `json:"moved,omitempty"`
	Paused       *state.Pause `json:"paused,omitempty"`
	SecondLedger string       `json:"second_ledger,omitempty"` // a file next to the campaign that records it too
}

// WriteStateWhere writes w for a person. Every value in it may come from
// outside (a path, a URL, a project's folder, who paused and why), so each
// goes through [oneLine].
func WriteStateWhere(out io.Writer, w StateWhere) error {
	kind := "a file"
	if w.Postgres {
		kind = "PostgreSQL"
	}
	if w.Shared {
		kind += ", shared by the campaigns of " + oneLine(w.Project)
	}
	fmt.Fprintf(out, "%s\n  campaign: %s\n  from:     %s\n  kind:     %s\n", oneLine(w.Location), oneLine(w.Campaign), oneLine(w.From), kind)
	switch {
	case w.Lineage == "":
		fmt.Fprintf(out, "  record:   none yet (the first apply creates it)\n")
	default:
		fmt.Fprintf(out, "  record:   lineage %s, serial %d\n", oneLine(w.Lineage), w.Serial)
	}
	if m := w.Moved; m != nil {
		fmt.Fprintf(out, "  moved:    to %s on %s by %s: kept only to read\n", oneLine(m.To), m.At.UTC().Format(time.RFC3339), oneLine(m.By))
	}
	if p := w.Paused; p != nil {
		fmt.Fprintf(out, "  paused:   by %s at %s: %s\n", oneLine(p.By), p.At.UTC().Format(time.RFC3339), oneLine(p.Reason))
	}
	if w.SecondLedger != "" {
		fmt.Fprintf(out, "  warning:  %s\n", oneLine(w.SecondLedger))
	}
	return nil
}

// WriteStateWhereJSON writes w as one JSON document.
func WriteStateWhereJSON(out io.Writer, w StateWhere) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Version string `json:"format_version"`
		StateWhere
	}{plan.FormatVersion, w})
}
