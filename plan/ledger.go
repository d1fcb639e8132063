package plan

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/compliance"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/ledger"
)

// A project's state keeps, besides each campaign's records, what concerns
// people: opt-outs and the frequency cap's index. A plan subtracts the
// opt-outs (Summary.OptedOut) and counts the recipients the cap holds back
// now (Summary.HeldByCap). Those stay in the batches, as recipients whose
// send window is closed do: apply checks the cap right before each batch's
// intent, when it may have let them go, and leaves the rest for a later
// run. Opt-outs are subtracted as of a number of their log, recorded in
// the plan's stamp, so that a saved plan is made again exactly as it was
// reviewed while later opt-outs are still honoured (apply suppresses them).

// Ledger is what a project's state tells a plan of people rather than of
// the campaign; *ledger.View has it (ledger.ViewOf a state). A plan
// without it (Options.Ledger nil) plans as if nobody opted out and no cap
// held anyone.
type Ledger interface {
	// OptOutSet is the set of numbers opted out as of the opt-out log's
	// number asOf (0: now), and the log's number it reflects.
	OptOutSet(ctx context.Context, asOf int64) (*e164.Map[struct{}], int64, error)
	// CapHolds is, for each number the caps hold back at now, when it may
	// be messaged again.
	CapHolds(ctx context.Context, c *ledger.Caps, now time.Time) (*e164.Map[time.Time], error)
}

// Options tune [ComputeWith].
type Options struct {
	// OptOutsAsOf, when set, is the number of the opt-out log whose
	// opt-outs the plan subtracts (0: none); nil: the latest. A saved plan
	// is made again with the one it was made with (StateStamp.OptOutSeq).
	OptOutsAsOf *int64
	// Now is when the frequency cap's holds are judged; zero: the system
	// clock.
	Now time.Time
	// Ledger is the project's ledger the plan reads (opt-outs, caps);
	// nil: none.
	Ledger Ledger
	// Undelivered, when set, holds the numbers (E.164) the provider
	// reported undelivered: what was spent on them is priced apart, in
	// Plan.Undelivered.
	Undelivered map[string]bool
}

// CapsOf is what campaign c's sends are held to across the project, and
// how they count for others: its own frequency cap, which is at least as
// strict as its project's, else the project's (All) unless c is
// transactional (a code or a receipt is owed whatever marketing the
// person got; its sends still count for the others); the caps its rule
// sets put on some numbers for a campaign of its kind (Florida's 3
// marketing messages a day: PerNumber, counting marketing sends only);
// and whether its sends are marketing, which every later claim counts.
func CapsOf(c *campaign.Campaign) *ledger.Caps {
	caps := &ledger.Caps{Marketing: c.Compliance.Kind != compliance.Transactional}
	f := c.FrequencyCap
	if f == nil && c.Project != nil && caps.Marketing {
		f = c.Project.FrequencyCap
	}
	if f != nil {
		caps.All = []ledger.Cap{{Max: f.Max, Per: f.Per}}
	}
	if rules := c.Compliance.Rules; rules != nil {
		kind := c.Compliance.Kind
		for _, r := range rules.All() {
			if r.Check == compliance.CheckCap && r.Concerns(kind) {
				caps.PerNumberLongest = max(caps.PerNumberLongest, r.Per)
			}
		}
		if caps.PerNumberLongest > 0 {
			caps.PerNumber = lawCaps(rules, kind)
		}
	}
	return caps
}

// lawCaps is the caps a rule set puts on a number: what the law asks of its
// class of recipients (one *compliance.Law each, shared), made into caps
// once per class.
func lawCaps(rules *compliance.Rules, kind compliance.Kind) func(phone string) []ledger.Cap {
	var made sync.Map // *compliance.Law → []ledger.Cap
	return func(phone string) []ledger.Cap {
		k, ok := e164.Pack(phone)
		if !ok {
			return nil
		}
		law := rules.For(k, kind)
		if law == nil || len(law.Caps) == 0 {
			return nil
		}
		if caps, ok := made.Load(law); ok {
			return caps.([]ledger.Cap)
		}
		var caps []ledger.Cap
		for _, r := range law.Caps {
			if r.Concerns(kind) {
				caps = append(caps, ledger.Cap{Max: r.Max, Per: r.Per, Marketing: true})
			}
		}
		made.Store(law, caps)
		return caps
	}
}

