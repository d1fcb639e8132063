package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// Progress shows a run as it goes: JSON events (one document a line, for
// programs), a bar on a terminal, or a line every few seconds for CI logs;
// waits are said on a line of their own either way. The rate and the time
// left come from the pace of the last minute (see [pace]), never from the
// first batches, and a wait for a send window is said as one rather than
// shown as a falling rate.
type Progress struct {
	stderr io.Writer
	json   *json.Encoder
	bar    *progressbar.ProgressBar
	o      ProgressOptions
	sent   int
	pace   pace
	last   time.Time // when the last line was written (lines for logs)
	every  time.Duration
	until  time.Time // while the run waits for a window: until when
}

// ProgressOptions say how a run is shown.
type ProgressOptions struct {
	JSON bool // events as JSON lines on stdout, nothing else
	Bar  bool // a bar on stderr (a terminal), rather than a line every few seconds
	// Total is the recipients this run may send: those whose window is
	// open now (with apply --wait, also those whose window opens before
	// the campaign ends); 0 shows no bar.
	Total int
	// Waiting counts the recipients whose send window is closed now, and
	// NextOpen says when the first opens; Wait says whether this run
	// waits for them (apply --wait) or leaves them to a later apply.
	Waiting  int
	NextOpen string
	Wait     bool
	// ShowNumbers leaves numbers in the provider's reasons whole.
	ShowNumbers bool
	// Now is the time (nil: the system clock); tests give one they move.
	Now func() time.Time
}

