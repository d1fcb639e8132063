package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// Journal is what apply needs of the state; *state.State satisfies it.
type Journal interface {
	// AdmitIntent records an intent for the recipients the project's
	// ledger lets go now (Admission.Send), recording those who opted out
	// as suppressed and leaving those over the frequency cap unrecorded;
	// a campaign's own state admits everyone.
	AdmitIntent(ctx context.Context, in state.Intent) (state.Admission, error)
	RecordOutcome(ctx context.Context, batchID string, o state.Outcome) error
	// RecordOutcomeAndAdmit records an outcome and admits the next intent
	// in one durable commit.
	RecordOutcomeAndAdmit(ctx context.Context, prevBatch string, o state.Outcome, next state.Intent) (state.Admission, error)
	ForgetIntent(ctx context.Context, batchID string) error
	// PausedNow says whether the campaign is paused now (a
	// *state.PausedError), read before each retry of a batch: a retry
	// records no intent to learn of a pause from. A method of the
	// interface, not an optional one: a wrapper that left it out once
	// made every retry blind to a pause.
	PausedNow(ctx context.Context) error
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
	MaxErrors     int     // requests whose recipients all failed or are in doubt before the run stops, default 10
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
	// Results, when set, is how the provider's answers list each
	// recipient (provider.results): each recipient then gets its own
	// outcome ([StatusOfResults]). The Sender must return the list
	// (api.Client.Results set to the same).
	Results *mapping.Results
	// MaxRecipients is the most recipients one request carries
	// (provider.max_recipients); a batch of more is sent in parts of at
	// most that many, under its id. 0: no limit but what a 413 teaches.
	MaxRecipients int
	// MaxSilent is how many requests in a row may go without an answer
	// (a timeout, or the connection dropped after sending) before the run
	// stops with a *SilentError, default [DefaultMaxSilent].
	MaxSilent int
	// Warn receives what the person should change but that does not stop
	// the run (a 413 that asks for provider.max_recipients); it is also a
	// warning event. nil: the event only.
	Warn func(error)
	// Limit is the most recipients the run attempts (apply --limit): whole
	// batches in plan order while their recipients stay within it; the
	// run then ends with a *LimitError. 0: no limit.
	Limit int
}

// DefaultMaxSilent is how many requests in a row without an answer stop
// a run, unless [Options] say otherwise.
const DefaultMaxSilent = 3

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
	if o.MaxSilent <= 0 {
		o.MaxSilent = DefaultMaxSilent
	}
	if o.Clock == nil {
		o.Clock = SystemClock()
	}
}

// maxRetryAfter is the longest Retry-After smsform waits; a server asking
// for more is treated as gone.
const maxRetryAfter = 5 * time.Minute