// ledgerView is what a plan read of the ledger.
type ledgerView struct {
	optedOut *e164.Map[struct{}]
	seq      int64
	holds    *e164.Map[time.Time] // nil without a cap
}

// readLedger reads the ledger of rec, if it has one, on another goroutine
// while the lists are read: a million opt-outs, and the cap index's recent
// sends, cost a read of their own. wait returns what was read.
func readLedger(ctx context.Context, c *ledger.Caps, o Options) (wait func() (*ledgerView, error)) {
	l := o.Ledger
	if l == nil {
		return func() (*ledgerView, error) { return nil, nil }
	}
	type result struct {
		v   *ledgerView
		err error
	}
	done := make(chan result, 1)
	go func() {
		v := &ledgerView{optedOut: e164.NewMap[struct{}](0)}
		// The opt-outs and the cap's holds are two reads of their own:
		// side by side.
		var holdsErr error
		var wg sync.WaitGroup
		if c != nil {
			wg.Go(func() {
				now := o.Now
				if now.IsZero() {
					now = time.Now()
				}
				v.holds, holdsErr = l.CapHolds(ctx, c, now)
			})
		}
		var err error
		switch asOf := o.OptOutsAsOf; {
		case asOf == nil:
			v.optedOut, v.seq, err = l.OptOutSet(ctx, 0)
		case *asOf > 0:
			v.optedOut, v.seq, err = l.OptOutSet(ctx, *asOf)
		}
		wg.Wait()
		done <- result{v, errors.Join(err, holdsErr)}
	}()
	var r *result
	return func() (*ledgerView, error) {
		if r == nil {
			x := <-done
			r = &x
		}
		return r.v, r.err
	}
}

// useLedger sets what the plan says of the ledger it read.
func (b *builder) useLedger(v *ledgerView) {
	if v == nil {
		return
	}
	b.ledger = v
	b.p.State.OptOutSeq = v.seq
	if v.optedOut.Len() == 0 {
		b.ledger.optedOut = nil
	}
	if v.holds != nil && v.holds.Len() == 0 {
		b.ledger.holds = nil
	}
}

// lookUpLedger finds, on every core, which recipients to send as far as
// the campaign's records go (b.held says) opted out, and counts them and
// those the cap holds back now into the summary: settle then skips the
// ones opted out. A million lookups in a set of a million are a cache miss
// each, too many for settle's one goroutine. Nil when nobody is opted out.
func (b *builder) lookUpLedger() (optedOut []bool) {
	v := b.ledger
	if v == nil || v.optedOut == nil && v.holds == nil {
		return nil
	}
	if v.optedOut != nil {
		optedOut = make([]bool, b.phones.len())
	}
	type counts struct {
		out, held int
		until     time.Time
	}
	workers := runtime.GOMAXPROCS(0)
	per := make([]counts, workers)
	onEveryCore(workers, b.phones.len(), func(w, lo, hi int) {
		var c counts // counted here, not in per: the workers' entries share cache lines
		defer func() { per[w] = c }()
		for i := lo; i < hi; i++ {
			if b.held.of(i) != notHeld {
				continue
			}
			k := b.phones.at(i)
			if v.optedOut != nil {
				if _, ok := v.optedOut.GetPacked(k); ok {
					optedOut[i] = true
					c.out++
					continue
				}
			}
			if v.holds != nil {
				if until, ok := v.holds.GetPacked(k); ok {
					c.held++
					if until.After(c.until) {
						c.until = until
					}
				}
			}
		}
	})
	s := &b.p.Summary
	for _, c := range per {
		s.OptedOut += c.out
		s.HeldByCap += c.held
		if c.until.After(s.HeldByCapUntil) {
			s.HeldByCapUntil = c.until.UTC()
		}
	}
	// Read once: the sets are not needed any more, and the collection
	// after settle need not walk them.
	b.ledger = nil
	if optedOut != nil && s.OptedOut == 0 {
		return nil
	}
	return optedOut
}
