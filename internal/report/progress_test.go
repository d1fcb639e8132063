package report

import (
	"context"

	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"

	"github.com/smsform/smsform/apply"
)

// TestRetryLine: each wait is said with what is awaited, which try comes
// next and when, for batches and for the token alike.
func TestRetryLine(t *testing.T) {
	for _, tt := range []struct {
		e    apply.Event
		want string
	}{
		{apply.Event{Type: "retry", Batch: "b-1", HTTPStatus: 503, Attempt: 2, Wait: 1500 * time.Millisecond},
			"smsform: batch b-1 was not acted on (HTTP 503); retry 2 of 8 in 1.5s"},
		{apply.Event{Type: "retry", Reason: "dial tcp: connection refused", Attempt: 3, Wait: 4 * time.Second},
			"smsform: token endpoint unreachable (no answer: dial tcp: connection refused); retry 3 of 8 in 4s"},
		{apply.Event{Type: "retry", HTTPStatus: 429, Attempt: 1, Wait: time.Second},
			"smsform: no token issued yet (HTTP 429); retry 1 of 8 in 1s"},
	} {
		if got := retryLine(tt.e); got != tt.want {
			t.Errorf("retryLine(%+v) = %q, want %q", tt.e, got, tt.want)
		}
	}
}

// TestWaitLine: a wait of apply --wait says how long, until when, why and
// for how many.
func TestWaitLine(t *testing.T) {
	until := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		n    int
		want string
	}{
		{1, "smsform: waiting 2 h 30 min, until 2026-11-23 14:00 UTC: window opens 09:00 America/New_York (1 recipient waits; interrupt to stop)"},
		{1200, "smsform: waiting 2 h 30 min, until 2026-11-23 14:00 UTC: window opens 09:00 America/New_York (1,200 recipients wait; interrupt to stop)"},
	} {
		e := apply.Event{Type: "wait", Recipients: tt.n, Wait: 150 * time.Minute, Until: until, Reason: "window opens 09:00 America/New_York"}
		if got := waitLine(e); got != tt.want {
			t.Errorf("waitLine = %q, want %q", got, tt.want)
		}
	}
}

// TestWriteResult: the summary table always; the closing sentence only for
// a run that left nothing to send.
func TestWriteResult(t *testing.T) {
	r := &apply.Result{Sent: 1200, Batches: 12, Segments: 1300, Duration: 1500 * time.Millisecond}
	for _, complete := range []bool{false, true} {
		var b strings.Builder
		if err := WriteResult(&b, r, complete, Output{Plain: true}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "1,200") || !strings.Contains(b.String(), "1.5s") {
			t.Errorf("no counts in\n%s", b.String())
		}
		said := strings.Contains(b.String(), "Apply complete: 1,200 recipients sent in 12 batches; nothing is left to send.\n")
		if said != complete {
			t.Errorf("complete %v: sentence said %v\n%s", complete, said, b.String())
		}
	}
	var b strings.Builder
	if err := WriteResult(&b, nil, true, Output{Plain: true}); err != nil || b.Len() != 0 {
		t.Errorf("no result: wrote %q, %v", b.String(), err)
	}
}

