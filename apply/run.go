package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// Journal is what apply needs of the state; *state.State satisfies it.
type Journal interface {
	RecordIntent(ctx context.Context, in state.Intent) error
	RecordOutcome(ctx context.Context, batchID string, o state.Outcome) error
	// RecordOutcomeAndIntent records both in one durable commit.
	RecordOutcomeAndIntent(ctx context.Context, prevBatch string, o state.Outcome, next state.Intent) error
	ForgetIntent(ctx context.Context, batchID string) error
}

// Sender sends one batch; a failure should be an *api.Error so that what
// it means for the batch can be told ([StatusOf]). *api.Authenticated
// satisfies it, and wraps a failure to get a token in an [api.TokenError].
type Sender interface {
	Send(ctx context.Context, req api.SendRequest) (api.SendResponse, error)
}

// DefaultMaxRetries is how many times a batch the API did not act on is
// tried again, unless [Options] say otherwise.
const DefaultMaxRetries = 8

// Options tune a run. The zero value of each field means its default.
type Options struct {
	From          string  // the sender, the API's "from"
	RatePerSecond float64 // 0: unlimited
	Concurrency   int     // requests in flight, default 1
	MaxErrors     int     // failed or in-doubt batches before the run stops, default 10
	MaxRetries    int     // retries of one batch the API did not act on, default [DefaultMaxRetries]
	BackoffBase   time.Duration
	BackoffCap    time.Duration
	// Grace is how long requests in flight may finish after ctx is
	// cancelled (the first interrupt), default 5 s.
	Grace time.Duration
	// Events receives progress, one call at a time; nil discards it.
	Events func(Event)
	// Clock tells the time for send windows and waits until they open;
	// nil is the system clock.
	Clock Clock
	// Wait keeps the run going while send windows are closed, sleeping
	// until they open, until everything is sent or not_after passes;
	// without it the run stops with a *ClosedError.
	Wait bool
	// Owed, when set, says what the state records as owed once the run
	// ends: the summary carries it, and an error-free run that leaves
	// anyone owed ends with an *IncompleteError.
	Owed func() Owed
}

func (o *Options) defaults() {
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	if o.MaxErrors <= 0 {
		o.MaxErrors = 10
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = DefaultMaxRetries
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 500 * time.Millisecond
	}
	if o.BackoffCap <= 0 {
		o.BackoffCap = 30 * time.Second
	}
	if o.Grace <= 0 {
		o.Grace = 5 * time.Second
	}
	if o.Clock == nil {
		o.Clock = SystemClock()
	}
}

// maxRetryAfter is the longest Retry-After smsform waits; a server asking
// for more is treated as gone.
const maxRetryAfter = 5 * time.Minute

