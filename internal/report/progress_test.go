package report

import (
	"strings"
	"testing"
	"time"

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
