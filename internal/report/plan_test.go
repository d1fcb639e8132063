package report

import (
	"github.com/smsform/smsform/internal/testharness"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipperhouse/displaywidth"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGolden(t *testing.T) {
	for _, ex := range []string{"announcement/announcement.yaml", "reminder/reminder.yaml"} {
		c, err := campaign.Load(filepath.Join("..", "..", "examples", ex))
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(ex), ".yaml")
		// The reminder is planned as a first send: nothing at its state.
		var rec plan.Recorded
		if name == "reminder" {
			rec = noState{"reminder.smsstate"}
		}
		p, err := plan.Compute(context.Background(), c, rec)
		if err != nil {
			t.Fatal(err)
		}
		checkGoldens(t, name, p)
	}
}

// checkGoldens holds p's table (80 columns), markdown and JSON to
// testdata/golden/NAME.table.txt, .md and .json.
func checkGoldens(t *testing.T, name string, p *plan.Plan) {
	t.Helper()
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
		t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test ./internal/report -update rewrites it):\n%s", path, got)
	}
}

func TestMasking(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"recipients:\n  - numbers: [\"+447400123459\", \"+4412345\"]\nbody: hi\n", nil)
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, show := range []bool{false, true} {
		for name, write := range map[string]func(*bytes.Buffer, *plan.Plan, Output) error{
			"table":    func(b *bytes.Buffer, p *plan.Plan, o Output) error { return WriteTable(b, p, o) },
			"markdown": func(b *bytes.Buffer, p *plan.Plan, o Output) error { return WriteMarkdown(b, p, o) },
			"json":     func(b *bytes.Buffer, p *plan.Plan, o Output) error { return WriteJSON(b, p, o) },
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
func personalisedPlan(t *testing.T, n int) *plan.Plan {
	t.Helper()
	var list strings.Builder
	list.WriteString("phone,n\n")
	for i := range n {
		fmt.Fprintf(&list, "+4474001%05d,%d\n", i, i)
	}
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\nbody: \"code {{ .n }}\"\n", map[string]string{"l.csv": list.String()})
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pairedPlan plans 2n recipients in batches of one, two recipients to
// each body "code N": batches that a comment lists, not groups.
func pairedPlan(t *testing.T, n int) *plan.Plan {
	t.Helper()
	var list strings.Builder
	list.WriteString("phone,n\n")
	for i := range 2 * n {
		fmt.Fprintf(&list, "+4474001%05d,%d\n", i, i/2)
	}
	c := testharness.LoadCampaign(t, header+"batch_size: 1\nrecipients:\n  - file: l.csv\nbody: \"code {{ .n }}\"\n", map[string]string{"l.csv": list.String()})
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMarkdownCutsTheMiddle: batches a comment lists (two to a body) are
// cut from the middle, never the top. (A personalised plan's batches of
// one body each are grouped instead: TestMarkdownGroupsBatchesOfOne.)
func TestMarkdownCutsTheMiddle(t *testing.T) {
	p := pairedPlan(t, 3000)
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

// TestGoldenMarkdownCut pins the shape of a comment cut to fit: headline and
// first batches, the note, the last batches, the footer.
func TestGoldenMarkdownCut(t *testing.T) {
	p := pairedPlan(t, 40)
	var b bytes.Buffer
	if err := WriteMarkdown(&b, p, Output{MarkdownLimit: 2000}); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 2000 {
		t.Fatalf("%d bytes, over the 2000 asked", b.Len())
	}
	checkGolden(t, filepath.Join("testdata", "golden", "cut.md"), b.Bytes())
}

// TestWriteJSONIsOneDocument checks the streamed JSON against encoding the
// same plan at once, with no batch, one, and several.
func TestWriteJSONIsOneDocument(t *testing.T) {
	for _, n := range []int{0, 1, 7} {
		computed := personalisedPlan(t, max(n, 1))
		// The same plan with its batches in a slice, n of them.
		p := plan.Plan{Campaign: computed.Campaign, Sender: computed.Sender, Summary: computed.Summary,
			Batches: computed.AllBatches()[:n]}
		p.Summary.Batches = n
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
		if doc.FormatVersion != plan.FormatVersion || len(doc.Batches) != n {
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
	if !strings.Contains(out, "\nBATCH               MSGS  ENCODING  SEGS  BODY\nb-") {
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
func reminderPlan(t *testing.T) *plan.Plan {
	t.Helper()
	c, err := campaign.Load(filepath.Join("..", "..", "examples", "reminder", "reminder.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCostIsExact adds up what floats cannot: 0.1 per segment, ten times.
func TestCostIsExact(t *testing.T) {
	var nums []string
	for i := range 10 {
		nums = append(nums, fmt.Sprintf("\"+4478001234%02d\"", i))
	}
	c := testharness.LoadCampaign(t, header+"prices: p.csv\nrecipients:\n  - numbers: ["+strings.Join(nums, ", ")+"]\nbody: hi\nbudget:\n  max_total: 1\n",
		map[string]string{"p.csv": "country,prefix,price_per_segment,currency\nGB,,0.1,EUR\n"})
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatalf("ten segments at 0.1 are exactly the budget of 1: %v", err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, p, Output{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cost struct {
			Total     json.RawMessage `json:"total"`
			ByCountry []struct {
				Cost json.RawMessage `json:"cost"`
			} `json:"by_country"`
		} `json:"cost"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if string(doc.Cost.Total) != `"1"` || string(doc.Cost.ByCountry[0].Cost) != `"1"` {
		t.Errorf("JSON total %s, by country %s; want the decimal string \"1\"", doc.Cost.Total, doc.Cost.ByCountry[0].Cost)
	}
}

// TestGoldenReview pins the pull-request comment and the JSON of the four
// shapes a reviewer meets: a personalised campaign, one body for all, one
// over budget, one resumed after a partial send.
func TestGoldenReview(t *testing.T) {
	for _, tt := range []struct {
		name  string
		state plan.Recorded
	}{
		{"personalised", nil}, {"shared", nil}, {"overbudget", nil}, {"resumed", testharness.ResumedState()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := plan.Compute(context.Background(), testharness.GoldenCampaign(t, tt.name), tt.state)
			var be *plan.BudgetError
			if (tt.name == "overbudget") != errors.As(err, &be) || (err != nil && be == nil) {
				t.Fatalf("err = %v", err)
			}
			var md, js bytes.Buffer
			if err := WriteMarkdown(&md, p, Output{}); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&js, p, Output{}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "golden", "review-"+tt.name+".md"), md.Bytes())
			checkGolden(t, filepath.Join("testdata", "golden", "review-"+tt.name+".json"), js.Bytes())
		})
	}
}

func TestScheduleAt(t *testing.T) {
	c := testharness.LoadCampaign(t, header+windowNumbers+"send_window: {days: [mon, tue, wed, thu, fri], from: \"09:00\", to: \"20:00\"}\nbody: hi\n", nil)
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Monday 23 November 2026, 11:30 UTC: Paris and London are open, New
	// York opens at 14:00 UTC, Boise and Los Angeles at 17:00 UTC (Los
	// Angeles opens last), Tokyo (20:30 there) at 00:00 UTC on Tuesday.
	now := time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC)
	if err := p.ScheduleAt(now); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, w := range p.Schedule.Groups {
		lines = append(lines, words.Count(w.Recipients)+": "+label(p.Schedule, w))
	}
	want := []string{
		"3: now",
		"2: window opens 09:00 America/New_York, in 2 h 30 min",
		"2: window opens 09:00 America/Los_Angeles, in 5 h 30 min",
		"1: window opens 09:00 Asia/Tokyo, in 12 h 30 min",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("schedule:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for i, b := range p.AllBatches() {
		sc, _ := window.Compile(p.Window)
		z, _ := sc.Zones(b.Zones)
		if open := sc.Open(z, now); open != (p.Schedule.Batch(i).Reason == window.ReasonNow) {
			t.Errorf("batch %s (%v): open %v, schedule says %s", b.ID, b.Zones, open, p.Schedule.Batch(i).Reason)
		}
	}

	// Saturday: everything waits for Monday, New York's opening first.
	sat := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if err := p.ScheduleAt(sat); err != nil {
		t.Fatal(err)
	}
	if g := p.Schedule.Groups[0]; g.Reason != window.ReasonWindow || g.Zones[0] != "Asia/Tokyo" || !g.At.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("first group on Saturday: %+v, want Tokyo's Monday 09:00", g)
	}
}

// TestGoldenWindow fixes the three outputs of a plan with a send window,
// as at a fixed moment.
func TestGoldenWindow(t *testing.T) {
	c := testharness.LoadCampaign(t, header+windowNumbers+"send_window: {days: [mon, tue, wed, thu, fri], from: \"09:00\", to: \"20:00\"}\nnot_after: 2026-12-24T18:00:00Z\nbody: hi\n", nil)
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ScheduleAt(time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	checkGoldens(t, "window", p)
}
