package apply_test

import (
	"testing"
	"time"

	"github.com/smsform/smsform/apply"
)

func TestBackoff(t *testing.T) {
	const base, cap = 100 * time.Millisecond, 2 * time.Second
	tests := []struct {
		name       string
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration // every draw must be within [lo, hi]
	}{
		{"first attempt", 1, 0, 0, base},
		{"doubles", 3, 0, 0, 4 * base},
		{"capped", 10, 0, 0, cap},
		{"huge attempt does not overflow", 1 << 20, 0, 0, cap},
		{"retry-after is a floor", 1, time.Second, time.Second, time.Second},
		{"retry-after with wider jitter", 6, time.Second, time.Second, cap},
		{"retry-after beyond cap is honoured", 2, 5 * time.Second, 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var below, above int // around the middle of the jitter range
			mid := tt.lo + (tt.hi-tt.lo)/2
			for range 2000 {
				d := apply.Backoff(tt.attempt, tt.retryAfter, base, cap)
				if d < tt.lo || d > tt.hi {
					t.Fatalf("backoff(%d, %v) = %v, want within [%v, %v]", tt.attempt, tt.retryAfter, d, tt.lo, tt.hi)
				}
				if d < mid {
					below++
				} else if d > mid {
					above++
				}
			}
			// Full jitter spreads the waits over the whole range, so that
			// clients refused together do not come back together.
			if tt.hi > tt.lo && (below < 200 || above < 200) {
				t.Errorf("draws not spread over [%v, %v]: %d below and %d above the middle", tt.lo, tt.hi, below, above)
			}
		})
	}
}
