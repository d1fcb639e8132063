package plan

import (
	"testing"
	"time"

	"github.com/smsform/smsform/internal/testharness"
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
	e.finish(at, nil, time.Time{})
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
	e.finish(at, s, time.Time{})
	if want := two.Add(2 * time.Second); !e.LastBatchAt.Equal(want) {
		t.Errorf("with windows: last batch at %s, want %s", e.LastBatchAt, want)
	}

	// A group that opens while the one before is still sending waits for it.
	slow := estimate(10, 0, 1, time.Hour, 0)
	slow.finish(at, &Schedule{At: at, Groups: []When{
		{Opening: window.Opening{Reason: window.ReasonNow}, Batches: 2},
		{Opening: window.Opening{Reason: window.ReasonWindow, At: nine}, Batches: 2},
	}}, time.Time{})
	if want := at.Add(3 * time.Hour); !slow.LastBatchAt.Equal(want) {
		t.Errorf("groups one after another: last batch at %s, want %s", slow.LastBatchAt, want)
	}

	// The frequency cap holds a recipient back until the next day: the
	// last batch goes when it lets them go, not now.
	tomorrow := at.Add(24 * time.Hour)
	e.finish(at, nil, tomorrow)
	if !e.LastBatchAt.Equal(tomorrow) || !e.CapDecides {
		t.Errorf("held by the cap: last batch at %s (cap decides %v), want %s", e.LastBatchAt, e.CapDecides, tomorrow)
	}
	e.finish(at, nil, at.Add(time.Second)) // before the batches are done: they decide
	if want := at.Add(9 * time.Second); !e.LastBatchAt.Equal(want) || e.CapDecides {
		t.Errorf("held briefly: last batch at %s (cap decides %v), want %s", e.LastBatchAt, e.CapDecides, want)
	}

	var none *Estimate
	none.finish(at, s, time.Time{}) // a plan without an estimate: nothing to do
	zero := estimate(0, 1, 1, time.Second, 0)
	zero.finish(at, nil, time.Time{})
	if !zero.LastBatchAt.IsZero() {
		t.Errorf("nothing to send: last batch at %s, want none", zero.LastBatchAt)
	}
}

// TestEstimateHeldByCap: recipients the frequency cap holds back until
// after the batches go make the last batch go when it lets them go, at the
// first moment after that their window is open.
func TestEstimateHeldByCap(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"recipients:\n  - numbers: [\"+447400123401\", \"+447400123402\"]\nsend_window: {from: \"10:00\", to: \"17:00\"}\nbody: \"Hi\"\n", nil)
	p := mustPlan(t, c)
	at := time.Date(2026, 11, 25, 10, 12, 0, 0, time.UTC) // Wednesday, open in London
	held := time.Date(2026, 11, 26, 9, 12, 0, 0, time.UTC)
	p.Summary.HeldByCap, p.Summary.HeldByCapUntil = 1, held
	must(t, p.ScheduleAt(at))
	if e := p.Estimate; !e.LastBatchAt.Equal(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)) || !e.CapDecides {
		t.Errorf("last batch at %s (cap decides %v), want when the window opens after the cap lets go, 2026-11-26 10:00 UTC", e.LastBatchAt, e.CapDecides)
	}
	// Shown as at a moment after the cap let them go, it holds nobody.
	must(t, p.ScheduleAt(held.Add(time.Hour)))
	if e := p.Estimate; e.CapDecides || !e.LastBatchAt.Equal(held.Add(time.Hour)) {
		t.Errorf("after the hold: last batch at %s (cap decides %v)", e.LastBatchAt, e.CapDecides)
	}
}
