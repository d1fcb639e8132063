package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/plan/planfile"
	"github.com/smsform/smsform/state"
)

// Request is one apply: a campaign planned now, or a saved plan made from
// it and reviewed.
type Request struct {
	Campaign *campaign.Campaign
	// Saved is a plan file opened with planfile.OpenHeader (or Open); nil:
	// plan Campaign now. Start reads it whole as it compares it.
	Saved    *planfile.Saved
	PlanFile string // the file Saved was read from, as messages name it
	Client   Client
	State    state.Location // where the run is recorded
	// StateOptions open the state; Campaign is set from the campaign.
	StateOptions state.Options
	// Clock tells the time a fresh plan is scheduled at, and is the run's
	// unless its Options say otherwise; nil is the system clock.
	Clock Clock
	// Events receives the waits for a token (retry events); nil discards
	// them.
	Events func(Event)
	// Warn receives what went wrong but changes nothing of the outcome;
	// nil discards it.
	Warn func(error)
}

// Client is what an apply needs of the API: a [Sender] whose token can be
// had before the run. *api.Authenticated is one.
type Client interface {
	Sender
	TokenSource
}

// ErrStalePlan refuses a saved plan made against the state before it
// changed.
var ErrStalePlan = errors.New("stale plan: state changed since it was made, plan again")

// Refusal says which check refused a saved plan ([PlanRefusedError]).
type Refusal int

const (
	FilesChanged   Refusal = iota + 1 // the campaign file or a list changed (or could not be read) since the plan
	OverBudget                        // the plan breaks the campaign's budget
	AlreadyApplied                    // the state records the plan as applied
	OtherLineage                      // the plan was made against another state
	StateChanged                      // the state changed since the plan was made ([ErrStalePlan])
	PlanDiffers                       // the plan is not what its files make ([ErrPlanDiffers], [planfile.ErrFileList])
)

// PlanRefusedError is returned by [Start] for a saved plan that must not
// be applied; nothing was sent or recorded.
type PlanRefusedError struct {
	Why Refusal
	Err error
}

func (e *PlanRefusedError) Error() string { return e.Err.Error() }
func (e *PlanRefusedError) Unwrap() error { return e.Err }

// NoTokenError is returned by [Start] when no token could be had: nothing
// was sent or recorded, and a saved plan is not used up.
type NoTokenError struct{ Err error }

func (e *NoTokenError) Error() string { return e.Err.Error() }
func (e *NoTokenError) Unwrap() error { return e.Err }

// Pending is an apply that passed every check and holds the state's lock:
// its Plan is what [Pending.Send] sends. The caller shows it, asks whoever
// must approve it, then sends, and closes it in any case.
type Pending struct {
	Plan *plan.Plan

	req    Request
	st     *state.State
	serial int64 // the state's serial before the run
}

// Start checks everything an apply needs before anything is asked, recorded
// or sent, in this order: a saved plan's files, then the plan made again
// from them against the state as the saved plan saw it (read only), batch
// for batch the same as the saved one, and within the budget (see
// rederive); the state, opened and locked, and not paused; then a saved
// plan not yet applied and made against this state as it is, or the
// campaign planned now; last, when anything is to be sent, a token (so
// that what the state says, paused or locked or all sent, is said before
// credentials are needed, and a wrong base URL or wrong credentials stop
// it with the state, and a saved plan, as they were: nothing of them is
// recorded before). A refused saved plan is a
// [*PlanRefusedError], a token not had a [*NoTokenError]; state.Open's
// errors are returned as they are.
//
// A saved plan that passes is sent as made again from its files, which the
// comparison proved the same: its file is not read again while sending.
func Start(ctx context.Context, r Request) (*Pending, error) {
	if r.Clock == nil {
		r.Clock = SystemClock()
	}
	var derived *plan.Plan
	if r.Saved != nil {
		var err error
		if derived, err = rederive(ctx, r); err != nil {
			return nil, err
		}
		r.StateOptions.Signs = append(slices.Clone(r.StateOptions.Signs), savedSigns(r)...)
	}
	opts := r.StateOptions
	opts.Campaign = r.Campaign.Name
	if opts.Shared && opts.Gate == nil {
		opts.Gate = ledger.NewGate(plan.CapsOf(r.Campaign))
	}
	if opts.Now == nil {
		opts.Now = r.Clock.Now // the cap is judged by the run's clock
	}
	st, err := state.Open(ctx, r.State, opts)
	if err != nil {
		return nil, err
	}
	if p := st.Paused(); p != nil {
		st.Close()
		return nil, &state.PausedError{Campaign: r.Campaign.Name, Pause: *p}
	}
	p, err := planFor(ctx, r, st, derived)
	if err != nil {
		st.Close()
		return nil, err
	}
	// What the state says (paused, locked, already sent) is answered
	// before credentials are needed, and a run with nothing to send needs
	// none.
	if p.Summary.ToSend > 0 {
		if err := Prepare(ctx, r.Client, Options{Events: r.Events}); err != nil {
			st.Close()
			return nil, &NoTokenError{Err: err}
		}
	}
	return &Pending{Plan: p, req: r, st: st, serial: st.Serial()}, nil
}

// planFor is the saved plan, as derived again, if this state may apply
// it, else the campaign's plan against st, scheduled now.
func planFor(ctx context.Context, r Request, st *state.State, derived *plan.Plan) (*plan.Plan, error) {
	if r.Saved == nil {
		now := r.Clock.Now()
		p, err := plan.ComputeWith(ctx, r.Campaign, st, plan.Options{Now: now, Ledger: ledger.ViewOf(st)})
		if err != nil {
			return nil, err
		}
		return p, p.ScheduleAt(now)
	}
	if err := checkApplied(ctx, r, st); err != nil {
		return nil, err
	}
	run, err := earlierRun(ctx, r, st)
	if err != nil {
		return nil, err
	}
	if err := checkStamp(r, st, run); err != nil {
		return nil, err
	}
	if run == nil {
		return derived, nil
	}
	return unattempted(ctx, derived, st)
}

