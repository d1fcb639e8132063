package plan

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/state"
)

// maxListed caps how many of one kind of warning a plan spells out.
const maxListed = 20

// Compute plans c against what rec records (rec may be nil: nothing is
// recorded yet). With a strict campaign that lists invalid numbers it returns
// the plan and a *StrictError.
func Compute(ctx context.Context, c *campaign.Campaign, rec Recorded) (*Plan, error) {
	b := &builder{
		c:        c,
		p:        &Plan{Campaign: c.Name, Sender: c.Sender},
		norm:     e164.NewNormalizer(c.DefaultRegion),
		seen:     make(map[string]struct{}),
		excluded: make(map[string]struct{}),
		byBody:   make(map[string]int),
	}
	if rec != nil {
		b.p.State = StateStamp{Lineage: rec.Lineage(), Serial: rec.Serial()}
		if err := b.loadRecorded(ctx, rec); err != nil {
			return nil, err
		}
	}
	for _, src := range c.Exclude {
		b.warnEscape("exclude", src)
		if err := scan(ctx, src, b.normalize, b.exclude); err != nil {
			return nil, err
		}
	}
	b.noteSkipped("exclusion", b.badExclusions)

	shared, err := b.sharedBody()
	if err != nil {
		return nil, err
	}
	process := func(it *item) {
		b.normalize(it)
		if it.err != nil {
			return
		}
		if shared != nil {
			it.body = *shared
		} else {
			it.body, it.renderErr = c.Render(it.entry.Vars, it.num.E164)
		}
		it.entry.Vars = nil // rendered: the row's other columns are not needed any more
	}
	for _, src := range c.Recipients {
		b.warnEscape("recipients", src)
		if err := scan(ctx, src, process, b.add); err != nil {
			return nil, err
		}
	}
	b.noteSkipped("fixed-line", b.fixedLines)
	b.finish()
	if c.Strict && len(b.p.Invalid) > 0 {
		return b.p, &StrictError{Invalid: b.p.Invalid}
	}
	return b.p, nil
}

type group struct {
	body   string
	phones []string
}

// recorded is the little the plan keeps of a state record.
type recorded struct {
	status   state.Status
	batch    string
	reason   string
	bodyHash string
}

type builder struct {
	c        *campaign.Campaign
	p        *Plan
	norm     *e164.Normalizer
	held     map[string]recorded
	seen     map[string]struct{}
	excluded map[string]struct{}
	byBody   map[string]int
	groups   []group

	badExclusions []string // warnings, all of them counted, the first maxListed kept
	fixedLines    []string
}

func (b *builder) loadRecorded(ctx context.Context, rec Recorded) error {
	b.held = make(map[string]recorded)
	return rec.Recipients(ctx, func(r state.Recipient) error {
		b.held[r.Phone] = recorded{status: r.Status, batch: r.BatchID, reason: r.Reason, bodyHash: r.BodyHash}
		return nil
	})
}

// sharedBody renders a body that uses no per-recipient variable once, for
// everyone; it returns nil for a personalised body.
func (b *builder) sharedBody() (*string, error) {
	if b.c.Personalised() {
		return nil, nil
	}
	body, err := b.c.Render(nil, "")
	if err != nil {
		return nil, &campaign.Error{File: b.c.Path, Field: "body", Msg: err.Error()}
	}
	return &body, nil
}

func (b *builder) normalize(it *item) {
	it.num, it.err = b.norm.Normalize(it.entry.Raw)
}

func (b *builder) exclude(it *item) error {
	if it.err != nil {
		b.badExclusions = append(b.badExclusions, fmt.Sprintf("%s:%d: ignoring invalid exclusion %q: %v",
			it.entry.File, it.entry.Line, e164.Mask(it.entry.Raw), it.err))
		return nil
	}
	b.excluded[it.num.E164] = struct{}{}
	return nil
}

func (b *builder) add(it *item) error {
	s := &b.p.Summary
	if it.err != nil {
		s.Invalid++
		b.p.Invalid = append(b.p.Invalid, Invalid{
			Source: fmt.Sprintf("%s:%d", it.entry.File, it.entry.Line),
			Value:  it.entry.Raw,
			Reason: it.err.Error(),
		})
		return nil
	}
	phone := it.num.E164
	if _, dup := b.seen[phone]; dup {
		s.Duplicates++
		return nil
	}
	b.seen[phone] = struct{}{}
	s.Recipients++
	if _, ok := b.excluded[phone]; ok {
		s.Excluded++
		return nil
	}
	if it.renderErr != nil {
		return &campaign.Error{File: it.entry.File, Line: it.entry.Line, Field: "body",
			Msg:  it.renderErr.Error(),
			Hint: "add the column to the list, or give it a default: {{ default \"friend\" .name }}"}
	}
	if it.num.FixedLineOnly {
		b.fixedLines = append(b.fixedLines, fmt.Sprintf("%s:%d: %s is a fixed-line number and may not receive SMS",
			it.entry.File, it.entry.Line, e164.Mask(phone)))
	}
	if r, ok := b.held[phone]; ok {
		b.hold(phone, r, it.body)
		return nil
	}
	s.ToSend++
	gi, ok := b.byBody[it.body]
	if !ok {
		gi = len(b.groups)
		b.groups = append(b.groups, group{body: it.body})
		b.byBody[it.body] = gi
	}
	b.groups[gi].phones = append(b.groups[gi].phones, phone)
	return nil
}

