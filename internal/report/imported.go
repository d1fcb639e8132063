package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

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
	Pending       int            `json:"pending"`
	PendingBy     map[string]int `json:"pending_by_status"`
	Resolved      int            `json:"resolved"`
	Anomalies     int            `json:"anomalies"`
}

// WriteImportedJSON writes what an import recorded as one JSON document.
func WriteImportedJSON(w io.Writer, im Imported) error {
	enc := json.NewEncoder(w)
	return enc.Encode(importedJSON{FormatVersion: "1", File: im.File, Lines: im.Lines, Reports: im.Reports, New: im.Reports - im.Duplicates,
		Duplicates: im.Duplicates, Unmatched: im.Unmatched, UnmatchedWhy: masked(im.UnmatchedWhy), Pending: im.Pending, PendingBy: masked(im.PendingStatuses),
		Resolved: im.Resolved, Anomalies: im.Anomalies})
}

// masked is counts with any number in their keys masked (a provider's
// words may quote one).
func masked(counts map[string]int) map[string]int {
	out := map[string]int{}
	for key, n := range counts {
		out[e164.MaskAny(key)] += n
	}
	return out
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
	if pending := masked(im.PendingStatuses); len(pending) > 0 {
		var each []string
		n := 0
		for _, status := range slices.Sorted(maps.Keys(pending)) {
			name := strconv.Quote(words.Clip(status, 40))
			if status == "" {
				name = "no status"
			}
			each = append(each, fmt.Sprintf("%s %s", words.Visible(name), words.Count(pending[status])))
			n += pending[status]
		}
		if n < im.Pending {
			each = append(each, fmt.Sprintf("other statuses %s", words.Count(im.Pending-n)))
		}
		fmt.Fprintf(w, "  %s pending, by the provider's status: %s. A status neither provider.reports.delivered nor .undelivered names is pending: if one of these means delivered or undelivered, name it there.\n",
			words.N(max(n, im.Pending), "new report", "new reports"), strings.Join(each, ", "))
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