// clock is a time the test moves.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// TestProgressPace: the rate and the time left come from the last
// minute's pace, not from the first batches; nothing is said before 5
// seconds of it; a wait for a window is said as a wait, and the pace is
// measured again after it.
func TestProgressPace(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	c := &clock{now: start}
	var lines strings.Builder
	p := NewProgress(nil, &lines, ProgressOptions{Total: 10_000, Now: c.Now})
	batch := apply.Event{Type: "batch_sent", Recipients: 100}

	// The provider answers in 2 s: the first batch is done at 2 s. A
	// rate from it alone would be meaningless; none is shown.
	c.now = start.Add(2 * time.Second)
	p.Event(batch)
	if r := p.rateWords(c.now, ", "); r != "" {
		t.Errorf("a rate after 2 s: %q", r)
	}
	// A burst then a slow pace: 1,000 in the first 10 s, then 100 every
	// 10 s (10 msg/s) for two minutes.
	for i := 1; i < 10; i++ {
		c.now = start.Add(2*time.Second + time.Duration(i)*800*time.Millisecond)
		p.Event(batch)
	}
	for i := 1; i <= 12; i++ {
		c.now = start.Add(10*time.Second + time.Duration(i)*10*time.Second)
		p.Event(batch)
	}
	// 2,200 done at 130 s; the last minute saw 600 (10 msg/s): 7,800 left
	// at 10 msg/s is 13 min. From the start, 2,200 / 130 s would say 17 msg/s.
	if got, want := p.rateWords(c.now, ", "), ", 10.0 msg/s, about 13 min left"; got != want {
		t.Errorf("rate after two minutes: %q, want %q", got, want)
	}
	if !strings.Contains(lines.String(), "smsform: 2,200 of 10,000 recipients done (22%), 10.0 msg/s, about 13 min left\n") {
		t.Errorf("no progress line with the pace:\n%s", lines.String())
	}

	// A wait for a window: said as such, and the pace starts again when
	// it ends, not counting the hours waited.
	until := c.now.Add(3 * time.Hour)
	p.Event(apply.Event{Type: "wait", Recipients: 7_800, Wait: 3 * time.Hour, Until: until, Reason: "window opens 09:00 America/New_York"})
	if !strings.Contains(lines.String(), "smsform: waiting 3 h, until 2026-11-23 12:02 UTC: window opens 09:00 America/New_York (7,800 recipients wait; interrupt to stop)") {
		t.Errorf("the wait is not said:\n%s", lines.String())
	}
	c.now = until.Add(time.Second)
	p.Event(batch)
	if r := p.rateWords(c.now, ", "); r != "" {
		t.Errorf("a rate a second after the wait: %q", r)
	}
	for i := 1; i <= 6; i++ {
		c.now = until.Add(time.Duration(i) * time.Second)
		p.Event(batch)
	}
	// 700 in 6 s since the wait ended: 116.7 msg/s, 7,100 left: 1 min.
	if got, want := p.rateWords(c.now, ", "), ", 116.7 msg/s, about 1 min left"; got != want {
		t.Errorf("rate after the wait: %q, want %q", got, want)
	}
}

// TestProgressSaysWhatWaits: with recipients waiting for their window,
// the run says first how many it sends now and what becomes of the rest.
func TestProgressSaysWhatWaits(t *testing.T) {
	for _, tt := range []struct {
		wait bool
		want string
	}{
		{false, "smsform: sending 800 recipients now; 1,200 recipients wait for their send window or not_before (the first may go 2026-11-23 14:00 UTC): a later apply sends them, or apply --wait\n"},
		{true, "smsform: sending 2,000 recipients now; 1,200 recipients wait for their send window or not_before (the first may go 2026-11-23 14:00 UTC): this run waits for them\n"},
	} {
		var lines strings.Builder
		total := 800
		if tt.wait {
			total = 2000
		}
		p := NewProgress(nil, &lines, ProgressOptions{Total: total, Waiting: 1200, NextOpen: "2026-11-23 14:00 UTC", Wait: tt.wait})
		p.Event(apply.Event{Type: "start"})
		if lines.String() != tt.want {
			t.Errorf("wait %v: %q, want %q", tt.wait, lines.String(), tt.want)
		}
	}
}

// TestSendableAndSummary: with send windows, what a run sends now, what
// waits and when it opens; the one-line summary above apply's prompt says
// messages, cost, budget and when.
func TestSendableAndSummary(t *testing.T) {
	c := testharness.LoadCampaign(t, header+windowNumbers+"send_window: {days: [mon, tue, wed, thu, fri], from: \"09:00\", to: \"20:00\"}\n"+
		"prices: p.csv\nbudget: {max_recipients: 100}\nbody: hi\n",
		map[string]string{"p.csv": "country,prefix,price_per_segment,currency\nUS,,0.0125,EUR\nFR,,0.0125,EUR\nJP,,0.0125,EUR\nGB,,0.0125,EUR\n"})
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ScheduleAt(time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	now, waiting, next := Sendable(p, false)
	if now != 3 || waiting != 5 || next != "2026-11-23 14:00 UTC" {
		t.Errorf("Sendable = %d, %d, %q; want 3 now, 5 waiting from 2026-11-23 14:00 UTC", now, waiting, next)
	}
	if all, _, _ := Sendable(p, true); all != 8 {
		t.Errorf("with --wait the run sends %d, want 8", all)
	}
	want := "Summary: 8 messages to send; cost EUR 0.1000 + no price; budget: within; when: 3 now, 5 from 2026-11-23 14:00 UTC."
	if got := PromptSummary(p); got != want {
		t.Errorf("PromptSummary = %q\nwant %q", got, want)
	}
}

func TestRetryLineOfThrottledRecipients(t *testing.T) {
	got := retryLine(apply.Event{Type: "retry", Batch: "b-1", Retried: 3, HTTPStatus: 200, Attempt: 1, Wait: time.Second})
	if want := "smsform: 3 recipients of batch b-1 were not acted on (a retry status, said the provider) (HTTP 200); retry 1 of 8 in 1s"; got != want {
		t.Errorf("retryLine = %q, want %q", got, want)
	}
}
