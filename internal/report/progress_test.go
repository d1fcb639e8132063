package report

import (
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