// Event is one step of a run, for progress displays and --json.
//
// A batch event (batch_sent, batch_failed, batch_in_doubt) is one request's
// outcome: Recipients counts those it settled, and Sent, Failed, InDoubt
// and Retried say how (Retried: not acted on, sent again in a request of
// their own). It is named for the worst of them: in_doubt if any is in
// doubt, else failed if any failed, else sent.
type Event struct {
	Type       string        `json:"type"` // start, batch_sent, batch_failed, batch_in_doubt, retry, wait, warning, summary
	Batch      string        `json:"batch,omitempty"`
	Recipients int           `json:"recipients,omitempty"`
	Sent       int           `json:"sent,omitempty"`
	Failed     int           `json:"failed,omitempty"`
	InDoubt    int           `json:"in_doubt,omitempty"`
	Retried    int           `json:"retried,omitempty"`
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
	Total   int `json:"total"`
	Sent    int `json:"sent"`
	Failed  int `json:"failed"`
	InDoubt int `json:"in_doubt"`
	// Skipped counts recipients not attempted because the run stopped
	// first (Stopped says why), their send window open; those whose window
	// was closed are Waiting, however the run ended.
	Skipped  int `json:"skipped"`
	Segments int `json:"segments"`
	Batches  int `json:"batches_sent"`
	Retries  int `json:"retries"` // requests sent again after the provider did not act on them
	// Retried counts recipients the provider did not act on inside an
	// answer that listed them (a retry status), each time they were sent
	// again.
	Retried int `json:"retried_recipients,omitempty"`
	// Duplicates counts the in-doubt recipients the provider says it
	// already has (a 409, or a results.duplicate status): most likely sent
	// by an earlier request.
	Duplicates int           `json:"duplicates,omitempty"`
	Duration   time.Duration `json:"duration_ns"`
	// Waiting counts recipients left for a later run because their send
	// window (or not_before) had not opened, whether or not the run
	// stopped early; Next is when the first of them may go (when the run
	// got that far), NextLabel says so in words.
	Waiting   int       `json:"waiting,omitempty"`
	Next      time.Time `json:"next_open,omitzero"`
	NextLabel string    `json:"next_label,omitempty"`
	// Expired counts recipients this campaign will not send: not_after has
	// passed, or comes before their window opens.
	Expired int `json:"expired,omitempty"`
	// Suppressed counts recipients who opted out since the plan was made:
	// recorded suppressed, never sent, not owed.
	Suppressed int `json:"suppressed,omitempty"`
	// HeldByCap counts recipients the frequency cap held back, left for a
	// later run; HeldNext is when the first of them may go.
	HeldByCap int       `json:"held_by_cap,omitempty"`
	HeldNext  time.Time `json:"held_next,omitzero"`
	// Unrecognised lists the statuses the provider answered that
	// provider.results does not name, with the recipients of this run that
	// got each (in doubt until someone names it).
	Unrecognised []UnknownStatus `json:"unrecognised_statuses,omitempty"`
	// Owed is what the state records as owed at the end, this run's and
	// every earlier run's (see Options.Owed).
	Owed *Owed `json:"owed,omitempty"`
	// Stopped says why the run stopped before trying every batch (an
	// interrupt, a pause, the limit, too many errors, the state refusing a
	// write, a silent provider): what Skipped counts. "" when it did not.
	Stopped string `json:"stopped,omitempty"`
	// LimitReached says the run stopped at Options.Limit (Limit, in
	// recipients); Skipped and Waiting count what it left.
	LimitReached bool `json:"limit_reached,omitempty"`
	Limit        int  `json:"limit,omitempty"`
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
	r := &runner{j: j, s: s, o: o, res: &Result{}, started: time.Now(), counted: map[int]bool{}}
	if p.Timed() {
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

	windowErr := r.passes(ctx, sendCtx, p)
	if windowErr == nil && r.res.Expired > 0 {
		windowErr = &ExpiredError{Left: r.res.Expired, Reason: r.gate.expiredWhy, Ended: r.gate.expiredEnded}
	}
	r.res.Duration = time.Since(r.started)
	r.limited()
	if r.res.Skipped > 0 {
		r.res.Stopped = stoppedBy(ctx, r.err)
	}
	if o.Owed != nil {
		owed := o.Owed()
		r.res.Owed = &owed
	}
	r.emit(Event{Type: "summary", Summary: r.res})
	switch {
	case errors.Is(r.err, ErrTooManyErrors) && !errors.Is(r.err, ErrStateRefused) && r.res.Skipped == 0 && r.res.Waiting == 0:
		// The limit was reached by the last batches: nothing was left
		// unsent, so the run finished, with errors.
		return r.res, &IncompleteError{Failed: r.res.Failed, InDoubt: r.res.InDoubt, Owed: r.owed(), Duplicates: r.res.Duplicates, Unrecognised: r.res.Unrecognised}
	case errors.As(r.err, new(*LimitError)) && r.owed().Any():
		// Stopped at the limit, but owing: never exit 0 then.
		return r.res, &IncompleteError{Failed: r.res.Failed, InDoubt: r.res.InDoubt, Owed: r.owed(), Duplicates: r.res.Duplicates, Unrecognised: r.res.Unrecognised}
	case r.err != nil:
		return r.res, r.err
	case ctx.Err() != nil:
		return r.res, ErrInterrupted
	case r.res.Failed > 0 || r.res.InDoubt > 0:
		return r.res, &IncompleteError{Failed: r.res.Failed, InDoubt: r.res.InDoubt, Owed: r.owed(), Duplicates: r.res.Duplicates, Unrecognised: r.res.Unrecognised, Later: closedOf(windowErr)}
	case r.res.Owed != nil && r.res.Owed.Any() && !errors.As(windowErr, new(*ExpiredError)):
		// Owed from earlier runs outranks what waits (exit 3, not 5): a
		// run that could send nothing now must not hide recipients in
		// doubt from a CI that reruns on 5.
		return r.res, &IncompleteError{Owed: *r.res.Owed, Later: closedOf(windowErr)}
	}
	return r.res, windowErr
}

// passes sends p's batches, then, pass after pass, those that found their
// window closed and what the cap held back, while the run waits for them
// (Options.Wait); it returns what ends a run that does not wait (a
// *ClosedError when anything may go later) or that waited in vain.
func (r *runner) passes(ctx, sendCtx context.Context, p *plan.Plan) error {
	var (
		todo      []batchRef // nil: every batch
		held      []capHold  // what the frequency cap held back, sent again after the batches
		windowErr error
	)
	for {
		waiting := r.pass(ctx, sendCtx, p, todo, held)
		held = r.takeHeld()
		if len(waiting) == 0 && len(held) == 0 {
			break
		}
		if r.stopped(ctx) {
			r.skipAll(waiting)
			r.skipHeld(held)
			break
		}
		if r.limitReached() {
			// The batches past the limit are left; what the cap held back
			// of those within it is part of the canary, and waits for the
			// cap as it would without a limit (a canary the cap held
			// whole once ended as if it had gone, exit 0, sending nobody).
			r.skipAll(waiting)
			waiting = nil
			if len(held) == 0 {
				break
			}
		}
		var wait time.Time
		todo, wait, windowErr = r.after(waiting, held)
		if !r.o.Wait || !errors.As(windowErr, new(*ClosedError)) {
			break
		}
		waited := sleepUntil(ctx, r.o.Clock, wait, func(d time.Duration) {
			r.emit(Event{Type: "wait", Recipients: r.res.Waiting + r.res.HeldByCap, Reason: waitReason(r.res), Until: wait.UTC(), Wait: d})
		})
		r.res.Waiting, r.res.Next, r.res.NextLabel, windowErr = 0, time.Time{}, "", nil
		r.res.HeldByCap, r.res.HeldNext = 0, time.Time{}
		if !waited {
			r.skipAll(todo)
			r.skipHeld(held)
			break
		}
	}

	return windowErr
}

// closedOf is err as a *ClosedError, nil when it is not one.
func closedOf(err error) *ClosedError {
	var closed *ClosedError
	errors.As(err, &closed)
	return closed
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
func (r *runner) pass(ctx, sendCtx context.Context, p *plan.Plan, todo []batchRef, held []capHold) []batchRef {
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
		if r.stopped(ctx) || !r.reserve(i, b) {
			r.skipAt(i, b)
			return nil
		}
		jobs <- job{i: i, b: b}
		return nil
	})
	for _, h := range held {
		if r.stopped(ctx) {
			r.skip(h.b)
			continue
		}
		jobs <- job{i: h.i, b: h.b, held: true}
	}
	close(jobs)
	wg.Wait()
	if err != nil && !errors.Is(err, errPassDone) {
		r.fail(fmt.Errorf("read the plan's batches: %w", err))
	}
	slices.SortFunc(r.waiting, func(a, b batchRef) int { return cmp.Compare(a.i, b.i) })
	return slices.Clone(r.waiting)
}

