package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/smsform/smsform/receive"
)

// TestImported: what reports import recorded, for a person and as JSON;
// text from outside (the file's name, the state's reasons) reaches the
// terminal escaped and without numbers.
func TestImported(t *testing.T) {
	im := Imported{File: "exports/dlr\x1b[31m.csv", Imported: receive.Imported{Lines: 1310, Reports: 1310, Duplicates: 10, Unmatched: 3,
		UnmatchedWhy: map[string]int{"no message went to +447400123456 in the 7 days before the report": 2, "id\nnone": 1}, Resolved: 1, Anomalies: 2,
		PendingStatuses: map[string]int{"DELIVRD": 4, "": 1, "ok \x1b[2J to +447400123457": 1}, Pending: 8}}
	var b bytes.Buffer
	if err := WriteImported(&b, im); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"Imported 1,310 reports from exports/dlr\\x1b[31m.csv (1,310 lines): 1,300 new, 10 already recorded.",
		"  3 reports matched no message of the state:",
		`    id\nnone: 1`,
		"  1 recipient in doubt resolved as sent by its report.",
		"  2 reports for recipients recorded unsent or failed",
		`  8 new reports pending, by the provider's status: no status 1, "DELIVRD" 4, "ok \x1b[2J to +•••••••••457" 1, other statuses 2. A status neither provider.reports.delivered nor .undelivered names is pending`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("%s\ndoes not say %q", text, want)
		}
	}
	if strings.Contains(text, "\x1b") || strings.Contains(text, "400123456") {
		t.Errorf("raw control or a number:\n%q", text)
	}
	b.Reset()
	if err := WriteImportedJSON(&b, im); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || got["new"] != 1300.0 || got["duplicates"] != 10.0 || got["format_version"] != "1" ||
		got["pending_by_status"].(map[string]any)["DELIVRD"] != 4.0 || strings.Contains(b.String(), "400123456") {
		t.Errorf("JSON: %s (%v)", b.String(), err)
	}
}
