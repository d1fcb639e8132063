package plan

import (
	"testing"
	"time"

	"github.com/smsform/smsform/internal/window"
)

func TestEstimateSending(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name              string
		requests          int
		rate              float64
		concurrency       int
		expected, latency time.Duration
		want              time.Duration
		measured          bool
	}{
		{"nothing to send", 0, 5, 1, 200 * ms, 0, 0, false},
		{"one request: one answer", 1, 5, 1, 200 * ms, 0, 200 * ms, false},
		// 5 a second is slower than one at a time at 200 ms: the rate decides.
		{"rate decides", 11, 5, 1, 100 * ms, 0, 10*200*ms + 100*ms, false},
		// Unlimited rate, 4 at once answered in 200 ms: one every 50 ms.
		{"concurrency decides", 101, 0, 4, 200 * ms, 0, 100*50*ms + 200*ms, false},
		// 100 a second allows one every 10 ms; 8 at once at 100 ms: one every 12.5 ms.
		{"latency over concurrency decides", 2001, 100, 8, 100 * ms, 0, 2000*12500*time.Microsecond + 100*ms, false},
		// A measured latency wins over the expected one.
		{"measured wins", 11, 0, 1, 200 * ms, 50 * ms, 10*50*ms + 50*ms, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := estimate(tc.requests, tc.rate, tc.concurrency, tc.expected, tc.latency)
			if e.Sending != tc.want || e.Measured != tc.measured {
				t.Errorf("sending %s (measured %v), want %s (measured %v)", e.Sending, e.Measured, tc.want, tc.measured)
			}
		})
	}
}

func TestEstimateLastBatch(t *testing.T) {
	at := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	e := estimate(10, 1, 1, 100*time.Millisecond, 0) // one a second
	e.finish(at, nil)
	if want := at.Add(9 * time.Second); !e.LastBatchAt.Equal(want) {
		t.Errorf("without windows: last batch at %s, want %s", e.LastBatchAt, want)
	}

	// 4 now, then 3 when a window opens at 09:00 and 3 more at 14:00;
	// 2 will never go.
	nine, two := at.Add(time.Hour), at.Add(6*time.Hour)
	s := &Schedule{At: at, Groups: []When{
		{Opening: window.Opening{Reason: window.ReasonNow}, Batches: 4},
		{Opening: window.Opening{Reason: window.ReasonWindow, At: nine}, Batches: 3},
		{Opening: window.Opening{Reason: window.ReasonWindow, At: two}, Batches: 3},
		{Opening: window.Opening{Reason: window.ReasonEnded}, Batches: 2},
	}}
	e.finish(at, s)
	if want := two.Add(2 * time.Second); !e.LastBatchAt.Equal(want) {
		t.Errorf("with windows: last batch at %s, want %s", e.LastBatchAt, want)
	}

	// A group that opens while the one before is still sending waits for it.
	slow := estimate(10, 0, 1, time.Hour, 0)
	slow.finish(at, &Schedule{At: at, Groups: []When{
		{Opening: window.Opening{Reason: window.ReasonNow}, Batches: 2},
		{Opening: window.Opening{Reason: window.ReasonWindow, At: nine}, Batches: 2},
	}})
	if want := at.Add(3 * time.Hour); !slow.LastBatchAt.Equal(want) {
		t.Errorf("groups one after another: last batch at %s, want %s", slow.LastBatchAt, want)
	}

	var none *Estimate
	none.finish(at, s) // a plan without an estimate: nothing to do
	zero := estimate(0, 1, 1, time.Second, 0)
	zero.finish(at, nil)
	if !zero.LastBatchAt.IsZero() {
		t.Errorf("nothing to send: last batch at %s, want none", zero.LastBatchAt)
	}
}
