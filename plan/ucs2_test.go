package plan

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/smsform/smsform/internal/testharness"
)

// TestTemplateForcesUCS2Once: a ’ or – in the template's own text sends
// every message as UCS-2 whatever the variables hold, and the plan says so
// once, with the messages and the segments it costs, rather than once per
// set of characters among the distinct bodies (issue 40.6). A character
// that only a variable or a branch prints is still named per set.
func TestTemplateForcesUCS2Once(t *testing.T) {
	var list strings.Builder
	list.WriteString("phone,name\n")
	for i := range 40 {
		name := "Ann"
		if i == 3 {
			name = "Łukasz"
		}
		fmt.Fprintf(&list, "+4474001%05d,%s%d\n", i, name, i)
	}
	for _, tt := range []struct {
		body string
		want []string
	}{
		{"Hi {{ .name }}, here’s your code – see you", []string{"the template forces UCS-2 ('’' '–' in its own text) for all 40 messages: 0 more segments"}},
		{"Hi {{ .name }}, here’s your code – see you and many thanks for all your custom over the years, dear", []string{
			"the template forces UCS-2 ('’' '–' in its own text) for all 40 messages: 40 more segments"}},
		{"Hi {{ .name }}{{ if false }} – {{ end }}", []string{"1 distinct body uses 'Ł', not in GSM-7: sent as UCS-2, costing 0 more segments in all"}},
	} {
		c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\nbody: \""+tt.body+"\"\n", map[string]string{"l.csv": list.String()})
		p, err := Compute(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ucs2 []string
		for _, w := range p.Warnings {
			if strings.Contains(w, "UCS-2") {
				ucs2 = append(ucs2, w)
			}
		}
		if strings.Join(ucs2, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("body %q: UCS-2 warnings\n%s\nwant\n%s", tt.body, strings.Join(ucs2, "\n"), strings.Join(tt.want, "\n"))
		}
	}
}

// TestDuplicateSaysWhenVariablesDiffer: a number listed twice is sent the
// first row's message; the plan says when the row dropped has other
// variables, which a reviewer must see (issue 40.6).
func TestDuplicateSaysWhenVariablesDiffer(t *testing.T) {
	list := "phone,name\n+447400123459,Ann\n+447400123459,Ann\n+447400123564,Ben\n+447400123564,Bob\n"
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\nbody: \"Hi {{ .name }}\"\n", map[string]string{"l.csv": list})
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.DuplicateRows) != 2 || p.DuplicateRows[0].Differs || !p.DuplicateRows[1].Differs {
		t.Errorf("duplicates %+v: want the second row of Ann the same, of Ben different", p.DuplicateRows)
	}
}
