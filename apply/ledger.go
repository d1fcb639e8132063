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
	first := held[0].until
	n := 0
	for _, h := range held {
		n += len(h.b.Recipients)
		first = minTime(first, h.until)
	}
	now := r.o.Clock.Now()
	first = maxTime(first, now)
	r.count(func(res *Result) { res.HeldByCap, res.HeldNext = n, first.UTC() })
	closed.Held = n
	if wait.IsZero() || first.Before(wait) {
		wait, closed.Next, closed.Label = first, first, capLabel(first, now)
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

// closedPiece reports whether the send window of a piece the cap held
// back is closed now; it is then held again, until the window opens (or
// counted as expired when it never will).
func (r *runner) closedPiece(j job) bool {
	g := r.gate
	if g == nil {
		return false
	}
	now := g.clock.Now()
	if g.sc[j.i].Open(g.zones[j.i], now) {
		return false
	}
	o := g.sc[j.i].Next(g.zones[j.i], now)
	if !o.Sendable() {
		r.count(func(res *Result) { res.Expired += len(j.b.Recipients) })
		g.expiredWhy, g.expiredEnded = o.Describe(now), o.Reason == window.ReasonEnded
		return true
	}
	r.mu.Lock()
	r.held = append(r.held, capHold{i: j.i, b: j.b, until: maxTime(o.At, now)})
	r.mu.Unlock()
	return true
}
