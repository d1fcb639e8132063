package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/plan/planfile"
	"github.com/smsform/smsform/state"
)

// ErrPlanDiffers is wrapped by the error [Start] returns for a saved plan
// that is not what its files make: edited after it was saved (by hand, by
// a script), or made by an smsform that plans otherwise. Its batch ids are
// no protection, since anyone can compute them.
var ErrPlanDiffers = errors.New("the saved plan is not what its campaign makes")

// DiffError names the first place where a saved plan and the plan made
// again from its files part. It wraps [ErrPlanDiffers].
type DiffError struct {
	Batch int    // 1-based; 0 when the plans part outside the batches
	ID    string // the saved batch's id; "" when the saved plan has no batch there
	What  string // what differs, numbers masked
}

func (e *DiffError) Error() string {
	switch {
	case e.Batch == 0:
		return fmt.Sprintf("%v: %s", ErrPlanDiffers, e.What)
	case e.ID == "":
		return fmt.Sprintf("%v: batch %d: %s", ErrPlanDiffers, e.Batch, e.What)
	}
	return fmt.Sprintf("%v: batch %d (%s): %s", ErrPlanDiffers, e.Batch, e.ID, e.What)
}

func (e *DiffError) Unwrap() error { return ErrPlanDiffers }

// eachBatch is how a plan's batches are walked in order: [plan.Plan.EachBatch]
// or a saved plan's reading.
type eachBatch func(fn func(int, plan.Batch) error) error

