package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// worker sends batches one after another: journal the intent, send, keep
// the outcome pending. The pending outcome is journaled in the same commit
// as the worker's next intent, so that each batch costs one durable commit,
// not two; nothing is reported before it is journaled, and an outcome never
// waits longer than it takes to pick up the next batch (a rate wait or the
// end of the run journals it alone first).
//
// A kill thus leaves at most one batch per worker in doubt. Overlapping the
// next intent's commit with the current request would send faster but
// leave two per worker in doubt; docs/performance.md says what
// that was measured to gain.
type worker struct {
	r       *runner
	pending *settled
	j       job // the batch being sent, as it was handed out
}

// settled is an outcome known but not yet journaled. b holds the
// recipients of the request it is the outcome of: all of a batch, or a
// piece of it, under the batch's id.
type settled struct {
	b plan.Batch
	o state.Outcome
	// unknown: the statuses the answer gave that the mapping does not
	// name, and how many recipients got each.
	unknown []UnknownStatus
}

// piece is one request of a batch: all of it, or some of its recipients
// under its id. A batch is sent in pieces when it has more recipients than
// a request may carry ([Options.MaxRecipients], or what a 413 taught),
// in halves after a 413, and again for the recipients an answer listed as
// not acted on.
type piece struct {
	b       plan.Batch    // Recipients: this request's
	retries int           // how many times the provider listed them as not acted on
	wait    time.Duration // before its intent: the backoff of such a retry
}

// run sends the batches it takes until the channel closes, then journals
// the last outcome. It reads the channel to its end even once the run
// stopped, so that the loop feeding it never waits forever.
func (w *worker) run(ctx, sendCtx context.Context, jobs <-chan job) {
	for j := range jobs {
		if err := w.sendBatch(ctx, sendCtx, j); err != nil {
			w.r.fail(err)
		}
	}
	if err := w.flush(); err != nil {
		w.r.fail(err)
	}
}

