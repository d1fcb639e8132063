package plan

import (
	"github.com/smsform/smsform/internal/testharness"

	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

const header = "version: 1\nname: t\nsender: ACME\n"

func TestCompute(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		files   map[string]string
		want    Summary
		batches []int // recipients per batch, in order
	}{
		{
			name:    "duplicates across sources count once",
			yaml:    header + "recipients:\n  - numbers: [\"+447400123459\", \"+12015550133\"]\n  - file: l.txt\nbody: hi\n",
			files:   map[string]string{"l.txt": "+447400123459\n# comment\n\n+44 7400 123459\n+33612345702\n"},
			want:    Summary{Recipients: 3, ToSend: 3, Duplicates: 2, Batches: 1, Segments: 3},
			batches: []int{3},
		},
		{
			name:    "exclusions are dropped and counted",
			yaml:    header + "recipients:\n  - file: l.csv\nexclude:\n  - numbers: [\"+12015550133\", \"+19999\"]\nbody: hi {{ .name }}\n",
			files:   map[string]string{"l.csv": "phone,name\n+447400123459,Ann\n+12015550133,Ben\n"},
			want:    Summary{Recipients: 2, ToSend: 1, Excluded: 1, Batches: 1, Segments: 1},
			batches: []int{1},
		},
		{
			name:    "invalid numbers are skipped and counted",
			yaml:    header + "recipients:\n  - numbers: [\"+447400123459\", \"+4412\", \"hello\", \"07400123459\"]\nbody: hi\n",
			want:    Summary{Recipients: 1, ToSend: 1, Invalid: 3, Batches: 1, Segments: 1},
			batches: []int{1},
		},
		{
			name:    "national numbers with a default region",
			yaml:    header + "default_region: GB\nrecipients:\n  - numbers: [\"07400 123459\", \"+447400123459\"]\nbody: hi\n",
			want:    Summary{Recipients: 1, ToSend: 1, Duplicates: 1, Batches: 1, Segments: 1},
			batches: []int{1},
		},
		{
			name:    "same bodies group, then cut by batch_size",
			yaml:    header + "batch_size: 2\nrecipients:\n  - file: l.csv\nbody: \"{{ .greeting }}\"\n",
			files:   map[string]string{"l.csv": "phone,greeting\n+447400123459,hi\n+447400123564,yo\n+447400123669,hi\n+447400123774,hi\n"},
			want:    Summary{Recipients: 4, ToSend: 4, Batches: 3, Segments: 4},
			batches: []int{2, 1, 1},
		},
		{
			name:    "UCS-2 bodies cost more segments",
			yaml:    header + "recipients:\n  - numbers: [\"+447400123459\", \"+447400123564\"]\nbody: \"" + strings.Repeat("x", 70) + "“\"\n",
			want:    Summary{Recipients: 2, ToSend: 2, Batches: 1, Segments: 4},
			batches: []int{2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testharness.LoadCampaign(t, tt.yaml, tt.files)
			p, err := Compute(context.Background(), c, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.Summary != tt.want {
				t.Errorf("summary = %+v\nwant      %+v", p.Summary, tt.want)
			}
			var got []int
			for _, b := range p.AllBatches() {
				got = append(got, len(b.Recipients))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.batches) {
				t.Errorf("batch sizes = %v, want %v", got, tt.batches)
			}
			// The same inputs always give the same plan.
			again, err := Compute(context.Background(), c, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range p.AllBatches() {
				if p.AllBatches()[i].ID != again.AllBatches()[i].ID {
					t.Errorf("batch %d id %s then %s", i, p.AllBatches()[i].ID, again.AllBatches()[i].ID)
				}
			}
		})
	}
}

func TestComputeStrict(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"strict: true\nrecipients:\n  - file: l.txt\nbody: hi\n",
		map[string]string{"l.txt": "+447400123459\n+4412\n"})
	_, err := Compute(context.Background(), c, nil)
	var strict *StrictError
	if !errors.As(err, &strict) || len(strict.Invalid) != 1 || !strings.Contains(err.Error(), "l.txt:2") {
		t.Fatalf("err = %v, want a StrictError naming l.txt:2", err)
	}
}

func TestComputeTemplateErrorNamesTheRow(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\nbody: \"hi {{ .name }}\"\n",
		map[string]string{"l.csv": "phone,nom\n+447400123459,Ann\n"})
	_, err := Compute(context.Background(), c, nil)
	if err == nil || !strings.Contains(err.Error(), "l.csv:2") || !strings.Contains(err.Error(), "name") {
		t.Fatalf("err = %v, want the row l.csv:2 and the variable name", err)
	}
}

// TestComputeLarge checks that the parallel scan keeps file order over many
// chunks: batch recipients must come out in the order of the list.
func TestComputeLarge(t *testing.T) {
	var list strings.Builder
	list.WriteString("phone\n")
	var want []string
	for i := range 5000 {
		n := fmt.Sprintf("+4474001%05d", i)
		list.WriteString(n + "\n")
		want = append(want, n)
	}
	c := testharness.LoadCampaign(t, header+"batch_size: 1000\nrecipients:\n  - file: l.csv\nbody: hi\n", map[string]string{"l.csv": list.String()})
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range p.AllBatches() {
		got = append(got, b.Recipients...)
	}
	if p.Summary.Invalid != 0 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("recipients out of order or missing: %d of %d, %d invalid", len(got), len(want), p.Summary.Invalid)
	}
}