// hold accounts for a recipient the state already records: whatever the
// campaign says now, it is not planned again.
func (b *builder) hold(phone string, r recorded, body string) {
	s := &b.p.Summary
	switch r.status {
	case state.Sent:
		s.AlreadySent++
		if r.bodyHash != BodyHash(body) {
			b.p.BodyChanged++
		}
	case state.InDoubt:
		s.InDoubt++
		b.p.InDoubt = append(b.p.InDoubt, Held{Phone: phone, BatchID: r.batch})
	case state.Failed:
		s.Failed++
		b.p.Failed = append(b.p.Failed, Held{Phone: phone, BatchID: r.batch, Reason: r.reason})
	}
}

func (b *builder) finish() {
	p := b.p
	p.Batches = cut(b.groups, b.c.BatchSize)
	p.Summary.Batches = len(p.Batches)
	for _, batch := range p.Batches {
		p.Summary.Segments += batch.TotalSegments()
	}
	b.warnUCS2()
	for phone := range b.held {
		if _, ok := b.seen[phone]; !ok {
			p.Removed = append(p.Removed, phone)
		}
	}
	sort.Strings(p.Removed)
	sortHeld(p.InDoubt)
	sortHeld(p.Failed)
	if p.BodyChanged > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"%d recipient(s) already sent an earlier version of the body; they are not sent again", p.BodyChanged))
	}
	if n := len(p.Removed); n > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"%d recipient(s) recorded in state are no longer in the campaign", n))
	}
}

// warnUCS2 says which characters push a body out of GSM-7 and what they
// cost, once per distinct set of characters so that a personalised campaign
// does not repeat itself a million times.
func (b *builder) warnUCS2() {
	type cost struct{ bodies, extra int }
	costs := map[string]*cost{}
	var order []string
	for _, g := range b.groups {
		a := sms.Analyze(g.body)
		if a.Encoding != sms.UCS2 {
			continue
		}
		key := string(a.Forcing)
		c, ok := costs[key]
		if !ok {
			c = &cost{}
			costs[key] = c
			order = append(order, key)
		}
		c.bodies++
		c.extra += (a.Segments - a.SegmentsIfGSM7) * len(g.phones)
	}
	for _, key := range order {
		c := costs[key]
		quoted := make([]string, 0, len(key))
		for _, r := range key {
			quoted = append(quoted, fmt.Sprintf("%q", r))
		}
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
			"%d distinct bod%s use %s, not in GSM-7: sent as UCS-2, costing %d more segment(s) in all",
			c.bodies, plural(c.bodies, "y", "ies"), strings.Join(quoted, " "), c.extra))
	}
}

func (b *builder) warnEscape(field string, src campaign.Source) {
	if src.Escapes {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
			"%s:%d: %s: %s is outside the campaign's folder", b.c.Path, src.Line, field, src.File))
	}
}

// noteSkipped adds the first maxListed lines of one kind of warning and a
// count of the rest.
func (b *builder) noteSkipped(kind string, lines []string) {
	for i, l := range lines {
		if i == maxListed {
			b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("... and %d more %s warning(s)", len(lines)-maxListed, kind))
			break
		}
		b.p.Warnings = append(b.p.Warnings, l)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// item is one recipient on its way through scan.
type item struct {
	entry     campaign.Entry
	num       e164.Number
	err       error // the number is invalid
	body      string
	renderErr error
}

const chunkSize = 512

type chunk struct {
	items []item
	done  chan struct{}
}

// scan reads src, runs process on every entry on all cores, and hands the
// results to deliver one at a time in file order, so that the plan is the
// same whatever the scheduling.
func scan(ctx context.Context, src campaign.Source, process func(*item), deliver func(*item) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *chunk, workers*2)
	ordered := make(chan *chunk, workers*4)

	var readErr error
	go func() {
		defer close(ordered)
		defer close(jobs)
		cur := &chunk{done: make(chan struct{})}
		// A chunk goes to the workers before it joins the ordered queue, so
		// every chunk the consumer waits on is sure to be processed.
		flush := func() error {
			select {
			case jobs <- cur:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case ordered <- cur:
			case <-ctx.Done():
				return ctx.Err()
			}
			cur = &chunk{items: make([]item, 0, chunkSize), done: make(chan struct{})}
			return nil
		}
		readErr = src.Read(ctx, func(e campaign.Entry) error {
			cur.items = append(cur.items, item{entry: e})
			if len(cur.items) == chunkSize {
				return flush()
			}
			return nil
		})
		if readErr == nil && len(cur.items) > 0 {
			readErr = flush()
		}
	}()

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ch := range jobs {
				for i := range ch.items {
					process(&ch.items[i])
				}
				close(ch.done)
			}
		}()
	}

	var err error
	for ch := range ordered {
		<-ch.done
		for i := 0; err == nil && i < len(ch.items); i++ {
			if err = deliver(&ch.items[i]); err != nil {
				cancel()
			}
		}
	}
	wg.Wait()
	if err != nil {
		return err
	}
	return readErr
}