// skipAll counts batches left unsent, as skip does.
func (r *runner) skipAll(refs []batchRef) {
	r.count(func(res *Result) {
		for _, ref := range refs {
			r.left(res, ref.i, ref.recipients)
		}
	})
}

// left counts n recipients of batch i that the run leaves unsent: waiting
// when their send window is closed now (a later run sends them, whether or
// not this one stopped), else skipped (the run stopped first). One
// definition, whatever stopped the run.
func (r *runner) left(res *Result, i, n int) {
	if r.openNowLocked(i) {
		res.Skipped += n
		return
	}
	res.Waiting += n
}

// job is a batch and its place in the plan; held: b is what the frequency
// cap held back of that batch in an earlier pass, not the whole batch.
type job struct {
	i    int
	b    plan.Batch
	held bool
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
	held    []capHold  // what the frequency cap held back in this pass
	learned int        // the most recipients a request may carry, from 413s; 0: no limit known
	warned  bool       // the first 413 was said
	silent  []string   // batches of the requests in a row that got no answer
	// reserved counts the recipients of the batches handed out against
	// Options.Limit; counted says which batches they are.
	reserved  int
	counted   map[int]bool
	limitHit  bool // a batch did not fit: none is handed out any more
	pauseSaid bool // a paused event was emitted
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
	if ferr := r.forget(b); ferr != nil {
		return errors.Join(err, ferr)
	}
	r.skip(b)
	return err
}

