package exitcode

import (
	"slices"
	"testing"
)

// TestTable holds the table to what its users rely on: codes in increasing
// order, each once, each with a name and a meaning of its own.
func TestTable(t *testing.T) {
	codes := All()
	if len(codes) != 8 {
		t.Errorf("All() = %v: want the 8 codes 0-6 and 130", codes)
	}
	if !slices.IsSorted(codes) || len(slices.Compact(slices.Clone(codes))) != len(codes) {
		t.Errorf("All() = %v: want each code once, in increasing order", codes)
	}
	names, meanings := map[string]Code{}, map[string]Code{}
	for _, c := range codes {
		if c.Name() == "" || c.Meaning() == "" {
			t.Errorf("code %d has name %q, meaning %q: want both", c, c.Name(), c.Meaning())
		}
		if prev, ok := names[c.Name()]; ok {
			t.Errorf("codes %d and %d share the name %q", prev, c, c.Name())
		}
		if prev, ok := meanings[c.Meaning()]; ok {
			t.Errorf("codes %d and %d share a meaning", prev, c)
		}
		names[c.Name()], meanings[c.Meaning()] = c, c
	}
	if got := Code(7).Meaning(); got != "" {
		t.Errorf("Code(7).Meaning() = %q: want \"\" for a code smsform never returns", got)
	}
	if Interrupted != 130 || Code(Incomplete).Name() != "incomplete" {
		t.Errorf("Interrupted = %d, Code(Incomplete).Name() = %q: scripts rely on 130 and the names", Interrupted, Code(Incomplete).Name())
	}
}
