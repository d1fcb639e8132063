package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/plan"
)

// progress shows a run: JSON events (--json), a bar on a terminal, or a line
// every few seconds for CI logs.
type progress struct {
	env     Env
	json    *json.Encoder
	bar     *progressbar.ProgressBar
	total   int
	sent    int
	started time.Time
	last    time.Time
	every   time.Duration
}

func newProgress(env Env, jsonOut bool, total int) *progress {
	p := &progress{env: env, total: total, started: time.Now(), every: 5 * time.Second}
	p.last = p.started
	switch {
	case jsonOut:
		p.json = json.NewEncoder(env.Stdout)
	case total > 0 && !inAutomation(env) && env.IsTerminal(env.Stderr):
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(env.Stderr),
			progressbar.OptionSetDescription("sending"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("msg"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// jsonEvent is an apply event as --json prints it.
type jsonEvent struct {
	FormatVersion string `json:"format_version"`
	apply.Event
}

func (p *progress) event(e apply.Event) {
	if p.json != nil {
		p.json.Encode(jsonEvent{FormatVersion: plan.FormatVersion, Event: e})
		return
	}
	switch e.Type {
	case "retry", "wait":
		// Waits are said as they start, on a line of their own, so that
		// nobody watches a silent terminal (or CI log) for seconds.
		if p.bar != nil {
			p.bar.Clear()
		}
		line := waitLine(e)
		if e.Type == "retry" {
			line = retryLine(e)
		}
		fmt.Fprintln(p.env.Stderr, line)
		return
	case "batch_sent", "batch_failed", "batch_in_doubt":
	default:
		return
	}
	p.sent += e.Recipients
	if p.bar != nil {
		p.bar.Add(e.Recipients)
		return
	}
	if now := time.Now(); now.Sub(p.last) >= p.every {
		p.last = now
		fmt.Fprintf(p.env.Stderr, "smsform: %d of %d recipients done (%.0f%%), %.1f msg/s\n",
			p.sent, p.total, 100*float64(p.sent)/float64(max(p.total, 1)), float64(p.sent)/now.Sub(p.started).Seconds())
	}
}

// retryLine words a retry event for a person: what went wrong, which try
// comes next, and when.
func retryLine(e apply.Event) string {
	what := "HTTP " + strconv.Itoa(e.HTTPStatus)
	if e.HTTPStatus == 0 {
		what = "no answer: " + e.Reason
	}
	subject := "batch " + e.Batch + " was not acted on"
	if e.Batch == "" {
		subject = "token endpoint unreachable"
		if e.HTTPStatus != 0 {
			subject = "no token issued yet"
		}
	}
	return fmt.Sprintf("smsform: %s (%s); retry %d of %d in %s",
		subject, what, e.Attempt, apply.DefaultMaxRetries, e.Wait.Round(100*time.Millisecond))
}

// nothingToSend reports a run that had nothing to send in the events of
// any other run, so that a program reading --json always gets a start and a
// summary.
func (p *progress) nothingToSend() {
	p.event(apply.Event{Type: "start"})
	p.event(apply.Event{Type: "summary", Summary: &apply.Result{}})
}

func (p *progress) done() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// writeResult prints the summary table of a run.
func writeResult(w io.Writer, r *apply.Result, plain bool) error {
	if r == nil {
		return nil
	}
	fmt.Fprintln(w)
	t := plan.NewTable(w, plain)
	t.Header("Sent", "Failed", "In doubt", "Skipped", "Segments", "Retries", "Time")
	n := func(i int) string { return humanize.Comma(int64(i)) }
	if err := t.Append(n(r.Sent), n(r.Failed), n(r.InDoubt), n(r.Skipped),
		n(r.Segments), n(r.Retries), r.Duration.Round(time.Millisecond).String()); err != nil {
		return err
	}
	return t.Render()
}
