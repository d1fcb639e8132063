package plan

import (
	"math"
	"time"
)

// Estimate is how long sending a plan takes: its requests go at the pace
// the campaign allows, the smaller of its rate and of concurrency requests
// each answered in Latency; and, with the send windows, when its last batch
// goes. It leaves out retries and waits the provider asks for: "around",
// not "at".
type Estimate struct {
	Requests    int           `json:"requests"`
	Rate        float64       `json:"rate_per_second,omitempty"` // the campaign's rate; 0: none
	Concurrency int           `json:"concurrency"`
	Latency     time.Duration `json:"latency_ns"`
	// Measured says Latency is the median an earlier apply measured, not
	// provider.expected_latency.
	Measured bool `json:"latency_measured"`
	// Sending is the time from the first request to the last answer,
	// were every window open.
	Sending time.Duration `json:"sending_ns"`
	// LastBatchAt is when the last batch goes, with the send windows, as
	// [Plan.ScheduleAt] saw it; zero before, and when there is nothing to
	// send. Batches that will never go (their window ended) are left out.
	LastBatchAt time.Time `json:"last_batch_at,omitzero"`
	// CapDecides says LastBatchAt is when the frequency cap lets the last
	// of the recipients it holds back go (with the windows: the first
	// moment after that a window is open), later than the batches would
	// otherwise go.
	CapDecides bool `json:"cap_decides,omitempty"`
}

// estimate is the sending time of requests batches at rate (requests a
// second, 0: no limit), concurrency at once, each answered in the measured
// latency, or in expected when none was measured.
func estimate(requests int, rate float64, concurrency int, expected, measured time.Duration) *Estimate {
	e := &Estimate{Requests: requests, Rate: rate, Concurrency: max(concurrency, 1), Latency: expected, Measured: measured > 0}
	if e.Measured {
		e.Latency = measured
	}
	if requests > 0 {
		e.Sending = time.Duration(float64(requests-1)*float64(e.interval())) + e.Latency
	}
	return e
}

// interval is the time between two requests at the campaign's pace: the
// rate's, or a latency shared by the requests in flight, whichever is
// longer.
func (e *Estimate) interval() time.Duration {
	every := e.Latency / time.Duration(e.Concurrency)
	if e.Rate > 0 {
		every = max(every, time.Duration(math.Round(float64(time.Second)/e.Rate)))
	}
	return every
}

// finish sets LastBatchAt as at the moment at: without a schedule every
// batch goes at once; with one, each group of batches goes once its window
// opens and the groups before it are sent; and no earlier than capLast,
// when the frequency cap lets the last recipient it holds back go (zero:
// it holds nobody back).
func (e *Estimate) finish(at time.Time, s *Schedule, capLast time.Time) {
	if e == nil {
		return
	}
	e.LastBatchAt, e.CapDecides = time.Time{}, false
	if e.Requests == 0 {
		return
	}
	e.lastBatch(at, s)
	if !e.LastBatchAt.IsZero() && capLast.After(e.LastBatchAt) {
		e.LastBatchAt, e.CapDecides = capLast, true
	}
}

// lastBatch sets LastBatchAt as the batches' windows decide it.
func (e *Estimate) lastBatch(at time.Time, s *Schedule) {
	every := e.interval()
	if s == nil {
		e.LastBatchAt = at.Add(time.Duration(e.Requests-1) * every)
		return
	}
	t, last := at, time.Time{}
	for _, g := range s.Groups {
		if g.Batches == 0 || !g.Sendable() {
			continue
		}
		if g.At.After(t) {
			t = g.At
		}
		last = t.Add(time.Duration(g.Batches-1) * every)
		t = t.Add(time.Duration(g.Batches) * every)
	}
	e.LastBatchAt = last
}