// forget undoes the intent of a batch the API provably did not act on.
func (r *runner) forget(b plan.Batch) error {
	if err := r.j.ForgetIntent(r.writeCtx, b.ID); err != nil {
		r.unrecorded(b, err)
		return fmt.Errorf("%w (forgetting an intent; the batch stays in doubt): %w", ErrStateRefused, err)
	}
	return nil
}

// unrecorded counts and reports a batch whose intent is durable but whose
// end could not be written: the state holds it in doubt.
func (r *runner) unrecorded(b plan.Batch, err error) {
	r.count(func(res *Result) { res.InDoubt += len(b.Recipients) })
	r.emit(Event{Type: "batch_in_doubt", Batch: b.ID, Recipients: len(b.Recipients), InDoubt: len(b.Recipients), Reason: "not recorded: " + err.Error()})
}

func (r *runner) skip(b plan.Batch) {
	r.count(func(res *Result) { res.Skipped += len(b.Recipients) })
}

// skipAt is skip of batch i of the plan, which may be waiting for its
// window rather than skipped (see left).
func (r *runner) skipAt(i int, b plan.Batch) {
	r.count(func(res *Result) { r.left(res, i, len(b.Recipients)) })
}

// skipPieces counts pieces of a batch left unsent.
func (r *runner) skipPieces(ps []piece) {
	for _, p := range ps {
		r.skip(p.b)
	}
}

// cut is p as the requests it may be sent in: no more recipients in one
// than Options.MaxRecipients, nor than a 413 taught earlier in the run.
func (r *runner) cut(p piece) []piece {
	r.mu.Lock()
	size := r.learned
	r.mu.Unlock()
	if m := r.o.MaxRecipients; m > 0 && (size == 0 || m < size) {
		size = m
	}
	if size <= 0 || len(p.b.Recipients) <= size {
		return []piece{p}
	}
	var out []piece
	for rest := p.b.Recipients; len(rest) > 0; {
		k := min(size, len(rest))
		q := p
		q.b = withRecipients(p.b, rest[:k])
		if len(out) > 0 {
			q.wait = 0 // a retry's backoff is waited once
		}
		out = append(out, q)
		rest = rest[k:]
	}
	return out
}

// tooLarge learns from a 413 to a request of n recipients of b: no
// request of this run carries more than half as many. The first one is a
// warning: provider.max_recipients says the provider's limit once for all.
func (r *runner) tooLarge(b plan.Batch, n int) {
	half := (n + 1) / 2
	r.mu.Lock()
	if r.learned == 0 || half < r.learned {
		r.learned = half
	}
	first := !r.warned
	r.warned = true
	r.mu.Unlock()
	if !first {
		return
	}
	w := fmt.Errorf("the provider refused a request of %d recipients as too large (413): smsform sends it again in halves, down to one recipient, "+
		"and no more than %d per request for the rest of this run; set provider.max_recipients to the provider's limit so that plan cuts batches to it", n, half)
	r.emit(Event{Type: "warning", Batch: b.ID, Recipients: n, HTTPStatus: http.StatusRequestEntityTooLarge, Reason: w.Error()})
	if r.o.Warn != nil {
		r.o.Warn(w)
	}
}

// heard notes an answer from the provider: it is not silent.
func (r *runner) heard() {
	r.mu.Lock()
	r.silent = r.silent[:0]
	r.mu.Unlock()
}

// unheard notes a request of b sent and never answered; Options.MaxSilent
// of them in a row stop the run with a *SilentError.
func (r *runner) unheard(b plan.Batch) {
	r.mu.Lock()
	r.silent = append(r.silent, b.ID)
	n, ids := len(r.silent), slices.Clone(r.silent)
	r.mu.Unlock()
	if n >= r.o.MaxSilent {
		r.fail(&SilentError{Requests: n, Batches: ids})
	}
}