// Event is one step of a run, for progress displays and --json.
type Event struct {
	Type       string        `json:"type"` // start, batch_sent, batch_failed, batch_in_doubt, retry, wait, summary
	Batch      string        `json:"batch,omitempty"`
	Recipients int           `json:"recipients,omitempty"`
	Segments   int           `json:"segments,omitempty"`
	HTTPStatus int           `json:"http_status,omitempty"`
	RequestID  string        `json:"request_id,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	Attempt    int           `json:"attempt,omitempty"`
	Wait       time.Duration `json:"wait_ns,omitempty"`
	Until      time.Time     `json:"until,omitzero"` // wait: when the run goes on
	Summary    *Result       `json:"summary,omitempty"`
}

// Result counts a run, in recipients unless said otherwise.
type Result struct {
	Total    int           `json:"total"`
	Sent     int           `json:"sent"`
	Failed   int           `json:"failed"`
	InDoubt  int           `json:"in_doubt"`
	Skipped  int           `json:"skipped"` // not attempted: the run stopped first
	Segments int           `json:"segments"`
	Batches  int           `json:"batches_sent"`
	Retries  int           `json:"retries"`
	Duration time.Duration `json:"duration_ns"`
	// Waiting counts recipients left for a later run because their send
	// window (or not_before) had not opened; Next is when the first of them
	// may go, NextLabel says so in words.
	Waiting   int       `json:"waiting,omitempty"`
	Next      time.Time `json:"next_open,omitzero"`
	NextLabel string    `json:"next_label,omitempty"`
	// Expired counts recipients this campaign will not send: not_after has
	// passed, or comes before their window opens.
	Expired int `json:"expired,omitempty"`
	// Owed is what the state records as owed at the end, this run's and
	// every earlier run's (see Options.Owed).
	Owed *Owed `json:"owed,omitempty"`
}

// owed is the state's count of what is owed, or this run's when the
// state's is not known.
func (r *runner) owed() Owed {
	if r.res.Owed != nil {
		return *r.res.Owed
	}
	return Owed{Failed: r.res.Failed, InDoubt: r.res.InDoubt}
}

// ErrStateRefused is wrapped by the error that stops a run when the state
// could not be written (disk full, read-only file): the run stops before
// sending anything more, and what was recorded stays.
var ErrStateRefused = errors.New("the state refused a write")

// ErrTooManyErrors stops a run after Options.MaxErrors failed or in-doubt batches.
var ErrTooManyErrors = errors.New("too many failed or in-doubt batches")

// Run sends p's batches through s, journaling each step in j. It returns the
// counts and: nil when everything was sent; *IncompleteError when the run
// finished with failed or in-doubt recipients; ErrInterrupted when ctx was
// cancelled; another error when the run had to stop (state not writable,
// server gone, credentials refused, too many errors).
func Run(ctx context.Context, p *plan.Plan, j Journal, s Sender, o Options) (*Result, error) {
	o.defaults()
	r := &runner{j: j, s: s, o: o, res: &Result{}, started: time.Now()}
	if p.Window.Active() {
		g, err := newGate(p, o.Clock)
		if err != nil {
			return nil, err
		}
		r.gate = g
	}
	if o.RatePerSecond > 0 {
		r.limiter = rate.NewLimiter(rate.Limit(o.RatePerSecond), 1)
	}
	r.res.Total = p.BatchedRecipients()
	r.emit(Event{Type: "start", Recipients: r.res.Total, Segments: p.Summary.Segments})

	// Requests in flight outlive an interrupt by Grace, so that their
	// outcomes are known and recorded rather than left in doubt.
	sendCtx, cancelSend := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSend()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(o.Grace, cancelSend) })
	defer stopGrace()
	// State writes must happen even after an interrupt: they are what a
	// rerun relies on.
	r.writeCtx = context.WithoutCancel(ctx)

	var (
		todo      []batchRef // nil: every batch
		windowErr error
	)
	for {
		waiting := r.pass(ctx, sendCtx, p, todo)
		if len(waiting) == 0 {
			break
		}
		if r.stopped(ctx) {
			r.skipAll(waiting)
			break
		}
		var wait time.Time
		todo, wait, windowErr = r.gate.after(waiting, r.res)
		if !o.Wait || !errors.As(windowErr, new(*ClosedError)) {
			break
		}
		waited := r.gate.sleepUntil(ctx, wait, func(d time.Duration) {
			r.emit(Event{Type: "wait", Recipients: r.res.Waiting, Reason: r.res.NextLabel, Until: wait.UTC(), Wait: d})
		})
		r.res.Waiting, r.res.Next, r.res.NextLabel, windowErr = 0, time.Time{}, "", nil
		if !waited {
			r.skipAll(todo)
			break
		}
	}

	if windowErr == nil && r.res.Expired > 0 {
		windowErr = &ExpiredError{Left: r.res.Expired, Reason: r.gate.expiredWhy}
	}
	r.res.Duration = time.Since(r.started)
	if o.Owed != nil {
		owed := o.Owed()
		r.res.Owed = &owed
	}
	r.emit(Event{Type: "summary", Summary: r.res})
	switch {
	case errors.Is(r.err, ErrTooManyErrors) && !errors.Is(r.err, ErrStateRefused) && r.res.Skipped == 0 && r.res.Waiting == 0:
		// The limit was reached by the last batches: nothing was left
		// unsent, so the run finished, with errors.
		return r.res, &IncompleteError{Failed: r.res.Failed, InDoubt: r.res.InDoubt, Owed: r.owed()}
	case r.err != nil:
		return r.res, r.err
	case ctx.Err() != nil:
		return r.res, ErrInterrupted
	case r.res.Failed > 0 || r.res.InDoubt > 0:
		return r.res, &IncompleteError{Failed: r.res.Failed, InDoubt: r.res.InDoubt, Owed: r.owed()}
	case windowErr == nil && r.res.Owed != nil && r.res.Owed.Any():
		return r.res, &IncompleteError{Owed: *r.res.Owed}
	}
	return r.res, windowErr
}

// batchRef is a batch by its place in the plan, with its recipient count:
// what is remembered of a batch that waits for its window, so that a plan
// read from its file is not held in memory between passes.
type batchRef struct {
	i, recipients int
}

// errPassDone ends a pass's walk of the plan once its last batch is handed
// out.
var errPassDone = errors.New("pass done")

// pass sends p's batches listed in todo (every batch when todo is nil), in
// order, and returns those that found their send window closed right
// before their intent, in order. Each pass ends with every outcome
// journaled.
func (r *runner) pass(ctx, sendCtx context.Context, p *plan.Plan, todo []batchRef) []batchRef {
	r.waiting = r.waiting[:0]
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range r.o.Concurrency {
		wg.Go(func() {
			(&worker{r: r}).run(ctx, sendCtx, jobs)
		})
	}
	k := 0
	err := p.EachBatch(func(i int, b plan.Batch) error {
		if todo != nil {
			if k == len(todo) {
				return errPassDone
			}
			if todo[k].i != i {
				return nil
			}
			k++
		}
		if r.stopped(ctx) {
			r.skip(b)
			return nil
		}
		jobs <- job{i: i, b: b}
		return nil
	})
	close(jobs)
	wg.Wait()
	if err != nil && !errors.Is(err, errPassDone) {
		r.fail(fmt.Errorf("read the plan's batches: %w", err))
	}
	slices.SortFunc(r.waiting, func(a, b batchRef) int { return cmp.Compare(a.i, b.i) })
	return slices.Clone(r.waiting)
}

// skipAll counts batches left unsent.
func (r *runner) skipAll(refs []batchRef) {
	r.count(func(res *Result) {
		for _, ref := range refs {
			res.Skipped += ref.recipients
		}
	})
}

// job is a batch and its place in the plan.
type job struct {
	i int
	b plan.Batch
}

type runner struct {
	j        Journal
	s        Sender
	o        Options
	limiter  *rate.Limiter
	writeCtx context.Context
	started  time.Time
	gate     *gate // nil when the plan may be sent at any time

	mu      sync.Mutex // guards what follows, and serialises events
	res     *Result
	errors  int
	err     error      // the first error that stopped the run
	waiting []batchRef // batches of this pass whose window was closed
}

func (r *runner) emit(e Event) {
	if r.o.Events == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.o.Events(e)
}

// fail records the error that stops the run: the first one, except that a
// state that refused a write is always told, whatever stopped the run first.
func (r *runner) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.err == nil:
		r.err = err
	case errors.Is(err, ErrStateRefused) && !errors.Is(r.err, ErrStateRefused):
		r.err = errors.Join(err, r.err)
	}
}

func (r *runner) stopped(ctx context.Context) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err != nil || ctx.Err() != nil
}

// worker sends batches one after another: journal the intent, send, keep
// the outcome pending. The pending outcome is journaled in the same commit
// as the worker's next intent, so that each batch costs one durable commit,
// not two; nothing is reported before it is journaled, and an outcome never
// waits longer than it takes to pick up the next batch (a rate wait or the
// end of the run journals it alone first).
//
// A kill thus leaves at most one batch per worker in doubt. Overlapping the
// next intent's commit with the current request would send faster but
// leave two per worker in doubt; the README's performance section says what
// that was measured to gain.
type worker struct {
	r       *runner
	pending *settled
}

// settled is an outcome known but not yet journaled.
type settled struct {
	b plan.Batch
	o state.Outcome
}

// run sends the batches it takes until the channel closes, then journals
// the last outcome. It reads the channel to its end even once the run
// stopped, so that the loop feeding it never waits forever.
func (w *worker) run(ctx, sendCtx context.Context, jobs <-chan job) {
	for j := range jobs {
		if err := w.sendBatch(ctx, sendCtx, j.i, j.b); err != nil {
			w.r.fail(err)
		}
	}
	if err := w.flush(); err != nil {
		w.r.fail(err)
	}
}

// sendBatch paces, journals the intent, sends and leaves the outcome
// pending. An error stops the whole run.
func (w *worker) sendBatch(ctx, sendCtx context.Context, i int, b plan.Batch) error {
	r := w.r
	if r.stopped(ctx) {
		r.skip(b)
		return nil
	}
	if r.closed(i, len(b.Recipients)) {
		return nil
	}
	if err := w.pace(ctx); err != nil {
		r.skip(b)
		if errors.Is(err, ErrInterrupted) {
			return nil // Run reports the interrupt
		}
		return err
	}
	// Another worker may have stopped the run while this one waited, and
	// the window may have closed: it is checked right before the intent.
	if r.stopped(ctx) {
		r.skip(b)
		return nil
	}
	if r.closed(i, len(b.Recipients)) {
		return nil
	}
	if err := w.recordIntent(b); err != nil {
		return err
	}
	if r.stopped(ctx) {
		return r.notSent(b, nil)
	}
	res := w.send(ctx, sendCtx, b)
	w.pending = res.s
	return res.err
}

// pace waits for the rate limiter before a batch's intent is journaled, so
// that a kill while waiting leaves nothing in doubt. A pending outcome is
// journaled before any wait rather than held through it.
func (w *worker) pace(ctx context.Context) error {
	lim := w.r.limiter
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	if lim == nil {
		return nil
	}
	res := lim.Reserve()
	if res.Delay() == 0 {
		return nil
	}
	if err := w.flush(); err != nil {
		res.Cancel()
		return err
	}
	if !sleep(ctx, res.Delay()) {
		res.Cancel()
		return ErrInterrupted
	}
	return nil
}

// flush journals the pending outcome on its own.
func (w *worker) flush() error {
	if w.pending == nil {
		return nil
	}
	p := w.pending
	if err := w.r.j.RecordOutcome(w.r.writeCtx, p.b.ID, p.o); err != nil {
		// The intent is durable, so the batch stays in doubt: never resent silently.
		w.pending = nil
		w.r.unrecorded(p.b, err)
		return fmt.Errorf("%w (the outcome; the batch stays in doubt): %w", ErrStateRefused, err)
	}
	w.pending = nil
	return w.r.account(p)
}

// recordIntent journals b's intent, with the pending outcome if there is
// one. When it fails, nothing of b was sent and b is counted as skipped.
func (w *worker) recordIntent(b plan.Batch) error {
	r := w.r
	intent := state.Intent{BatchID: b.ID, Phones: b.Recipients, BodyHash: state.BodyHash(b.Body)}
	var err error
	if w.pending == nil {
		err = r.j.RecordIntent(r.writeCtx, intent)
	} else if err = r.j.RecordOutcomeAndIntent(r.writeCtx, w.pending.b.ID, w.pending.o, intent); err == nil {
		p := w.pending
		w.pending = nil
		if stop := r.account(p); stop != nil {
			return r.notSent(b, stop) // too many errors: b's intent is undone, unsent
		}
	}
	if err == nil {
		return nil
	}
	r.skip(b)
	if errors.Is(err, state.ErrAlreadySent) {
		// Not the disk: the plan promised someone the state already holds.
		return fmt.Errorf("batch %s names a recipient the state already holds as sent or in doubt; nothing of it was sent: plan again: %w", b.ID, err)
	}
	what := "the intent; nothing of the batch was sent"
	if w.pending != nil {
		what = "an outcome and the next intent; nothing of the next batch was sent"
	}
	return fmt.Errorf("%w (%s): %w", ErrStateRefused, what, err)
}

// sendResult is how a batch's sending ended: an outcome to journal, or an
// error that stops the run (the batch's intent then already undone or left
// in doubt).
type sendResult struct {
	s   *settled
	err error
}

// send sends b, whose intent is journaled, with retries while the API
// provably did not act.
func (w *worker) send(ctx, sendCtx context.Context, b plan.Batch) sendResult {
	r := w.r
	stop := func(err error) sendResult { return sendResult{err: r.notSent(b, err)} }
	settle := func(status state.Status, code int, reason string) sendResult {
		return sendResult{s: &settled{b: b, o: state.Outcome{Status: status, HTTPStatus: code, Reason: reason}}}
	}
	req := api.SendRequest{From: r.o.From, To: b.Recipients, Body: b.Body}
	for attempt := 1; ; attempt++ {
		// The first attempt was paced before its intent.
		if ctx.Err() != nil || attempt > 1 && r.wait(ctx) != nil {
			return stop(ErrInterrupted)
		}
		resp, err := r.s.Send(sendCtx, req)
		if err == nil {
			// The status is recorded as the provider gave it (201, 202,
			// 204…); a Sender that does not say is taken as a plain 200.
			s := settle(state.Sent, cmp.Or(resp.Status, 200), "")
			s.s.o.RequestID = resp.RequestID
			return s
		}
		var ae *api.Error
		tokenFailed := errors.As(err, new(*api.TokenError))
		switch {
		case tokenFailed && !errors.As(err, &ae):
			// No token could be had (no credentials, say): nothing was sent.
			return stop(err)
		case !errors.As(err, &ae):
			// A Sender's failure that does not say whether the API acted:
			// only an operator can tell.
			return settle(state.InDoubt, 0, err.Error())
		case !tokenFailed && ae.WrongPlace():
			// No endpoint there, or a redirect not followed: the base URL
			// is wrong. Nothing was sent, and no recipient is to blame.
			return stop(&WrongPlaceError{Err: ae})
		case !tokenFailed && ae.Certificate():
			// Trying again cannot help until this machine trusts it.
			return stop(err)
		case !tokenFailed && ae.Status == http.StatusForbidden && !r.anySent():
			// Refused before anything was sent: a missing permission, not
			// these recipients' fault.
			return stop(&ForbiddenError{Err: ae})
		}
		status := StatusOf(ae)
		if tokenFailed {
			// The batch never left: retry while getting a token may work
			// again later, stop otherwise (credentials refused, say).
			if !transient(ae) {
				return stop(err)
			}
			status = state.Unsent
		}
		if status != state.Unsent {
			return settle(status, ae.Status, ae.Error())
		}
		// Not acted on: safe to try again, within bounds.
		switch {
		case ctx.Err() != nil:
			return stop(ErrInterrupted)
		case ae.Status == 401:
			return stop(err) // api.Authenticated already renewed the token once
		case ae.RetryAfter > maxRetryAfter:
			return stop(fmt.Errorf("batch %s not sent: the API asks to wait %s (Retry-After), more than the %s smsform waits: %w",
				b.ID, ae.RetryAfter, maxRetryAfter, err))
		case attempt > r.o.MaxRetries:
			return stop(fmt.Errorf("batch %s not sent after %d attempts: %w", b.ID, attempt, err))
		}
		wait := backoff(attempt, ae.RetryAfter, r.o.BackoffBase, r.o.BackoffCap)
		r.count(func(res *Result) { res.Retries++ })
		r.emit(Event{Type: "retry", Batch: b.ID, Recipients: len(b.Recipients), HTTPStatus: ae.Status,
			Reason: ae.Error(), Attempt: attempt, Wait: wait})
		if !sleep(ctx, wait) {
			return stop(ErrInterrupted)
		}
	}
}

// transient reports whether a failed call may succeed if made again later:
// no answer, 408, 429, or a server error; never a certificate this machine
// does not trust.
func transient(ae *api.Error) bool {
	return ae.Status == 0 && ae.Err != nil && !ae.Certificate() || ae.Status == 408 || ae.Status == 429 || ae.Status >= 500
}

// anySent reports whether this run has had a batch accepted.
func (r *runner) anySent() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res.Batches > 0
}

// wait paces requests to the campaign's rate.
func (r *runner) wait(ctx context.Context) error {
	if r.limiter == nil {
		return ctx.Err()
	}
	return r.limiter.Wait(ctx)
}

// notSent undoes the intent of a batch the API provably did not act on, so
// that a rerun plans it again, counts it as skipped and passes err on.
func (r *runner) notSent(b plan.Batch, err error) error {
	if ferr := r.j.ForgetIntent(r.writeCtx, b.ID); ferr != nil {
		r.unrecorded(b, ferr)
		return errors.Join(err, fmt.Errorf("%w (forgetting an intent; the batch stays in doubt): %w", ErrStateRefused, ferr))
	}
	r.skip(b)
	return err
}

// unrecorded counts and reports a batch whose intent is durable but whose
// end could not be written: the state holds it in doubt.
func (r *runner) unrecorded(b plan.Batch, err error) {
	r.count(func(res *Result) { res.InDoubt += len(b.Recipients) })
	r.emit(Event{Type: "batch_in_doubt", Batch: b.ID, Recipients: len(b.Recipients), Reason: "not recorded: " + err.Error()})
}

func (r *runner) skip(b plan.Batch) {
	r.count(func(res *Result) { res.Skipped += len(b.Recipients) })
}

// account counts a journaled outcome and reports it; it returns
// ErrTooManyErrors when the run must stop.
func (r *runner) account(p *settled) error {
	b, o := p.b, p.o
	n := len(b.Recipients)
	var stop error
	r.count(func(res *Result) {
		switch o.Status {
		case state.Sent:
			res.Sent += n
			res.Batches++
			res.Segments += b.TotalSegments()
		case state.Failed:
			res.Failed += n
		case state.InDoubt:
			res.InDoubt += n
		}
		if o.Status != state.Sent {
			r.errors++
			if r.errors >= r.o.MaxErrors {
				stop = fmt.Errorf("%w: stopped after %d", ErrTooManyErrors, r.errors)
				if r.err == nil {
					r.err = stop // at once: no worker starts another request
				}
			}
		}
	})
	// The event is named for the status: batch_sent, batch_failed, batch_in_doubt.
	e := Event{Type: "batch_" + o.Status.String(), Batch: b.ID, Recipients: n, HTTPStatus: o.HTTPStatus, RequestID: o.RequestID, Reason: o.Reason}
	if o.Status == state.Sent {
		e.Segments = b.TotalSegments()
	}
	r.emit(e)
	return stop
}

func (r *runner) count(f func(*Result)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.res)
}

// backoff is how long to wait before retry number attempt: capped
// exponential backoff with full jitter, and never less than the server's
// Retry-After.
func backoff(attempt int, retryAfter, base, cap time.Duration) time.Duration {
	ceiling := base << min(attempt-1, 20)
	if ceiling <= 0 || ceiling > cap {
		ceiling = cap
	}
	d := rand.N(ceiling + 1)
	return max(d, retryAfter)
}

// sleep waits for d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
