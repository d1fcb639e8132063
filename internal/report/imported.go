package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/receive"
)

// Imported is what `smsform reports import` says of one file.
type Imported struct {
	File string
	receive.Imported
}

type importedJSON struct {
	FormatVersion string         `json:"format_version"`
	File          string         `json:"file"`
	Lines         int            `json:"lines"`
	Reports       int            `json:"reports"`
	New           int            `json:"new"`
	Duplicates    int            `json:"duplicates"`
	Unmatched     int            `json:"unmatched"`
	UnmatchedWhy  map[string]int `json:"unmatched_by_reason"`
	Resolved      int            `json:"resolved"`
	Anomalies     int            `json:"anomalies"`
}

// WriteImportedJSON writes what an import recorded as one JSON document.
func WriteImportedJSON(w io.Writer, im Imported) error {
	why := map[string]int{}
	for reason, n := range im.UnmatchedWhy {
		why[e164.MaskAny(reason)] += n
	}
	enc := json.NewEncoder(w)
	return enc.Encode(importedJSON{FormatVersion: "1", File: im.File, Lines: im.Lines, Reports: im.Reports, New: im.Reports - im.Duplicates,
		Duplicates: im.Duplicates, Unmatched: im.Unmatched, UnmatchedWhy: why, Resolved: im.Resolved, Anomalies: im.Anomalies})
}

// WriteImported writes what an import recorded, for a person: what was
// new, what was known already, and what needs a look.
func WriteImported(w io.Writer, im Imported) error {
	fresh := im.Reports - im.Duplicates
	_, err := fmt.Fprintf(w, "Imported %s from %s (%s): %s new, %s already recorded.\n", words.N(im.Reports, "report", "reports"),
		words.Visible(im.File), words.N(im.Lines, "line", "lines"), words.Count(fresh), words.Count(im.Duplicates))
	if err != nil {
		return err
	}
	if im.Unmatched > 0 {
		fmt.Fprintf(w, "  %s matched no message of the state:\n", words.N(im.Unmatched, "report", "reports"))
		for _, reason := range slices.Sorted(maps.Keys(im.UnmatchedWhy)) {
			fmt.Fprintf(w, "    %s: %s\n", words.Visible(e164.MaskAny(reason)), words.Count(im.UnmatchedWhy[reason]))
		}
	}
	if im.Resolved > 0 {
		fmt.Fprintf(w, "  %s in doubt resolved as sent by %s.\n", words.N(im.Resolved, "recipient", "recipients"), words.Plural(im.Resolved, "its report", "their reports"))
	}
	if im.Anomalies > 0 {
		fmt.Fprintf(w, "  %s for recipients recorded unsent or failed: the provider delivered what smsform did not send; plan and apply show them.\n",
			words.N(im.Anomalies, "report", "reports"))
	}
	return nil
}