// checkApplied refuses a saved plan the state records as applied.
func checkApplied(ctx context.Context, r Request, st *state.State) error {
	applied, err := st.PlanApplied(ctx, r.Saved.ID)
	switch {
	case err != nil:
		return err
	case applied:
		return &PlanRefusedError{Why: AlreadyApplied, Err: fmt.Errorf("%w: %s", state.ErrPlanApplied, r.PlanFile)}
	}
	return nil
}

// checkStamp refuses a saved plan made against another state, or against
// this state before it changed (other than by the plan's own earlier
// runs, run: nil when there were none); and one made against a state where
// there is none now (unless a person decided to start a new one), as
// state.Open would with the plan as a sign of the earlier state.
func checkStamp(r Request, st *state.State, run *state.PlanRun) error {
	s := r.Saved.Plan.State
	switch {
	case run != nil && s.Lineage != "" && s.Lineage != st.Lineage():
		return &PlanRefusedError{Why: OtherLineage,
			Err: fmt.Errorf("%w: the plan was made against state lineage %s, this state is %s", state.ErrLineage, s.Lineage, st.Lineage())}
	case run != nil && run.Serial != st.Serial():
		// Something other than the plan changed the state since its
		// last run: the rest of it was not reviewed against that.
		return &PlanRefusedError{Why: StateChanged, Err: fmt.Errorf("%w (it was applied in part; the state changed since its last run)", ErrStalePlan)}
	case run != nil:
		return nil // every change since the plan is its own
	case (s.Serial > 0 || len(s.EarlierState) > 0) && st.Lineage() == "" && !r.StateOptions.NewState:
		// Where the plan was made, signs of an earlier state showed (or
		// the state it was made against recorded something): the folder
		// apply runs in may show none of them.
		signs := slices.Clone(r.StateOptions.Signs)
		for _, sign := range savedSigns(r) {
			if !slices.Contains(signs, sign) {
				signs = append(signs, sign)
			}
		}
		return &state.EarlierStateError{Loc: st.Path(), Campaign: r.Campaign.Name, Signs: signs}
	case s.Lineage == "" && st.Serial() == 0:
		return nil // planned before any state existed, and none was written since
	case s.Lineage != "" && st.Lineage() == "":
		return &PlanRefusedError{Why: OtherLineage,
			Err: fmt.Errorf("%w: the plan was made against state lineage %s, and there is no state at %s", state.ErrLineage, s.Lineage, st.Path())}
	case s.Lineage != "" && s.Lineage != st.Lineage():
		return &PlanRefusedError{Why: OtherLineage,
			Err: fmt.Errorf("%w: the plan was made against state lineage %s, this state is %s", state.ErrLineage, s.Lineage, st.Lineage())}
	case s.Serial != st.Serial():
		return &PlanRefusedError{Why: StateChanged, Err: ErrStalePlan}
	}
	return nil
}

// savedSigns is what a saved plan says of an earlier state: the lineage
// it was made against, if that state recorded anything, and the signs
// plan saw where it was made.
func savedSigns(r Request) []string {
	s := r.Saved.Plan.State
	var signs []string
	if s.Lineage != "" && s.Serial > 0 {
		signs = append(signs, fmt.Sprintf("the saved plan %s was made against state lineage %s (serial %d)", r.PlanFile, s.Lineage, s.Serial))
	}
	for _, sign := range s.EarlierState {
		signs = append(signs, fmt.Sprintf("plan saw, as it made %s: %s", r.PlanFile, words.Visible(sign)))
	}
	return signs
}

// Send sends the plan as [Run] does, with the campaign's sender, rate,
// concurrency and what its provider block says of answers and requests
// (results, max_recipients), whatever o says of them, and the Request's
// clock unless o names one. The time a request took is then kept in the
// state, for later plans' estimates, and a run of a saved plan that
// recorded anything is recorded (see recordRun).
func (p *Pending) Send(ctx context.Context, o Options) (*Result, error) {
	c := p.req.Campaign
	o.From, o.RatePerSecond, o.Concurrency = c.Sender, c.Rate.PerSecond(), c.Concurrency
	o.Results, o.MaxRecipients = c.Provider.Results, c.Provider.MaxRecipients
	if o.Clock == nil {
		o.Clock = p.req.Clock
	}
	o.Owed = p.Owed
	sender, journal := &timedSender{Sender: p.req.Client}, &runJournal{j: p.st}
	if p.req.Saved != nil {
		journal.planID = p.req.Saved.ID
	}
	res, err := Run(ctx, p.Plan, journal, sender, o)
	p.recordLatency(ctx, sender, journal)
	if p.req.Saved != nil && p.Recorded() {
		p.recordRun(ctx, res != nil && res.Skipped == 0 && res.Waiting == 0 && res.HeldByCap == 0)
	}
	return res, err
}

// Owed is what the campaign's state records as owed now.
func (p *Pending) Owed() Owed {
	f, d := p.st.Owed()
	return Owed{Failed: f, InDoubt: d}
}

// Recorded reports whether sending changed the state: a saved plan then
// goes on from where this run left it, or is done.
func (p *Pending) Recorded() bool { return p.st.Serial() != p.serial }

// Close releases the state.
func (p *Pending) Close() error { return p.st.Close() }

// Anomalies counts the campaign's recipients whose delivery reports
// contradict the record (see state.DeliverySummary): every apply warns of
// them before sending.
func (p *Pending) Anomalies(ctx context.Context) (int, error) { return p.st.Anomalies(ctx) }
