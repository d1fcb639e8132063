package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// Clock is the time as a run sees it for send windows: when a window is
// open, and waiting until it opens. Tests pass one they control.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done; it reports whether d passed.
	Sleep(ctx context.Context, d time.Duration) bool
}

type systemClock struct{}

func (systemClock) Now() time.Time                                  { return time.Now() }
func (systemClock) Sleep(ctx context.Context, d time.Duration) bool { return sleep(ctx, d) }

// SystemClock is the machine's clock.
func SystemClock() Clock { return systemClock{} }

// ClosedError stops a run that may send nothing more now: every batch left
// waits for its recipients' send window, or for the campaign's not_before.
// Nothing of them was recorded; a later apply (or apply --wait) sends them.
//
// Held counts the recipients the frequency cap held back (see AdmitIntent
// in package state), who are left for a later run in the same way.
type ClosedError struct {
	Waiting int       // recipients
	Next    time.Time // when the first of them may go
	Label   string    // that, in words: "window opens 09:00 America/New_York, in 3 h 10 min"
	Expired int       // recipients that will not be sent at all (see ExpiredError)
	Held    int       // recipients held back by the frequency cap
}

func (e *ClosedError) Error() string {
	var what []string
	if e.Waiting > 0 || e.Held == 0 {
		what = append(what, words.N(e.Waiting, "recipient waits", "recipients wait"))
	}
	if e.Held > 0 {
		what = append(what, words.N(e.Held, "recipient", "recipients")+" held back by the frequency cap")
	}
	msg := fmt.Sprintf("nothing more may be sent now: %s; next: %s (%s)",
		strings.Join(what, ", "), e.Label, e.Next.UTC().Format(time.RFC3339))
	if e.Expired > 0 {
		msg += fmt.Sprintf("; %s not be sent: their window does not open before not_after", words.N(e.Expired, "recipient will", "recipients will"))
	}
	return msg
}

// ExpiredError ends a run that left recipients this campaign will never
// send: not_after has passed, or comes before their window opens (or their
// window is never open in all of their zones at once).
type ExpiredError struct {
	Left   int // recipients
	Reason string
	// Ended: not_after passed (or passes before their window opens); else
	// their window and the rules' hours never meet.
	Ended bool
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("%s left unsent: %s", words.N(e.Left, "recipient", "recipients"), e.Reason)
}

// gate checks each batch's send window at send time.
type gate struct {
	sc    []*window.Schedule // per batch of the plan: the send window met with the hours of rules
	clock Clock
	zones []*window.Zones // per batch of the plan
	// expiredWhy says why the last batches counted as expired were, and
	// expiredEnded whether it was not_after.
	expiredWhy   string
	expiredEnded bool
}

// newGate prepares the plan's windows before anything is sent, so that a
// damaged saved plan stops the run before its first intent.
func newGate(p *plan.Plan, clock Clock) (*gate, error) {
	sc, err := window.Compile(p.Window)
	if err != nil {
		return nil, fmt.Errorf("plan's send window: %w", err)
	}
	g := &gate{clock: clock}
	err = p.EachBatch(func(_ int, b plan.Batch) error {
		bs, z, err := plan.BatchSchedule(sc, b)
		if err != nil {
			return err
		}
		g.sc, g.zones = append(g.sc, bs), append(g.zones, z)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// closed reports whether batch i (of n recipients) may not be sent now,
// and if so notes it among those waiting.
func (r *runner) closed(i, n int) bool {
	if r.gate == nil || r.gate.sc[i].Open(r.gate.zones[i], r.gate.clock.Now()) {
		return false
	}
	r.noteClosed(i, n)
	return true
}

// noteClosed notes batch i, of n recipients, among those waiting for their
// window, and gives back what the limit counted of it.
func (r *runner) noteClosed(i, n int) {
	r.unreserve(i, n)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting = append(r.waiting, batchRef{i: i, recipients: n})
}

// after sorts the batches that found their window closed into those that
// will open, returned with when the first opens, and those that never will
// before not_after, counted as expired. It notes both in res, and returns
// the error that ends a run that does not wait: a *ClosedError when some
// will open, an *ExpiredError when none will.
func (g *gate) after(waiting []batchRef, res *Result) ([]batchRef, time.Time, error) {
	now := g.clock.Now()
	var (
		later []batchRef
		first window.Opening
		left  int
		why   window.Opening
	)
	for _, ref := range waiting {
		o := g.sc[ref.i].Next(g.zones[ref.i], now)
		if !o.Sendable() {
			left += ref.recipients
			why = o
			continue
		}
		if o.Reason == window.ReasonNow {
			o.At = now // opened since the worker looked
		}
		if len(later) == 0 || o.At.Before(first.At) {
			first = o
		}
		later = append(later, ref)
		res.Waiting += ref.recipients
	}
	res.Expired += left
	if left > 0 {
		g.expiredWhy, g.expiredEnded = why.Describe(now), why.Reason == window.ReasonEnded
	}
	if len(later) == 0 {
		return nil, time.Time{}, &ExpiredError{Left: res.Expired, Reason: g.expiredWhy, Ended: g.expiredEnded}
	}
	res.Next, res.NextLabel = first.At.UTC(), first.Describe(now)
	return later, first.At, &ClosedError{Waiting: res.Waiting, Next: first.At, Label: res.NextLabel, Expired: left}
}

// maxSleep bounds one sleep of a wait, so that the clock is read again
// often: a machine that slept through the wait finds it over at once.
const maxSleep = time.Minute

// sleepUntil waits until t on clock, calling show once with the wait
// ahead; it reports false when ctx ended the wait.
func sleepUntil(ctx context.Context, clock Clock, t time.Time, show func(time.Duration)) bool {
	show(max(t.Sub(clock.Now()), 0))
	for {
		if ctx.Err() != nil {
			return false
		}
		d := t.Sub(clock.Now())
		if d <= 0 {
			return true
		}
		if !clock.Sleep(ctx, min(d, maxSleep)) {
			return false
		}
	}
}

// waitReason says what a run waits for: a send window, the frequency cap.
func waitReason(res *Result) string {
	if res.HeldByCap > 0 && (res.Waiting == 0 || res.HeldNext.Before(res.Next)) {
		return "the frequency cap"
	}
	return res.NextLabel
}