// NewProgress shows a run on stdout (JSON events) or stderr (for people).
func NewProgress(stdout, stderr io.Writer, o ProgressOptions) *Progress {
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Progress{stderr: stderr, o: o, every: 5 * time.Second}
	p.last = o.Now()
	p.pace.restart(p.last, 0)
	switch {
	case o.JSON:
		p.json = json.NewEncoder(stdout)
	case o.Total > 0 && o.Bar:
		p.bar = progressbar.NewOptions(o.Total,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("sending"),
			progressbar.OptionShowCount(),
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
	if !p.o.ShowNumbers {
		// A provider's words may echo a number: whose, an event does not
		// say, so any long run of digits is masked.
		e.Reason = e164.MaskAny(e.Reason)
	}
	if p.json != nil {
		p.json.Encode(jsonEvent{FormatVersion: plan.FormatVersion, Event: e})
		return
	}
	switch e.Type {
	case "start":
		if line := p.startLine(); line != "" {
			fmt.Fprintln(p.stderr, line)
		}
		return
	case "retry", "wait", "paused":
		p.say(e)
		return
	case "batch_sent", "batch_failed", "batch_in_doubt":
	default:
		return
	}
	now := p.o.Now()
	if !p.until.IsZero() {
		// The wait is over: the pace is measured again from its end.
		p.pace.restart(p.until, p.sent)
		p.until = time.Time{}
	}
	p.sent += e.Recipients
	p.pace.add(now, p.sent)
	if p.bar != nil {
		p.bar.Describe("sending" + p.rateWords(now, ", "))
		p.bar.Add(e.Recipients)
		return
	}
	if now.Sub(p.last) >= p.every {
		p.last = now
		fmt.Fprintln(p.stderr, p.line(now))
	}
}

// say writes a retry or a wait on a line of its own, as it starts, so that
// nobody watches a silent terminal (or CI log) for seconds.
func (p *Progress) say(e apply.Event) {
	if p.bar != nil {
		p.bar.Clear()
	}
	line := retryLine(e)
	if e.Type == "paused" {
		line = "smsform: " + oneLine(e.Reason) + "; no new batch starts, the requests in flight finish and are recorded"
	}
	if e.Type == "wait" {
		line = waitLine(e)
		p.until = e.Until
		if p.bar != nil {
			p.bar.Describe("waiting for a send window until " + e.Until.UTC().Format("15:04 UTC"))
		}
	}
	fmt.Fprintln(p.stderr, line)
}

// startLine says, when some recipients wait for their window, how many
// this run sends now and what becomes of the others.
func (p *Progress) startLine() string {
	if p.o.Waiting == 0 {
		return ""
	}
	next := ""
	if p.o.NextOpen != "" {
		next = " (the first may go " + p.o.NextOpen + ")"
	}
	then := "a later apply sends them, or apply --wait"
	if p.o.Wait {
		then = "this run waits for them"
	}
	return fmt.Sprintf("smsform: sending %s now; %s for their send window or not_before%s: %s",
		words.N(p.o.Total, "recipient", "recipients"), words.N(p.o.Waiting, "recipient waits", "recipients wait"), next, then)
}

// line is the progress line for logs: "smsform: 1,200 of 20,000 recipients
// done (6%), 41.3 msg/s, about 7 min left".
func (p *Progress) line(now time.Time) string {
	return fmt.Sprintf("smsform: %s of %s done (%.0f%%)%s",
		words.Count(p.sent), words.N(p.o.Total, "recipient", "recipients"),
		100*float64(p.sent)/float64(max(p.o.Total, 1)), p.rateWords(now, ", "))
}

// rateWords is the pace and the time left, after sep; nothing while the
// pace is not known yet.
func (p *Progress) rateWords(now time.Time, sep string) string {
	perSec, ok := p.pace.rate(now)
	if !ok {
		return ""
	}
	s := sep + strconv.FormatFloat(perSec, 'f', 1, 64) + " msg/s"
	if left, ok := p.Left(now); ok {
		s += ", " + leftWords(left)
	}
	return s
}

// Left is the time the run still takes at the pace of the last minute, as
// the progress shows it at now; ok is false while the pace is not known yet
// or nothing is left.
func (p *Progress) Left(now time.Time) (left time.Duration, ok bool) {
	perSec, ok := p.pace.rate(now)
	rest := p.o.Total - p.sent
	if !ok || rest <= 0 || perSec <= 0 {
		return 0, false
	}
	return time.Duration(float64(rest) / perSec * float64(time.Second)), true
}

// leftWords words the time left: "about 7 min left".
func leftWords(d time.Duration) string {
	if d < time.Minute {
		return "less than a minute left"
	}
	return "about " + words.Wait(d) + " left"
}

// pace measures how fast recipients are done over the last minute: the
// recipients done since the newest sample at least a minute old (or since
// the run started, or a wait ended, if that is more recent), over the time
// since then. The first batches of a run come back fast or slow by
// chance; a minute of them is what the rest will look like.
type pace struct {
	samples []paceSample // oldest first; samples[0] is the base
}

type paceSample struct {
	at   time.Time
	done int
}

// paceWindow is how far back the pace looks.
const paceWindow = time.Minute

// paceLeast is how long the pace must have been measured before it is
// shown: a figure from one batch says nothing.
const paceLeast = 5 * time.Second

// restart measures the pace from at, when done recipients were done.
func (m *pace) restart(at time.Time, done int) {
	m.samples = append(m.samples[:0], paceSample{at, done})
}

// add records that done recipients were done at at, and forgets what
// falls out of the window (keeping the newest sample before it as the base).
func (m *pace) add(at time.Time, done int) {
	m.samples = append(m.samples, paceSample{at, done})
	cut := 0
	for cut+1 < len(m.samples) && at.Sub(m.samples[cut+1].at) >= paceWindow {
		cut++
	}
	if cut > 0 {
		m.samples = append(m.samples[:0], m.samples[cut:]...)
	}
}

// rate is recipients a second over the last minute, once it has been
// measured for paceLeast.
func (m *pace) rate(now time.Time) (float64, bool) {
	if len(m.samples) == 0 {
		return 0, false
	}
	base, last := m.samples[0], m.samples[len(m.samples)-1]
	span := now.Sub(base.at)
	if span < paceLeast {
		return 0, false
	}
	return float64(last.done-base.done) / span.Seconds(), true
}

// retryLine words a retry event for a person: what went wrong, which try
// comes next, and when.
func retryLine(e apply.Event) string {
	what := "HTTP " + strconv.Itoa(e.HTTPStatus)
	if e.HTTPStatus == 0 {
		what = "no answer: " + oneLine(e.Reason)
	}
	subject := "batch " + e.Batch + " was not acted on"
	if e.Retried > 0 && e.HTTPStatus >= 200 && e.HTTPStatus < 300 {
		// The provider took the request but listed some recipients as
		// not acted on (throttled): those go again.
		subject = fmt.Sprintf("%s of batch %s %s not acted on (a retry status, said the provider)", words.N(e.Retried, "recipient", "recipients"), e.Batch,
			words.Plural(e.Retried, "was", "were"))
	}
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
	return fmt.Sprintf("smsform: waiting %s, until %s: %s (%s; interrupt to stop)",
		words.Wait(e.Wait), e.Until.UTC().Format("2006-01-02 15:04 UTC"), oneLine(e.Reason),
		words.N(e.Recipients, "recipient waits", "recipients wait"))
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

// WriteResult prints the summary table of a run, fitted to o.Width (its
// time in whole seconds, then its columns of zeros dropped, then one line
// a figure), and, when the run is complete (it ended with nothing left to
// send), a sentence that says so.
func WriteResult(w io.Writer, r *apply.Result, complete bool, o Output) error {
	if r == nil {
		return nil
	}
	fmt.Fprintln(w)
	cols := []column{
		{header: "Sent", cells: []string{words.Count(r.Sent)}},
		{header: "Failed", cells: []string{words.Count(r.Failed)}},
		{header: "In doubt", cells: []string{words.Count(r.InDoubt)}},
		{header: "Skipped", cells: []string{words.Count(r.Skipped)}},
		{header: "Segments", cells: []string{words.Count(r.Segments)}},
		{header: "Retries", cells: []string{words.Count(r.Retries)}},
		{header: "Time", cells: []string{r.Duration.Round(time.Millisecond).String()}},
	}
	// Only a project's ledger suppresses or holds back, only a send window
	// keeps waiting: shown when they did.
	if r.Suppressed > 0 || r.HeldByCap > 0 {
		cols = slices.Insert(cols, 4, column{header: "Suppressed", cells: []string{words.Count(r.Suppressed)}},
			column{header: "Held back", cells: []string{words.Count(r.HeldByCap)}})
	}
	if r.Waiting > 0 {
		cols = slices.Insert(cols, 3, column{header: "Waiting", cells: []string{words.Count(r.Waiting)}})
	}
	g := &grid{cols: cols}
	g.shrink = append(g.shrink, func(g *grid) bool {
		g.col("Time").cells[0] = r.Duration.Round(time.Second).String()
		return true
	})
	for _, c := range cols {
		if c.cells[0] == "0" {
			g.shrink = append(g.shrink, func(g *grid) bool { return g.drop(c.header) })
		}
	}
	g.fit(o.Width, o.Plain)
	if o.Width > 0 && g.least(o.Plain) > o.Width {
		// Still too wide: one line a figure.
		v := &grid{cols: []column{{header: "Result"}, {header: "Count"}}}
		for _, c := range g.cols {
			v.cols[0].cells = append(v.cols[0].cells, c.header)
			v.cols[1].cells = append(v.cols[1].cells, c.cells[0])
		}
		g = v
	}
	if err := g.write(w, o.Plain); err != nil {
		return err
	}
	if r.Skipped > 0 && r.Stopped != "" {
		fmt.Fprintf(w, "\nSkipped: %s not tried, since the run stopped first (%s); the next apply sends %s.\n",
			words.N(r.Skipped, "recipient", "recipients"), r.Stopped, words.Plural(r.Skipped, "it", "them"))
	}
	if r.Waiting > 0 {
		fmt.Fprintf(w, "\nWaiting: %s for %s send window; a later apply (or apply --wait) sends %s.\n",
			words.N(r.Waiting, "recipient", "recipients"), words.Plural(r.Waiting, "its", "their"), words.Plural(r.Waiting, "it", "them"))
	}
	for _, u := range r.Unrecognised {
		fmt.Fprintf(w, "\nThe provider answered status %s for %s, which provider.results (%s) does not name: in doubt. Add it there under sent, failed, retry or duplicate.\n",
			strconv.Quote(u.Status), words.N(u.Recipients, "recipient", "recipients"), u.Where)
	}
	if !complete {
		return nil
	}
	_, err := fmt.Fprintf(w, "\nApply complete: %s sent in %s; nothing is left to send.\n",
		words.N(r.Sent, "recipient", "recipients"), words.N(r.Batches, "batch", "batches"))
	return err
}
