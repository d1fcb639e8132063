package plan

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipperhouse/displaywidth"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/state"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// writeCampaign writes a campaign file and its lists into a new folder and
// loads it.
func writeCampaign(t *testing.T, yaml string, files map[string]string) *campaign.Campaign {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := campaign.Load(path)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return c
}

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
			c := writeCampaign(t, tt.yaml, tt.files)
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
	c := writeCampaign(t, header+"strict: true\nrecipients:\n  - file: l.txt\nbody: hi\n",
		map[string]string{"l.txt": "+447400123459\n+4412\n"})
	_, err := Compute(context.Background(), c, nil)
	var strict *StrictError
	if !errors.As(err, &strict) || len(strict.Invalid) != 1 || !strings.Contains(err.Error(), "l.txt:2") {
		t.Fatalf("err = %v, want a StrictError naming l.txt:2", err)
	}
}

func TestComputeTemplateErrorNamesTheRow(t *testing.T) {
	c := writeCampaign(t, header+"recipients:\n  - file: l.csv\nbody: \"hi {{ .name }}\"\n",
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
	c := writeCampaign(t, header+"batch_size: 1000\nrecipients:\n  - file: l.csv\nbody: hi\n", map[string]string{"l.csv": list.String()})
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

func TestGolden(t *testing.T) {
	for _, ex := range []string{"announcement/announcement.yaml", "reminder/reminder.yaml"} {
		c, err := campaign.Load(filepath.Join("..", "examples", ex))
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(ex), ".yaml")
		// The reminder is planned as a first send: nothing at its state.
		var rec Recorded
		if name == "reminder" {
			rec = noState{"reminder.smsstate"}
		}
		p, err := Compute(context.Background(), c, rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			ext   string
			write func(*bytes.Buffer) error
		}{
			{"table.txt", func(b *bytes.Buffer) error { return WriteTable(b, p, Output{Width: 80}) }},
			{"md", func(b *bytes.Buffer) error { return WriteMarkdown(b, p, Output{}) }},
			{"json", func(b *bytes.Buffer) error { return WriteJSON(b, p, Output{}) }},
		} {
			var b bytes.Buffer
			if err := f.write(&b); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "golden", name+"."+f.ext), b.Bytes())
		}
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./plan -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test ./plan -update rewrites it):\n%s", path, got)
	}
}

func TestMasking(t *testing.T) {
	c := writeCampaign(t, header+"recipients:\n  - numbers: [\"+447400123459\", \"+4412345\"]\nbody: hi\n", nil)
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, show := range []bool{false, true} {
		for name, write := range map[string]func(*bytes.Buffer, *Plan, Output) error{
			"table":    func(b *bytes.Buffer, p *Plan, o Output) error { return WriteTable(b, p, o) },
			"markdown": func(b *bytes.Buffer, p *Plan, o Output) error { return WriteMarkdown(b, p, o) },
			"json":     func(b *bytes.Buffer, p *Plan, o Output) error { return WriteJSON(b, p, o) },
		} {
			var b bytes.Buffer
			if err := write(&b, p, Output{ShowNumbers: show}); err != nil {
				t.Fatal(err)
			}
			has := strings.Contains(b.String(), "+447400123459") || strings.Contains(b.String(), "+4412345")
			if has != show {
				t.Errorf("%s with ShowNumbers=%v: whole numbers shown = %v", name, show, has)
			}
		}
	}
}