// sendBatch paces, then sends b's pieces one after another, each journaled
// as an intent before it is sent; the last outcome is left pending. An
// error stops the whole run.
func (w *worker) sendBatch(ctx, sendCtx context.Context, j job) error {
	r, b := w.r, j.b
	w.j = j
	if r.stopped(ctx) {
		r.skip(b)
		return nil
	}
	if r.closedJob(j) {
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
	if r.closedJob(j) {
		return nil
	}
	todo := []piece{{b: b}}
	for k := 0; k < len(todo); k++ {
		// A 413 to another piece may have taught a smaller size since
		// this one was made.
		todo = slices.Replace(todo, k, k+1, r.cut(todo[k])...)
		if k > 0 {
			if ok, err := w.between(ctx, todo[k]); !ok {
				r.skipPieces(todo[k:])
				return err
			}
			// The window may have closed (or not_after passed) while the
			// pieces before went: the rest wait for it, as the piece a
			// retry found it closed for does.
			if !r.openNow(j.i) {
				for _, p := range todo[k:] {
					r.holdPiece(job{i: j.i, b: p.b, held: true})
				}
				return nil
			}
		}
		more, err := w.sendPiece(ctx, sendCtx, todo[k])
		if err != nil {
			r.skipPieces(todo[k+1:])
			return err
		}
		todo = slices.Insert(todo, k+1, more...)
	}
	return nil
}

// between readies the next piece of a batch: the run must still go on, the
// rate allows it and a retry's backoff has passed. false: the piece is not
// sent (the run stopped, or err says why).
func (w *worker) between(ctx context.Context, p piece) (bool, error) {
	r := w.r
	if r.stopped(ctx) {
		return false, nil
	}
	if err := w.pace(ctx); err != nil {
		if errors.Is(err, ErrInterrupted) {
			return false, nil
		}
		return false, err
	}
	if p.wait > 0 {
		if err := w.flush(); err != nil {
			return false, err
		}
		if !sleep(ctx, p.wait) {
			return false, nil
		}
	}
	return !r.stopped(ctx), nil
}

// sendPiece journals p's intent, sends it and leaves its outcome pending;
// it returns the pieces to send next in its place: its halves after a 413,
// or the recipients the answer listed as not acted on.
func (w *worker) sendPiece(ctx, sendCtx context.Context, p piece) ([]piece, error) {
	r := w.r
	b, err := w.recordIntent(p.b)
	if err != nil || len(b.Recipients) == 0 {
		return nil, err // nothing to send: every recipient opted out or is held back
	}
	p.b = b
	if r.stopped(ctx) {
		return nil, r.notSent(p.b, nil)
	}
	res := w.send(ctx, sendCtx, p.b)
	switch {
	case res.err != nil:
		return nil, res.err
	case res.tooLarge != nil:
		return r.halve(p, res.tooLarge)
	}
	w.pending = res.s
	if len(res.retry) == 0 {
		return nil, nil
	}
	return w.again(p, res.retry, res.s.o.HTTPStatus)
}

// halve answers a 413 to p: its intent is forgotten (the provider did not
// act on it) and its halves are sent in its place, down to one recipient;
// what a 413 teaches is kept for the batches that follow.
func (r *runner) halve(p piece, ae *api.Error) ([]piece, error) {
	n := len(p.b.Recipients)
	if n == 1 {
		return nil, r.notSent(p.b, fmt.Errorf("batch %s: the provider refuses even one recipient as too large (413), so nothing of it was sent: %w", p.b.ID, ae))
	}
	if err := r.forget(p.b); err != nil {
		return nil, err
	}
	r.tooLarge(p.b, n)
	half := (n + 1) / 2
	return []piece{
		{b: withRecipients(p.b, p.b.Recipients[:half]), retries: p.retries},
		{b: withRecipients(p.b, p.b.Recipients[half:]), retries: p.retries},
	}, nil
}

// again schedules the recipients an answer listed as not acted on (a retry
// status) for a request of their own, after the backoff a 429 would get;
// past Options.MaxRetries they are left unsent and the run stops, as it
// does for a batch the provider keeps refusing.
func (w *worker) again(p piece, phones []string, status int) ([]piece, error) {
	r := w.r
	if err := w.flush(); err != nil {
		return nil, err // the whole request is counted in doubt: its outcome is not recorded
	}
	next := piece{b: withRecipients(p.b, phones), retries: p.retries + 1}
	if next.retries > r.o.MaxRetries {
		r.skip(next.b)
		return nil, fmt.Errorf("batch %s: %d recipient(s) not sent: the provider answered %d times that it did not act on them (a results.retry status); they are left for the next run",
			p.b.ID, len(phones), next.retries)
	}
	next.wait = backoff(next.retries, 0, r.o.BackoffBase, r.o.BackoffCap)
	r.count(func(res *Result) {
		res.Retries++
		res.Retried += len(phones)
	})
	r.emit(Event{Type: "retry", Batch: p.b.ID, Recipients: len(phones), Retried: len(phones), HTTPStatus: status, Attempt: next.retries, Wait: next.wait,
		Reason: "the provider listed these recipients as not acted on (a results.retry status)"})
	return []piece{next}, nil
}

// withRecipients is b with only phones, under b's id.
func withRecipients(b plan.Batch, phones []string) plan.Batch {
	b.Recipients = phones
	return b
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
// one (alone first when it is of the same batch: a piece's outcome must be
// the batch's latest before the next piece's intent). The ledger admits
// the intent: it returns b with the recipients to send, those the intent
// was recorded for (none when every one opted out or is held back). When
// it fails, nothing of b was sent and b is counted as skipped.
func (w *worker) recordIntent(b plan.Batch) (plan.Batch, error) {
	r := w.r
	if w.pending != nil && w.pending.b.ID == b.ID {
		if err := w.flush(); err != nil {
			r.skip(b)
			return plan.Batch{}, err
		}
	}
	intent := state.Intent{BatchID: b.ID, Phones: b.Recipients, BodyHash: state.BodyHash(b.Body)}
	var (
		adm state.Admission
		err error
	)
	if w.pending == nil {
		adm, err = r.j.AdmitIntent(r.writeCtx, intent)
	} else if adm, err = r.j.RecordOutcomeAndAdmit(r.writeCtx, w.pending.b.ID, w.pending.o, intent); err == nil {
		p := w.pending
		w.pending = nil
		r.admitted(w.j.i, b, adm)
		sent := withRecipients(b, adm.Send)
		if stop := r.account(p); stop != nil {
			if len(adm.Send) == 0 {
				return sent, stop
			}
			return plan.Batch{}, r.notSent(sent, stop) // too many errors: the intent is undone, unsent
		}
		return sent, nil
	}
	if err == nil {
		r.admitted(w.j.i, b, adm)
		return withRecipients(b, adm.Send), nil
	}
	r.skip(b)
	if paused := new(state.PausedError); errors.As(err, &paused) {
		return plan.Batch{}, w.paused(b, paused)
	}
	if errors.Is(err, state.ErrAlreadySent) {
		// Not the disk: the plan promised someone the state already holds.
		return plan.Batch{}, fmt.Errorf("batch %s names a recipient the state already holds as sent or in doubt; nothing of it was sent: plan again: %w", b.ID, err)
	}
	what := "the intent; nothing of the batch was sent"
	if w.pending != nil {
		what = "an outcome and the next intent; nothing of the next batch was sent"
	}
	return plan.Batch{}, fmt.Errorf("%w (%s): %w", ErrStateRefused, what, err)
}

// sendResult is how a request ended: an outcome to journal (and the
// recipients it listed as not acted on, to send again), a 413 (the
// request's intent still open: halve it), or an error that stops the run
// (the intent then already undone or left in doubt).
type sendResult struct {
	s        *settled
	retry    []string
	tooLarge *api.Error
	err      error
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
		// The first attempt was paced before its intent, and its window
		// and the pause read right before it; a retry's are read once it
		// is paced, right before it goes.
		if ctx.Err() != nil || attempt > 1 && r.wait(ctx) != nil {
			return stop(ErrInterrupted)
		}
		if attempt > 1 {
			if res, ok := w.retryStopped(ctx, b); ok {
				return res
			}
		}
		resp, err := r.s.Send(sendCtx, req)
		if err == nil {
			r.heard()
			return r.answered(b, resp)
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
		case tokenFailed:
		case ae.Status == 0 && ae.Reached && sendCtx.Err() == nil:
			// Sent, and no answer (not for want of waiting: the grace
			// after an interrupt did not cut it short): the provider may
			// have gone silent.
			r.unheard(b)
		default:
			r.heard()
		}
		switch {
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
		case !tokenFailed && ae.TooLarge():
			return sendResult{tooLarge: ae}
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
			return settle(status, ae.Status, ReasonOf(ae))
		}
		if err := r.retryLater(ctx, b, ae, err, attempt); err != nil {
			return stop(err)
		}
	}
}

// retryStopped looks, before b is tried again, at what may have changed
// while it waited (up to minutes, with a Retry-After): the run stopped by
// another batch, a pause recorded meanwhile (a retry records no intent to
// learn of one from), b's send window closed or not_after passed. Then b,
// which the API did not act on, is not sent: its intent is forgotten, and
// it is left paused, or waiting for its window (or expired) as if it had
// found the window closed before its intent. ok false: the retry goes
// ahead.
func (w *worker) retryStopped(ctx context.Context, b plan.Batch) (res sendResult, ok bool) {
	r := w.r
	if r.stopped(ctx) {
		// Interrupted, or another batch stopped the run (a pause it
		// learned of) while this one waited.
		return sendResult{err: r.notSent(b, cmp.Or(r.stopError(), ErrInterrupted))}, true
	}
	err := r.j.PausedNow(r.writeCtx)
	if paused := new(state.PausedError); errors.As(err, &paused) {
		if err := r.notSent(b, nil); err != nil {
			return sendResult{err: err}, true
		}
		return sendResult{err: w.paused(b, paused)}, true
	}
	if err != nil {
		// Not known whether a pause is there: not tried again.
		return sendResult{err: r.notSent(b, err)}, true
	}
	if r.openNow(w.j.i) {
		return sendResult{}, false
	}
	// Forgotten first, then noted as waiting: an intent that could not be
	// forgotten stays in doubt, and is counted so, not as waiting too.
	if err := r.forget(b); err != nil {
		return sendResult{err: err}, true
	}
	if w.j.held || len(b.Recipients) != len(w.j.b.Recipients) {
		r.holdPiece(job{i: w.j.i, b: b, held: true})
	} else {
		r.noteClosed(w.j.i, len(b.Recipients))
	}
	return sendResult{}, true
}

// retryLater waits before attempt+1 of b, which the API did not act on
// (ae, err), or says why it is not tried again.
func (r *runner) retryLater(ctx context.Context, b plan.Batch, ae *api.Error, err error, attempt int) error {
	switch {
	case ctx.Err() != nil:
		return ErrInterrupted
	case r.stopped(ctx):
		// Paused, or stopped by another batch: no request starts
		// again, and this one was not acted on.
		return r.stopError()
	case ae.Status == 401:
		return err // api.Authenticated already renewed the token once
	case ae.RetryAfter > maxRetryAfter:
		return fmt.Errorf("batch %s not sent: the API asks to wait %s (Retry-After), more than the %s smsform waits: %w",
			b.ID, ae.RetryAfter, maxRetryAfter, err)
	case attempt > r.o.MaxRetries:
		return fmt.Errorf("batch %s not sent after %d attempts: %w", b.ID, attempt, err)
	}
	wait := backoff(attempt, ae.RetryAfter, r.o.BackoffBase, r.o.BackoffCap)
	r.count(func(res *Result) { res.Retries++ })
	r.emit(Event{Type: "retry", Batch: b.ID, Recipients: len(b.Recipients), HTTPStatus: ae.Status,
		Reason: ae.Error(), Attempt: attempt, Wait: wait})
	if !sleep(ctx, wait) {
		return ErrInterrupted
	}
	return nil
}

// answered is the outcome of a request the provider took (a 2xx): sent,
// or, when its answer lists each recipient (Options.Results), each
// recipient's own outcome, with those listed as not acted on to send
// again.
func (r *runner) answered(b plan.Batch, resp api.SendResponse) sendResult {
	// The status is recorded as the provider gave it (201, 202, 204…); a
	// Sender that does not say is taken as a plain 200.
	o := state.Outcome{Status: state.Sent, HTTPStatus: cmp.Or(resp.Status, 200), RequestID: resp.RequestID}
	if r.o.Results == nil {
		return sendResult{s: &settled{b: b, o: o}}
	}
	v := StatusOfResults(r.o.Results, b.Recipients, resp.Answer)
	parts := v.Parts
	if len(parts) == 1 && parts[0].Status != state.Unsent && parts[0].IDs == nil && parts[0].ProviderStatus == "" {
		o.Status, o.Reason = parts[0].Status, parts[0].Reason
		return sendResult{s: &settled{b: b, o: o, unknown: v.Unrecognised}}
	}
	o.Parts = parts
	var retry []string
	for _, p := range parts {
		if p.Status == state.Unsent {
			retry = append(retry, p.Phones...)
		}
	}
	return sendResult{s: &settled{b: b, o: o, unknown: v.Unrecognised}, retry: retry}
}
