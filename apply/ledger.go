package apply

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// In a project's state, each intent is admitted by the ledger in its own
// transaction (state.AdmitIntent): recipients who opted out since the plan
// are recorded suppressed, and those the frequency cap holds back are left
// without a record; the intent is recorded for the rest, which alone are
// sent. What the cap held back is sent in a later pass of the run, once
// the cap lets it go: a run that does not wait ends like a closed send
// window (a *ClosedError), one that waits (Options.Wait) sleeps until then.

// capHold is what the frequency cap held back of a batch: its recipients,
// under the batch's id, and when the last of them may go.
type capHold struct {
	i     int        // the batch's place in the plan, for its send window
	b     plan.Batch // the recipients held back only
	until time.Time
	// label is set for a piece held because its send window was closed
	// (closedPiece), not by the cap: when the window opens, in words. Such
	// recipients wait for their window, and are counted so.
	label string
}

// admitted counts what the ledger did with a batch's intent, and keeps
// what the cap held back for a later pass. b is the batch as it was
// offered, i its place in the plan.
func (r *runner) admitted(i int, b plan.Batch, adm state.Admission) {
	if n := len(adm.Suppressed); n > 0 {
		r.count(func(res *Result) { res.Suppressed += n })
		r.emit(Event{Type: "suppressed", Batch: b.ID, Recipients: n, Reason: "opted out since the plan was made: recorded suppressed, not sent"})
	}
	if n := len(adm.Held); n > 0 {
		r.mu.Lock()
		r.held = append(r.held, capHold{i: i, b: withRecipients(b, slices.Clone(adm.Held)), until: adm.HeldUntil})
		r.mu.Unlock()
		r.emit(Event{Type: "held", Batch: b.ID, Recipients: n, Until: adm.HeldUntil.UTC(), Reason: "held back by the frequency cap"})
	}
}

// takeHeld returns what the cap held back in this pass, in the plan's
// order, and forgets it.
func (r *runner) takeHeld() []capHold {
	r.mu.Lock()
	defer r.mu.Unlock()
	held := r.held
	r.held = nil
	slices.SortStableFunc(held, func(a, b capHold) int { return a.i - b.i })
	return held
}

// skipHeld counts what the cap held back as left unsent by a run that
// stopped.
func (r *runner) skipHeld(held []capHold) {
	for _, h := range held {
		r.skip(h.b)
	}
}

// after sorts what waits at the end of a pass: the batches whose send
// window was closed (see gate.after) and what the cap held back. It
// returns the batches to walk again, when the first of either may go,
// and the error that ends a run that does not wait: a *ClosedError when
// anything may go later, an *ExpiredError when nothing will.
func (r *runner) after(waiting []batchRef, held []capHold) ([]batchRef, time.Time, error) {
	todo, wait, err := []batchRef{}, time.Time{}, error(nil)
	if len(waiting) > 0 {
		todo, wait, err = r.gate.after(waiting, r.res)
		if todo == nil {
			todo = []batchRef{} // none: a nil todo walks every batch
		}
	}
	if len(held) == 0 {
		return todo, wait, err
	}
	closed := &ClosedError{}
	if !errors.As(err, &closed) {
		closed = &ClosedError{Expired: r.res.Expired}
	}
	now := r.o.Clock.Now()
	var capFirst time.Time
	n := 0
	for _, h := range held {
		until := maxTime(h.until, now)
		if h.label != "" {
			// A piece waiting for its send window.
			r.count(func(res *Result) { res.Waiting += len(h.b.Recipients) })
			closed.Waiting += len(h.b.Recipients)
			if wait.IsZero() || until.Before(wait) {
				wait, closed.Next, closed.Label = until, until, h.label
				r.count(func(res *Result) { res.Next, res.NextLabel = until.UTC(), h.label })
			}
			continue
		}
		n += len(h.b.Recipients)
		if capFirst.IsZero() || until.Before(capFirst) {
			capFirst = until
		}
	}
	if n > 0 {
		r.count(func(res *Result) { res.HeldByCap, res.HeldNext = n, capFirst.UTC() })
		closed.Held = n
		if wait.IsZero() || capFirst.Before(wait) {
			wait, closed.Next, closed.Label = capFirst, capFirst, capLabel(capFirst, now)
		}
	}
	return todo, wait, closed
}

// capLabel says when the cap lets the first recipient it held go.
func capLabel(at, now time.Time) string {
	return fmt.Sprintf("the frequency cap lets the first go at %s, in %s", at.UTC().Format("2006-01-02 15:04 UTC"), words.Wait(at.Sub(now)))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// closedJob reports whether j's send window is closed now, and notes it
// among what waits: a batch of the plan with the batches that wait for
// their window, what the cap held back of one with what it holds.
func (r *runner) closedJob(j job) bool {
	if j.held {
		return r.closedPiece(j)
	}
	return r.closed(j.i, len(j.b.Recipients))
}

// closedPiece reports whether the send window of a piece (what the cap
// held back of a batch, or a part of one: a half after a 413, the rest
// after a retry) is closed now; it is then held, until the window opens
// (or counted as expired when it never will).
func (r *runner) closedPiece(j job) bool {
	if r.openNow(j.i) {
		return false
	}
	r.holdPiece(j)
	return true
}

// openNow reports whether batch i's send window is open now, noting
// nothing.
func (r *runner) openNow(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.openNowLocked(i)
}

// holdPiece holds j, a piece whose window is closed, until it opens, or
// counts it expired when it never will.
func (r *runner) holdPiece(j job) {
	g := r.gate
	now := g.clock.Now()
	o := g.sc[j.i].Next(g.zones[j.i], now)
	if !o.Sendable() {
		r.count(func(res *Result) { res.Expired += len(j.b.Recipients) })
		g.expiredWhy, g.expiredEnded = o.Describe(now), o.Reason == window.ReasonEnded
		return
	}
	r.mu.Lock()
	r.held = append(r.held, capHold{i: j.i, b: j.b, until: maxTime(o.At, now), label: o.Describe(now)})
	r.mu.Unlock()
}
