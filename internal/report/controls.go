package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// What plan's outputs say of a campaign's running: its pause, its last test
// send, and how long sending it takes.

// PauseWords words a pause as every output and refusal does: "paused by
// alice at 2026-11-25T14:02:00Z: typo in the link".
func PauseWords(p *state.Pause) string {
	s := fmt.Sprintf("paused by %s at %s", oneLine(p.By), p.At.UTC().Format(time.RFC3339))
	if p.Reason != "" {
		s += ": " + oneLine(p.Reason)
	}
	return s
}

// pauseNote is what plan says of a paused campaign, with what follows.
func pauseNote(p *state.Pause) string {
	return "The campaign is " + PauseWords(p) + "; apply refuses to send until smsform resume"
}

// TestSendWords words a test send: "tested 2026-11-25 14:02 UTC to 2 numbers
// by alice", and what became of it when the provider did not take it.
func TestSendWords(ts *state.TestSend) string {
	s := fmt.Sprintf("tested %s to %s by %s", ts.At.UTC().Format("2006-01-02 15:04 UTC"),
		words.N(len(ts.Phones), "number", "numbers"), oneLine(ts.By))
	switch ts.Outcome {
	case state.Failed:
		s += " (refused by the provider)"
	case state.InDoubt:
		s += " (no clear answer from the provider)"
	}
	return s
}

// EstimateWords words how long sending takes, and when the last batch goes
// when it is known: "about 2 h 10 min to send (1,204 requests, at most 5
// a second, 4 at a time, answered in 200ms as provider.expected_latency
// says); with the windows, the last batch goes around Tue 2026-11-24 14:05
// UTC". withWindows says the campaign has windows,
// which the time of the last batch then counts in.
func EstimateWords(e *plan.Estimate, withWindows bool) string {
	var b strings.Builder
	if e.Sending < time.Minute {
		b.WriteString("under a minute to send")
	} else {
		b.WriteString("about " + words.Wait(e.Sending) + " to send")
	}
	how := []string{words.N(e.Requests, "request", "requests")}
	if e.Rate > 0 {
		how = append(how, "at most "+strconv.FormatFloat(e.Rate, 'g', 4, 64)+" a second")
	}
	how = append(how, words.Count(e.Concurrency)+" at a time")
	from := "as provider.expected_latency says"
	if e.Measured {
		from = "as the last apply measured"
	}
	how = append(how, fmt.Sprintf("answered in %s %s", e.Latency.Round(time.Millisecond), from))
	fmt.Fprintf(&b, " (%s)", strings.Join(how, ", "))
	if !e.LastBatchAt.IsZero() {
		switch {
		case withWindows && e.CapDecides:
			b.WriteString("; with the windows and the frequency cap,")
		case withWindows:
			b.WriteString("; with the windows,")
		case e.CapDecides:
			b.WriteString("; with the frequency cap,")
		default:
			b.WriteString(";")
		}
		b.WriteString(" the last batch goes around " + e.LastBatchAt.UTC().Format("Mon 2006-01-02 15:04 UTC"))
		if e.CapDecides {
			b.WriteString(", when the cap lets the last recipient it holds back go")
		}
	}
	return b.String()
}

// controlLines are the lines plan's table and comment show of the
// campaign's running, each a sentence without its full stop: the pause,
// the estimate and the last test send.
func controlLines(p *plan.Plan) (paused, estimate, tested string) {
	if p.Paused != nil {
		paused = pauseNote(p.Paused)
	}
	if e := p.Estimate; e != nil && e.Requests > 0 {
		estimate = "Estimate: " + EstimateWords(e, p.Timed())
	}
	if p.LastTest != nil {
		tested = "Test send: " + TestSendWords(p.LastTest)
	}
	return paused, estimate, tested
}

// jsonPause is a pause in plan's JSON.
type jsonPause struct {
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Reason string    `json:"reason"`
}

// jsonTestSend is the last test send in plan's JSON: how many numbers, not
// which.
type jsonTestSend struct {
	At         time.Time `json:"at"`
	By         string    `json:"by"`
	Numbers    int       `json:"numbers"`
	Outcome    string    `json:"outcome"`
	HTTPStatus int       `json:"http_status,omitempty"`
	Reason     string    `json:"reason,omitempty"`
}

// jsonEstimate is the estimate in plan's JSON: seconds and RFC 3339, for
// programs.
type jsonEstimate struct {
	Requests        int        `json:"requests"`
	RatePerSecond   float64    `json:"rate_per_second,omitempty"`
	Concurrency     int        `json:"concurrency"`
	LatencySeconds  float64    `json:"latency_seconds"`
	LatencyMeasured bool       `json:"latency_measured"`
	SendingSeconds  float64    `json:"sending_seconds"`
	LastBatchAt     *time.Time `json:"last_batch_at,omitempty"`
	// LastBatchHeldByCap says last_batch_at is when the frequency cap
	// lets the last recipient it holds back go.
	LastBatchHeldByCap bool `json:"last_batch_held_by_cap,omitempty"`
}

// controlsJSON is what plan's JSON says of the campaign's running.
func controlsJSON(p *plan.Plan, v shown) (*jsonPause, *jsonTestSend, *jsonEstimate) {
	var jp *jsonPause
	var jt *jsonTestSend
	var je *jsonEstimate
	if pp := p.Paused; pp != nil {
		jp = &jsonPause{At: pp.At.UTC(), By: pp.By, Reason: pp.Reason}
	}
	if ts := p.LastTest; ts != nil {
		jt = &jsonTestSend{At: ts.At.UTC(), By: ts.By, Numbers: len(ts.Phones), Outcome: ts.Outcome.String(), HTTPStatus: ts.HTTPStatus,
			Reason: v.o.testReason(ts)}
	}
	if e := p.Estimate; e != nil {
		je = &jsonEstimate{Requests: e.Requests, RatePerSecond: e.Rate, Concurrency: e.Concurrency,
			LatencySeconds: e.Latency.Seconds(), LatencyMeasured: e.Measured, SendingSeconds: e.Sending.Round(time.Millisecond).Seconds()}
		if !e.LastBatchAt.IsZero() {
			at := e.LastBatchAt.UTC().Truncate(time.Second)
			je.LastBatchAt, je.LastBatchHeldByCap = &at, e.CapDecides
		}
	}
	return jp, jt, je
}

// testReason is a test send's reason as output shows it: the provider's
// words may echo the numbers.
func (o Output) testReason(ts *state.TestSend) string {
	if o.ShowNumbers || ts.Reason == "" {
		return ts.Reason
	}
	return e164.MaskAny(e164.MaskIn(ts.Reason, ts.Phones...))
}