// compareBatches walks the saved batches and the derived ones side by side,
// one batch of each at a time (never either list whole), and returns a
// *DiffError for the first batch that differs in any field or position, or
// where one list ends before the other. The saved batches are walked to
// their end even past a difference, since reading a saved plan to its end
// is what checks it and tells what it was made against. An error of a walk
// is returned as it is.
func compareBatches(saved, derived eachBatch) error {
	ahead := walkAhead(derived)
	defer ahead.stop()
	next := ahead.next
	var diff *DiffError
	n := 0
	err := saved(func(i int, s plan.Batch) error {
		n = i + 1
		if diff != nil {
			return nil
		}
		d, err, ok := next()
		switch {
		case !ok:
			diff = &DiffError{Batch: i + 1, ID: s.ID, What: "the campaign makes no batch here: the saved plan has more"}
		case err != nil:
			return err
		default:
			if what := batchDiff(s, d); what != "" {
				diff = &DiffError{Batch: i + 1, ID: s.ID, What: what}
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case diff != nil:
		return diff
	}
	// The saved batches are all read; the derived ones must be too.
	d, err, ok := next()
	switch {
	case !ok:
		return nil
	case err != nil:
		return err
	}
	return &DiffError{Batch: n + 1, What: fmt.Sprintf("the campaign makes a batch here (%s); the saved plan ends before it", d.b.ID)}
}

// indexed is a batch and its place.
type indexed struct {
	i int // 1-based
	b plan.Batch
}

// aheadBatches is a walk of a plan's batches made on a goroutine of its
// own, a few chunks ahead of whoever takes them: making a derived batch
// (its body read back, its id hashed) and reading a saved one are two
// tasks, and a machine has more than one core.
type aheadBatches struct {
	chunks chan []indexed
	errc   chan error // the walk's end, once the chunks are all sent
	done   chan struct{}
	wg     sync.WaitGroup
	cur    []indexed
	ended  bool
	err    error
}

// aheadChunk is how many batches go to the comparison at a time.
const aheadChunk = 64

func walkAhead(walk eachBatch) *aheadBatches {
	a := &aheadBatches{chunks: make(chan []indexed, 4), errc: make(chan error, 1), done: make(chan struct{})}
	errStopped := errors.New("stopped")
	send := func(c []indexed) bool {
		select {
		case a.chunks <- c:
			return true
		case <-a.done:
			return false
		}
	}
	a.wg.Go(func() {
		defer close(a.chunks)
		c := make([]indexed, 0, aheadChunk)
		err := walk(func(i int, b plan.Batch) error {
			if c = append(c, indexed{i + 1, b}); len(c) == aheadChunk {
				if !send(c) {
					return errStopped
				}
				c = make([]indexed, 0, aheadChunk)
			}
			return nil
		})
		if err == nil && len(c) > 0 && !send(c) {
			return
		}
		if !errors.Is(err, errStopped) {
			a.errc <- err
		}
	})
	return a
}

// next is the next batch; ok is false past the last one, err the walk's.
func (a *aheadBatches) next() (b indexed, err error, ok bool) {
	for len(a.cur) == 0 {
		if a.ended {
			return indexed{}, a.err, a.err != nil
		}
		c, open := <-a.chunks
		if !open {
			a.ended = true
			select {
			case a.err = <-a.errc:
			default:
			}
			continue
		}
		a.cur = c
	}
	b, a.cur = a.cur[0], a.cur[1:]
	return b, nil, true
}

// stop ends the walk and waits for its goroutine.
func (a *aheadBatches) stop() {
	close(a.done)
	a.wg.Wait()
}

// batchDiff says how two batches differ, "" when they do not: every field
// counts, numbers masked.
func batchDiff(saved plan.Batch, derived indexed) string {
	d := derived.b
	switch {
	case saved.Body != d.Body:
		return fmt.Sprintf("its body is not the one the campaign renders (%d characters in the plan, %d rendered)",
			len([]rune(saved.Body)), len([]rune(d.Body)))
	case !slices.Equal(saved.Recipients, d.Recipients):
		return recipientsDiff(saved.Recipients, d.Recipients)
	case saved.Encoding != d.Encoding || saved.Segments != d.Segments:
		return fmt.Sprintf("it says %s in %d segment(s); the body is %s in %d", saved.Encoding, saved.Segments, d.Encoding, d.Segments)
	case !slices.Equal(saved.Zones, d.Zones):
		return fmt.Sprintf("its time zones are %s; the recipients' are %s", zones(saved.Zones), zones(d.Zones))
	case saved.Hours != d.Hours:
		return fmt.Sprintf("it holds its recipients to the hours %q; the campaign's rules give %q", saved.Hours, d.Hours)
	case saved.ID != d.ID:
		return fmt.Sprintf("its id is %s; the campaign makes %s here", saved.ID, d.ID)
	}
	return ""
}

// recipientsDiff says where two lists of recipients part, numbers masked.
func recipientsDiff(saved, derived []string) string {
	for k := range min(len(saved), len(derived)) {
		if saved[k] != derived[k] {
			return fmt.Sprintf("its recipient %d is %s; the campaign has %s there", k+1, e164.Mask(saved[k]), e164.Mask(derived[k]))
		}
	}
	if len(saved) > len(derived) {
		return fmt.Sprintf("it has %d recipients, the campaign %d here: %s is not the campaign's", len(saved), len(derived), e164.Mask(saved[len(derived)]))
	}
	return fmt.Sprintf("it has %d recipients, the campaign %d here: %s is missing", len(saved), len(derived), e164.Mask(derived[len(saved)]))
}

// complianceOf words what a plan commits to of its rule sets: its kind and
// rule sets, "a campaign held to no rule set" when none.
func complianceOf(p *plan.Plan) string {
	c := p.Compliance
	if c == nil {
		return "a campaign held to no rule set"
	}
	return fmt.Sprintf("a %s campaign held to the rule sets %s", c.Kind, strings.Join(c.Sets, ", "))
}

// rulesDiff says where the rules a saved plan was checked against differ
// from those of this smsform (a new release changed a rule's data): the
// first rule whose id, date or hours differ.
func rulesDiff(saved, derived *plan.Plan) string {
	if saved.Compliance == nil || derived.Compliance == nil {
		return ""
	}
	s, d := saved.Compliance.Rules, derived.Compliance.Rules
	version := func(v plan.RuleVerdict) string { return v.ID + " of " + v.Date + " " + v.Hours }
	for i := range max(len(s), len(d)) {
		switch {
		case i >= len(s):
			return fmt.Sprintf("its rule sets do not have the rule %s that this smsform's do", d[i].ID)
		case i >= len(d):
			return fmt.Sprintf("its rule sets have a rule %s that this smsform's do not", s[i].ID)
		case version(s[i]) != version(d[i]):
			return fmt.Sprintf("it was checked against the rule %s; this smsform has %s", strings.TrimSpace(version(s[i])), strings.TrimSpace(version(d[i])))
		}
	}
	return ""
}

func zones(z []string) string {
	if len(z) == 0 {
		return "none"
	}
	return strings.Join(z, ", ")
}

// frameDiff compares what a saved plan says besides its batches that
// applying it acts on: the campaign's name, its sender, when it may send,
// the opt-outs it subtracted (optOutSeq is its header's word, which the
// plan was derived again with) and how much it sends. The rest (warnings,
// samples, paths of invalid rows) is for the reviewer and may change with
// the folder apply runs in: the plan's id covers it (see planfile).
func frameDiff(saved, derived *plan.Plan, optOutSeq int64) string {
	sw, dw := saved.Window, derived.Window
	switch {
	case saved.Campaign != derived.Campaign:
		return fmt.Sprintf("it is a plan of campaign %q, the campaign file names %q", saved.Campaign, derived.Campaign)
	case saved.Sender != derived.Sender:
		return fmt.Sprintf("its sender is %q, the campaign's %q", saved.Sender, derived.Sender)
	case !slices.Equal(sw.Days, dw.Days) || sw.From != dw.From || sw.To != dw.To || sw.Fallback != dw.Fallback ||
		!sw.NotBefore.Equal(dw.NotBefore) || !sw.NotAfter.Equal(dw.NotAfter):
		return "its send window is not the campaign's"
	case complianceOf(saved) != complianceOf(derived):
		return fmt.Sprintf("it was planned as %s; the campaign is %s", complianceOf(saved), complianceOf(derived))
	case rulesDiff(saved, derived) != "":
		return rulesDiff(saved, derived)
	case saved.State.OptOutSeq != optOutSeq:
		return fmt.Sprintf("it subtracts the opt-outs as of log number %d, its header names %d", saved.State.OptOutSeq, optOutSeq)
	case saved.State.OptOutSeq != derived.State.OptOutSeq:
		// Asked for a number past the log's end, the state answers with
		// the end: the plan claims opt-outs nobody has recorded yet.
		return fmt.Sprintf("it subtracts the opt-outs as of log number %d; the state's opt-out log ends at %d", saved.State.OptOutSeq, derived.State.OptOutSeq)
	case saved.Summary.ToSend != derived.Summary.ToSend || saved.Summary.Batches != derived.Summary.Batches:
		return fmt.Sprintf("it sends %d message(s) in %d batch(es), the campaign %d in %d",
			saved.Summary.ToSend, saved.Summary.Batches, derived.Summary.ToSend, derived.Summary.Batches)
	}
	return ""
}

// rederive plans the campaign again from its files and the state the saved
// plan was made against (without the plan's own attempts, once an earlier
// run of it recorded some), read only, and returns that plan if the saved one
// is the same, batch for batch; otherwise a *PlanRefusedError. It asks
// nothing of the API and writes nothing: a refusal leaves the state, and
// the genuine plan, as they were. On success the saved plan has been read
// whole (Saved.ReadPlan) and its stamp checked against the state.
func rederive(ctx context.Context, r Request) (*plan.Plan, error) {
	c, saved := r.Campaign, r.Saved
	if err := saved.CheckFiles(ctx, c.Files()); err != nil {
		why := FilesChanged
		if errors.Is(err, planfile.ErrFileList) {
			why = PlanDiffers
		}
		return nil, &PlanRefusedError{Why: why, Err: err}
	}
	open := state.OpenReadOnly
	if r.StateOptions.Shared {
		open = state.OpenSharedReadOnly
	}
	ro, err := open(ctx, r.State, c.Name)
	if err != nil {
		return nil, err
	}
	defer ro.Close()
	if m := ro.Moved(); m != nil {
		return nil, &state.MovedError{Loc: ro.Path(), Campaign: c.Name, Moved: *m}
	}
	// A pause is a person's word: it is said before anything else.
	if p := ro.Paused(); p != nil {
		return nil, &state.PausedError{Campaign: c.Name, Pause: *p}
	}
	if err := checkApplied(ctx, r, ro); err != nil {
		return nil, err
	}
	run, err := earlierRun(ctx, r, ro)
	if err != nil {
		return nil, err
	}
	// The opt-outs as the plan saw them: numbers opted out since are not
	// a difference, apply suppresses them as it sends (see ledger.Gate).
	derived, err := plan.ComputeWith(ctx, c, asPlanSaw(ro, r, run), plan.Options{OptOutsAsOf: &saved.OptOutSeq, Now: r.Clock.Now(), Ledger: ledger.ViewOf(ro)})
	var over *plan.BudgetError
	if err != nil && !errors.As(err, &over) {
		return nil, err
	}
	diff := compareBatches(saved.ReadPlanAgainst, derived.EachBatch)
	switch {
	case errors.Is(diff, planfile.ErrPlanID):
		// Read whole, the file's content is not what its id says: edited.
		return nil, &PlanRefusedError{Why: PlanDiffers, Err: diff}
	case diff != nil && !errors.Is(diff, ErrPlanDiffers):
		return nil, diff // the file, or the campaign's spool, could not be read
	}
	// What the plan was made against is known once its file is read: a
	// plan of a state that moved on differs for that reason, said first.
	if err := checkStamp(r, ro, run); err != nil {
		return nil, err
	}
	if diff == nil {
		if what := frameDiff(saved.Plan, derived, saved.OptOutSeq); what != "" {
			diff = &DiffError{What: what}
		}
	}
	if diff != nil {
		return nil, &PlanRefusedError{Why: PlanDiffers, Err: diff}
	}
	if over != nil {
		return nil, &PlanRefusedError{Why: OverBudget, Err: over}
	}
	return derived, nil
}
