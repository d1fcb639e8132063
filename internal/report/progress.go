package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// Progress shows a run as it goes: JSON events (one document a line, for
// programs), a bar on a terminal, or a line every few seconds for CI logs;
// waits are said on a line of their own either way.
type Progress struct {
	stderr  io.Writer
	json    *json.Encoder
	bar     *progressbar.ProgressBar
	total   int
	sent    int
	started time.Time
	last    time.Time
	every   time.Duration
}

// ProgressOptions say how a run is shown.
type ProgressOptions struct {
	JSON  bool // events as JSON lines on stdout, nothing else
	Bar   bool // a bar on stderr (a terminal), rather than a line every few seconds
	Total int  // recipients to send; 0 shows no bar
}

// NewProgress shows a run on stdout (JSON events) or stderr (for people).
func NewProgress(stdout, stderr io.Writer, o ProgressOptions) *Progress {
	p := &Progress{stderr: stderr, total: o.Total, started: time.Now(), every: 5 * time.Second}
	p.last = p.started
	switch {
	case o.JSON:
		p.json = json.NewEncoder(stdout)
	case o.Total > 0 && o.Bar:
		p.bar = progressbar.NewOptions(o.Total,
			progressbar.OptionSetWriter(stderr),
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

// Event shows one event of the run: apply calls it (see [apply.Options]).
func (p *Progress) Event(e apply.Event) {
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
		fmt.Fprintln(p.stderr, line)
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
		fmt.Fprintf(p.stderr, "smsform: %d of %d recipients done (%.0f%%), %.1f msg/s\n",
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

// waitLine words a wait event of apply --wait for a person.
func waitLine(e apply.Event) string {
	return fmt.Sprintf("smsform: waiting %s, until %s: %s (%s %s; interrupt to stop)",
		window.Wait(e.Wait), e.Until.UTC().Format("2006-01-02 15:04 UTC"), e.Reason,
		words.Count(e.Recipients), words.Plural(e.Recipients, "recipient waits", "recipients wait"))
}

// NothingToSend reports a run that had nothing to send in the events of
// any other run, so that a program reading --json always gets a start and a
// summary.
func (p *Progress) NothingToSend(owed apply.Owed) {
	p.Event(apply.Event{Type: "start"})
	p.Event(apply.Event{Type: "summary", Summary: &apply.Result{Owed: &owed}})
}

// Done ends the bar, if any.
func (p *Progress) Done() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// WriteResult prints the summary table of a run and, when it is complete
// (it ended with nothing left to send), a sentence that says so.
func WriteResult(w io.Writer, r *apply.Result, complete, plain bool) error {
	if r == nil {
		return nil
	}
	fmt.Fprintln(w)
	t := newTable(w, plain)
	t.Header("Sent", "Failed", "In doubt", "Skipped", "Segments", "Retries", "Time")
	if err := t.Append(words.Count(r.Sent), words.Count(r.Failed), words.Count(r.InDoubt), words.Count(r.Skipped),
		words.Count(r.Segments), words.Count(r.Retries), r.Duration.Round(time.Millisecond).String()); err != nil {
		return err
	}
	if err := t.Render(); err != nil || !complete {
		return err
	}
	_, err := fmt.Fprintf(w, "\nApply complete: %s recipient(s) sent in %s batch(es); nothing is left to send.\n",
		words.Count(r.Sent), words.Count(r.Batches))
	return err
}
