package apply

import (
	"fmt"

	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// Two ways a person stops a run part way, both read where the next batch's
// intent is decided, so that nothing slips past them:
//
//   - A pause (smsform pause) is read by the state in the intent's own
//     transaction, which refuses the intent with a *state.PausedError: the
//     run starts no new batch, lets the requests in flight finish and
//     records them, and ends with that error.
//   - A limit (Options.Limit, apply --limit) is a number of recipients:
//     batches are handed out in plan order while the recipients they hold
//     stay within it; the first that would pass it ends the run, with a
//     *LimitError.

// LimitError ends a run that reached Options.Limit: the batches after the
// last that fitted were not attempted. Left counts their recipients, and
// those left for a closed send window.
type LimitError struct {
	Limit, Attempted, Left int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("stopped at the limit of %s: %s attempted, %s left to send",
		words.N(e.Limit, "recipient", "recipients"), words.Count(e.Attempted), words.Count(e.Left))
}

// reserve counts b's recipients against Options.Limit before it is handed
// to a worker, in plan order; false once the limit is reached: that batch
// and every one after it are left. The batches handed out before go on (the
// limit does not stop a run the way an error does). A batch whose window is
// closed now is not counted: it is not attempted (closed gives back what
// was counted if it closes meanwhile).
func (r *runner) reserve(i int, b plan.Batch) bool {
	if r.o.Limit <= 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch n := len(b.Recipients); {
	case r.limitHit:
		return false
	case !r.openNowLocked(i):
		return true
	case r.reserved+n <= r.o.Limit:
		r.reserved += n
		r.counted[i] = true
		return true
	}
	r.limitHit = true
	return false
}

// limitReached reports whether the run stopped handing out batches at
// Options.Limit.
func (r *runner) limitReached() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limitHit
}

// unreserve gives back what reserve counted for batch i, which found its
// window closed after all.
func (r *runner) unreserve(i, n int) {
	if r.o.Limit <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counted[i] {
		delete(r.counted, i)
		r.reserved -= n
	}
}

// openNowLocked reports whether batch i may go now, as far as its send
// window says, without noting anything.
func (r *runner) openNowLocked(i int) bool {
	return r.gate == nil || r.gate.sc[i].Open(r.gate.zones[i], r.gate.clock.Now())
}

// limited ends a run that stopped at Options.Limit with a *LimitError,
// unless something else stopped it first, and says so in its result.
func (r *runner) limited() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.limitHit {
		return
	}
	r.res.LimitReached, r.res.Limit = true, r.o.Limit
	// What the cap held of the limit's recipients waits (a *ClosedError):
	// the canary is not done.
	if r.err == nil && r.res.HeldByCap == 0 {
		r.err = &LimitError{Limit: r.o.Limit, Attempted: r.reserved, Left: r.res.Skipped + r.res.Waiting}
	}
}

// paused stops the run at b, whose intent the state refused because the
// campaign is paused (b was counted as skipped). The outcome that was to be
// recorded with that intent was refused with it: it is recorded on its own,
// so that the requests in flight end recorded, never in doubt. The first
// worker to learn of the pause says so in a paused event.
func (w *worker) paused(b plan.Batch, p *state.PausedError) error {
	r := w.r
	r.mu.Lock()
	first := !r.pauseSaid
	r.pauseSaid = true
	r.mu.Unlock()
	if first {
		r.emit(Event{Type: "paused", Batch: b.ID, Reason: p.Error()})
	}
	r.fail(p)
	if err := w.flush(); err != nil {
		return err
	}
	return p
}

// stopError is the error that stopped the run, nil while it goes on.
func (r *runner) stopError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
