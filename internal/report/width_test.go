package report

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clipperhouse/displaywidth"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// widePlan has every table at its widest: a send window (the WHEN
// column), long bodies, invalid numbers and duplicates in a list with a
// long path, big counts.
func widePlan(t *testing.T) *plan.Plan {
	t.Helper()
	path := "lists/a-rather-long-folder-name-for-the-lists/customers-of-the-spring-sale-2026.csv"
	list := "phone,name\n+12125550101,Ann\n+447400123459,Ben\n+33612345678,Chloé\n447400123450,Dev\n07400 123451,Emma\n+447400123459,Ben again\n"
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: "+path+"\n"+
		"send_window: {days: [mon, tue, wed, thu, fri], from: \"09:00\", to: \"20:00\"}\n"+
		"body: \"Hello {{ .name }}, the spring sale starts today with twenty per cent off everything in every shop. Reply STOP to opt out.\"\n",
		map[string]string{path: list})
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ScheduleAt(time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return p
}

// tableLines are the lines of out that belong to a table: ruled ones, or
// in a plain output the lines from a header in capitals to the blank line.
func tableLines(out string) []string {
	var lines []string
	in := false
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.ContainsAny(line, "│┌├└"):
			lines = append(lines, line)
		case line == "" || strings.HasPrefix(line, "..."):
			in = false
		case strings.HasPrefix(line, "BATCH ") || strings.HasPrefix(line, "SOURCE ") || strings.HasPrefix(line, "ROW DROPPED ") || strings.HasPrefix(line, "SENT ") || strings.HasPrefix(line, "RESULT "):
			in = true
		}
		if in {
			lines = append(lines, line)
		}
	}
	return lines
}

// TestTablesFitWidth: every table of plan and apply fits 80, 100 and 200
// columns, ruled or plain, with the body preview at least 30 characters
// wide at 80 in a pipe.
func TestTablesFitWidth(t *testing.T) {
	p := widePlan(t)
	res := &apply.Result{Sent: 12_345_678, Failed: 1_234_567, InDoubt: 123_456, Skipped: 98_765, Segments: 24_691_356, Retries: 1_234, Duration: 3*time.Hour + 25*time.Minute + 45*time.Second + 123*time.Millisecond}
	for _, plain := range []bool{true, false} {
		for _, width := range []int{80, 100, 200} {
			t.Run(fmt.Sprintf("plain %v width %d", plain, width), func(t *testing.T) {
				o := Output{Width: width, Plain: plain}
				var b bytes.Buffer
				if err := WriteTable(&b, p, o); err != nil {
					t.Fatal(err)
				}
				if err := WriteResult(&b, res, true, o); err != nil {
					t.Fatal(err)
				}
				lines := tableLines(b.String())
				for _, want := range []string{"WHEN", "SOURCE", "ROW DROPPED", "12,345,678"} {
					if !strings.Contains(strings.Join(lines, "\n"), want) {
						t.Fatalf("no %s table in\n%s", want, b.String())
					}
				}
				for _, line := range lines {
					if w := displaywidth.String(line); w > width {
						t.Errorf("a table line is %d wide:\n%s", w, line)
					}
				}
				if plain && width == 80 && !strings.Contains(b.String(), "Hello Ann, the spring sale starts") {
					t.Errorf("the preview is under 30 characters at 80 columns:\n%s", b.String())
				}
			})
		}
	}
}

// TestStateListFitsWidth: state list's lines fit the width, a long reason
// cut; with no width they are whole.
func TestStateListFitsWidth(t *testing.T) {
	reason := "HTTP 400: " + strings.Repeat("the provider refused this recipient for a reason it explains at length ", 3)
	walk := func(fn func(state.Recipient) error) error {
		return fn(state.Recipient{Phone: "+447400123459", Status: state.Failed, BatchID: "b-2c1f7987e613aa50", At: time.Unix(0, 0), Reason: reason})
	}
	l := StateList{Path: "s.smsstate", Campaign: "t", Lineage: "l", Counts: map[state.Status]int{state.Sent: 12_345, state.Failed: 1}}
	for _, width := range []int{80, 100, 200} {
		var b bytes.Buffer
		if err := WriteStateTable(&b, l, walk, Output{Width: width}); err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(b.String()) {
			if w := displaywidth.String(strings.TrimRight(line, "\n")); w > width {
				t.Errorf("width %d: a line is %d wide: %s", width, w, line)
			}
		}
		if !strings.Contains(b.String(), "12,345 sent") {
			t.Errorf("counts without separators:\n%s", b.String())
		}
	}
	var b bytes.Buffer
	WriteStateTable(&b, l, walk, Output{})
	if !strings.Contains(b.String(), strings.TrimSpace(reason)) {
		t.Errorf("with no width the reason is cut:\n%s", b.String())
	}
}

// TestStateListDeliveryFits80: with delivery reports, the DELIVERY column
// and its values are whole on a terminal of 80 columns, the provider's
// reason on a line of its own.
func TestStateListDeliveryFits80(t *testing.T) {
	const phone = "+447400123459"
	walk := func(fn func(state.Recipient) error) error {
		return fn(state.Recipient{Phone: phone, Status: state.Sent, BatchID: "b-2c1f7987e613aa50", At: time.Unix(0, 0)})
	}
	l := StateList{Path: "s.smsstate", Campaign: "t", Lineage: "l", Counts: map[state.Status]int{state.Sent: 1},
		Deliveries: map[string]state.DeliveryRecord{phone: {Delivery: state.Undelivered, ProviderStatus: "UNDELIVERED", Reason: "absent subscriber"}}}
	var b bytes.Buffer
	if err := WriteStateTable(&b, l, walk, Output{Width: 80, ShowNumbers: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for line := range strings.Lines(out) {
		if w := displaywidth.String(strings.TrimRight(line, "\n")); w > 80 {
			t.Errorf("a line is %d wide: %s", w, line)
		}
	}
	if !strings.Contains(out, " DELIVERY ") || !strings.Contains(out, " undelivered ") || !strings.Contains(out, "1970-01-01T00:00:00Z\n    absent subscriber\n") {
		t.Errorf("at 80 columns:\n%s", out)
	}
}

// TestProseWrapsAtTheWidth: the table output's prose (the headline, the
// cost, the estimate, a note, the schedule, the warnings) wraps at the
// width as its tables fit it; a line runs over only where it holds a word
// wider than the room, a path or a URL that cannot be broken (issue 35.10).
func TestProseWrapsAtTheWidth(t *testing.T) {
	long := "/home/runner/work/acme-campaigns/acme-campaigns/.smsform/a-rather-long-folder-name/smsform.smsstate"
	for _, width := range []int{60, 80, 100} {
		p := hostilePlan("x")
		p.Warnings = append(p.Warnings, "the state at "+long+" is not the project's: apply refuses to run until it is settled, see https://example.com/a/very/long/url/that/cannot/be/broken/anywhere")
		p.State = plan.StateStamp{Location: long, FirstSend: true}
		var b strings.Builder
		if err := WriteTable(&b, p, Output{Width: width, Plain: true}); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(b.String(), "\n") {
			if w := displaywidth.String(line); w > width && !strings.Contains(line, long) && !strings.Contains(line, "https://") {
				t.Errorf("width %d: a line of %d columns: %q", width, w, line)
			}
		}
		if !strings.Contains(b.String(), long) {
			t.Errorf("width %d: the path was broken", width)
		}
	}
}
