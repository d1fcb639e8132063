package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/smsform/smsform/plan"
)

// A plan that apply will refuse says so before any count in every format,
// text from outside (a state's reason) escaped, a command to paste in
// code; and its headline never reads as a first send.
func TestRefusalFirst(t *testing.T) {
	p := planOf(t, "held")
	p.Refusal = &plan.Refusal{Kind: plan.RefusedSplitLedger,
		Reason: "old.smsstate records campaign winter-sale (serial 3) and was not migrated\x1b]0;x\x07",
		Fix:    "smsform state migrate c.yaml --from old.smsstate --to .smsform/smsform.smsstate"}

	var b bytes.Buffer
	if err := WriteTable(&b, p, Output{Plain: true}); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(b.String(), "\n")
	if !strings.HasPrefix(first, "Apply will refuse this plan: old.smsstate records campaign winter-sale") ||
		!strings.HasSuffix(first, "To settle it: smsform state migrate c.yaml --from old.smsstate --to .smsform/smsform.smsstate.") {
		t.Errorf("table's first line: %q", first)
	}
	if strings.Contains(b.String(), "\x1b") || strings.Contains(b.String(), "first send") {
		t.Errorf("table: raw control or a first send:\n%s", b.String())
	}

	b.Reset()
	if err := WriteMarkdown(&b, p, Output{}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.Lines(b.String()) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 4 || lines[0] != "> [!CAUTION]" || !strings.HasPrefix(lines[1], "> **Apply will refuse this plan:** old.smsstate") ||
		lines[3] != "> To settle it: `smsform state migrate c.yaml --from old.smsstate --to .smsform/smsform.smsstate`" {
		t.Errorf("markdown starts:\n%s", strings.Join(lines[:min(4, len(lines))], "\n"))
	}
	if strings.Contains(b.String(), "First send") || strings.Contains(b.String(), "\x1b") {
		t.Errorf("markdown reads as a first send, or holds a raw control")
	}

	b.Reset()
	if err := WriteJSON(&b, p, Output{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Refusal *plan.Refusal `json:"refusal"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || doc.Refusal == nil || doc.Refusal.Kind != plan.RefusedSplitLedger || !strings.HasPrefix(doc.Refusal.Fix, "smsform state migrate") {
		t.Errorf("JSON refusal: %+v (%v)", doc.Refusal, err)
	}

	// Without a refusal, JSON has none.
	p.Refusal = nil
	b.Reset()
	if err := WriteJSON(&b, p, Output{}); err != nil || strings.Contains(b.String(), `"refusal"`) {
		t.Errorf("JSON without a refusal: %v\n%s", err, b.String())
	}
}