// account counts a journaled outcome and reports it; it returns
// ErrTooManyErrors when the run must stop.
func (r *runner) account(p *settled) error {
	b, o := p.b, p.o
	e := Event{Batch: b.ID, HTTPStatus: o.HTTPStatus, RequestID: o.RequestID, Reason: o.Reason}
	tallyOutcome(&e, o, len(b.Recipients))
	var stop error
	dup := duplicates(o, len(b.Recipients))
	r.count(func(res *Result) {
		res.Sent += e.Sent
		res.Failed += e.Failed
		res.InDoubt += e.InDoubt
		res.Duplicates += dup
		res.Unrecognised = addUnknown(res.Unrecognised, p.unknown)
		if e.Sent > 0 {
			res.Batches++
			res.Segments += b.Segments * e.Sent
		}
		// A request that sent some of its recipients shows the provider
		// at work: the others' refusals are theirs, not a reason to stop.
		if e.Sent == 0 && e.Failed+e.InDoubt > 0 {
			r.errors++
			if r.errors >= r.o.MaxErrors {
				stop = fmt.Errorf("%w: stopped after %d", ErrTooManyErrors, r.errors)
				if r.err == nil {
					r.err = stop // at once: no worker starts another request
				}
			}
		}
	})
	// The event is named for the worst status: batch_in_doubt, batch_failed
	// or batch_sent.
	e.Type = "batch_" + state.Sent.String()
	switch {
	case e.InDoubt > 0:
		e.Type = "batch_" + state.InDoubt.String()
	case e.Failed > 0:
		e.Type = "batch_" + state.Failed.String()
	}
	e.Recipients = e.Sent + e.Failed + e.InDoubt
	if e.Sent > 0 {
		e.Segments = b.Segments * e.Sent
	}
	if e.Recipients > 0 { // else all are sent again: the retry event says so
		r.emit(e)
	}
	return stop
}

// tallyOutcome sets e's counts from an outcome of a request to n
// recipients, and its reason from the first part that gives one.
func tallyOutcome(e *Event, o state.Outcome, n int) {
	parts := o.Parts
	if len(parts) == 0 {
		parts = []state.Part{{Status: o.Status, Reason: o.Reason, Phones: make([]string, n)}}
	}
	for _, p := range parts {
		switch p.Status {
		case state.Sent:
			e.Sent += len(p.Phones)
		case state.Failed:
			e.Failed += len(p.Phones)
		case state.InDoubt:
			e.InDoubt += len(p.Phones)
		case state.Unsent:
			e.Retried += len(p.Phones)
		}
		if e.Reason == "" && (p.Status == state.Failed || p.Status == state.InDoubt) {
			e.Reason = p.Reason
		}
	}
}

// duplicates counts the recipients of o, an outcome of a request to n
// recipients, that the provider says it already has.
func duplicates(o state.Outcome, n int) int {
	parts := o.Parts
	if len(parts) == 0 {
		parts = []state.Part{{Status: o.Status, Reason: o.Reason, Phones: make([]string, n)}}
	}
	dup := 0
	for _, p := range parts {
		if p.Status == state.InDoubt && strings.HasPrefix(p.Reason, duplicateReason) {
			dup += len(p.Phones)
		}
	}
	return dup
}

// addUnknown adds the counts of more to those of to, status by status.
func addUnknown(to, more []UnknownStatus) []UnknownStatus {
	for _, u := range more {
		i := slices.IndexFunc(to, func(t UnknownStatus) bool { return t.Status == u.Status && t.Where == u.Where })
		if i < 0 {
			to = append(to, u)
			continue
		}
		to[i].Recipients += u.Recipients
	}
	return to
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

// stoppedBy says, in a few words, what stopped a run early.
func stoppedBy(ctx context.Context, err error) string {
	var silent *SilentError
	switch {
	case errors.Is(err, state.ErrPaused):
		return "the campaign was paused"
	case errors.As(err, new(*LimitError)):
		return "--limit was reached"
	case errors.Is(err, ErrTooManyErrors):
		return "too many failed or in-doubt batches"
	case errors.Is(err, ErrStateRefused):
		return "the state refused a write"
	case errors.As(err, &silent):
		return "the provider stopped answering"
	case err != nil:
		return "an error"
	case ctx.Err() != nil:
		return "interrupted"
	}
	return "stopped"
}