// personalisedPlan plans n recipients, each with its own body "code N".
func personalisedPlan(t *testing.T, n int) *Plan {
	t.Helper()
	var list strings.Builder
	list.WriteString("phone,n\n")
	for i := range n {
		fmt.Fprintf(&list, "+4474001%05d,%d\n", i, i)
	}
	c := writeCampaign(t, header+"recipients:\n  - file: l.csv\nbody: \"code {{ .n }}\"\n", map[string]string{"l.csv": list.String()})
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMarkdownCutsTheMiddle(t *testing.T) {
	p := personalisedPlan(t, 3000)
	var b bytes.Buffer
	if err := WriteMarkdown(&b, p, Output{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if len(out) > githubCommentLimit {
		t.Fatalf("markdown is %d bytes, over GitHub's %d", len(out), githubCommentLimit)
	}
	if !strings.HasPrefix(out, "**"+Headline(p)+"**") {
		t.Errorf("the headline must stay at the top; got %q", out[:80])
	}
	for _, want := range []string{"left out to fit GitHub's comment limit", "code 0\n", "code 2999\n", "</details>"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if strings.Contains(out, "code 1500\n") {
		t.Errorf("the middle should have been cut")
	}
}

func TestSavedPlan(t *testing.T) {
	c := writeCampaign(t, header+"recipients:\n  - file: l.txt\nbody: hi\n", map[string]string{"l.txt": "+447400123459\n"})
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := NewSaved(p, "test", c.Path, "", c.Files())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p.plan")
	if err := Save(path, saved); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("plan file mode %v, want 0600: it holds phone numbers", fi.Mode().Perm())
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != saved.ID || back.Plan.Batches[0].Recipients[0] != "+447400123459" || len(back.Files) != 2 {
		t.Fatalf("round trip lost data: %+v", back)
	}
	if err := back.CheckFiles(); err != nil {
		t.Fatalf("unchanged files: %v", err)
	}

	raw, _ := os.ReadFile(path)
	damaged := func(name string, data []byte) {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.plan")
			os.WriteFile(p, data, 0o600)
			if _, err := Load(p); !errors.Is(err, ErrNotPlan) {
				t.Fatalf("err = %v, want ErrNotPlan", err)
			}
		})
	}
	damaged("truncated", raw[:len(raw)/2])
	damaged("empty", nil)
	damaged("not gzip", []byte("version: 1\n"))
	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 0xff
	damaged("a flipped byte", flipped)

	os.WriteFile(c.Files()[1], []byte("+447400123564\n"), 0o644)
	if err := back.CheckFiles(); !errors.Is(err, ErrCampaignChanged) || !strings.Contains(err.Error(), "l.txt") {
		t.Fatalf("edited list: err = %v, want ErrCampaignChanged naming l.txt", err)
	}
}

// TestGoldenMarkdownCut pins the shape of a comment cut to fit: headline and
// first batches, the note, the last batches, the footer.
func TestGoldenMarkdownCut(t *testing.T) {
	p := personalisedPlan(t, 40)
	var b bytes.Buffer
	if err := WriteMarkdown(&b, p, Output{MarkdownLimit: 2000}); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 2000 {
		t.Fatalf("%d bytes, over the 2000 asked", b.Len())
	}
	checkGolden(t, filepath.Join("testdata", "golden", "cut.md"), b.Bytes())
}

// FuzzDecodeSaved feeds arbitrary bytes to the plan-file reader: it must
// return a plan or an ErrNotPlan, never panic. Seeds: a real plan file and
// the broken ones of the catalogue.
func FuzzDecodeSaved(f *testing.F) {
	b := newBatch("hi", "+447400123459")
	p := &Plan{Campaign: "t", Sender: "ACME", Summary: Summary{Batches: 1, ToSend: 1}, Batches: []Batch{b}}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	json.NewEncoder(zw).Encode(&Saved{FormatVersion: FormatVersion, ID: "x", Plan: p})
	zw.Close()
	f.Add(buf.Bytes())
	bad, _ := filepath.Glob(filepath.Join("..", "testdata", "bad", "*.plan"))
	for _, path := range bad {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := openSaved("fuzz.plan", bytes.NewReader(data), nil)
		if err != nil && !errors.Is(err, ErrNotPlan) {
			t.Fatalf("error %v is not ErrNotPlan", err)
		}
		if err == nil && (s.Plan == nil || s.ID == "") {
			t.Fatalf("accepted a plan without content")
		}
	})
}

// TestWriteJSONIsOneDocument checks the streamed JSON against encoding the
// same plan at once, with no batch, one, and several.
func TestWriteJSONIsOneDocument(t *testing.T) {
	for _, n := range []int{0, 1, 7} {
		computed := personalisedPlan(t, max(n, 1))
		p := *computed
		p.Batches, p.Summary.Batches = computed.AllBatches()[:n], n
		p.cut = nil
		var b bytes.Buffer
		if err := WriteJSON(&b, &p, Output{}); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			FormatVersion string `json:"format_version"`
			Batches       []struct{ ID string }
		}
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatalf("%d batches: not JSON: %v\n%s", n, err, b.String())
		}
		if doc.FormatVersion != FormatVersion || len(doc.Batches) != n {
			t.Fatalf("%d batches: got %+v", n, doc)
		}
	}
}

// noState is what state.OpenReadOnly returns where there is no state.
type noState struct{ path string }

func (n noState) Path() string    { return n.path }
func (n noState) Lineage() string { return "" }
func (n noState) Serial() int64   { return 0 }
func (n noState) EachRecipient(context.Context, func(state.Recipient) error) error {
	return nil
}

// TestTableFitsWidth: the batch table fits the width it is given by cutting
// the body preview, never by wrapping; with no width the preview is whole.
func TestTableFitsWidth(t *testing.T) {
	p := reminderPlan(t)
	for _, width := range []int{75, 80, 120, 200} {
		var b bytes.Buffer
		if err := WriteTable(&b, p, Output{Width: width}); err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(b.String()) {
			if strings.HasPrefix(line, "│") || strings.HasPrefix(line, "┌") {
				if w := displaywidth.String(strings.TrimRight(line, "\n")); w > width {
					t.Errorf("width %d: a table line is %d wide: %s", width, w, line)
				}
			}
		}
	}
	var wide bytes.Buffer
	if err := WriteTable(&wide, p, Output{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(wide.String(), "with Dr Okafor. Reply C to cancel.") {
		t.Errorf("with no width the body is not whole:\n%s", wide.String())
	}
}

// TestPlainTable: off a terminal, tables are aligned columns without rules
// or trailing spaces.
func TestPlainTable(t *testing.T) {
	p := reminderPlan(t)
	var b bytes.Buffer
	if err := WriteTable(&b, p, Output{Width: 80, Plain: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "\nBATCH               RECIPIENTS  ENCODING  SEGMENTS    BODY\nb-") {
		t.Errorf("no plain header:\n%s", out)
	}
	for line := range strings.Lines(out) {
		if strings.ContainsAny(line, "│┌─") || strings.HasSuffix(line, " \n") {
			t.Errorf("ruled or padded line %q", line)
		}
	}
}

// TestTableColour: the summary line is bold only when colour is asked for.
func TestTableColour(t *testing.T) {
	p := reminderPlan(t)
	var plain, coloured bytes.Buffer
	WriteTable(&plain, p, Output{})
	WriteTable(&coloured, p, Output{Colour: true})
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("colour without asking:\n%q", plain.String())
	}
	if !strings.Contains(coloured.String(), "\x1b[1mPlan: 6 messages") {
		t.Errorf("no bold summary:\n%q", coloured.String())
	}
}

// reminderPlan is the plan of examples/reminder, with no state.
func reminderPlan(t *testing.T) *Plan {
	t.Helper()
	c, err := campaign.Load(filepath.Join("..", "examples", "reminder", "reminder.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
