package plan

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/window"
)

// collectBefore is the number of recipients from which Compute collects
// garbage between its steps (see collect).
const collectBefore = 100_000

// Compute plans c against what rec records (rec may be nil: nothing is
// recorded yet). With a strict campaign that lists invalid numbers it returns
// the plan and a *StrictError.
//
// The state is read while the lists are, on another goroutine: what it
// records is only needed once every recipient is known.
func Compute(ctx context.Context, c *campaign.Campaign, rec Recorded) (*Plan, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := &builder{
		c:       c,
		p:       &Plan{Campaign: c.Name, Sender: c.Sender, Window: c.Window, Template: c.Body},
		norm:    e164.NewNormalizer(c.DefaultRegion),
		numbers: e164.NewMap[int32](0),
	}
	loaded := make(chan error, 1)
	if rec != nil {
		b.p.State = StateStamp{Lineage: rec.Lineage(), Serial: rec.Serial(), Location: rec.Path(), FirstSend: rec.Lineage() == ""}
		go func() { loaded <- b.loadRecorded(ctx, rec) }()
		// On an early return the loader is cancelled and waited for, so
		// that it never outlives Compute.
		defer func() {
			cancel()
			if loaded != nil {
				<-loaded
			}
		}()
	} else {
		loaded <- nil
	}
	for _, src := range c.Exclude {
		b.warnEscape("exclude", src)
		if err := scan(ctx, src, b.normalizeAll, b.exclude); err != nil {
			return nil, err
		}
	}
	b.noteSkipped("exclusion", b.badExclusions)

	shared, err := b.sharedBody()
	if err != nil {
		return nil, err
	}
	var sharedMeta recMeta
	if shared != nil {
		b.shared, b.sharedText = true, *shared
		sharedMeta = bodyMeta(*shared)
	}
	process := func(items []item) {
		for i := range items {
			it := &items[i]
			b.normalize(it)
			if it.err != nil {
				continue
			}
			it.meta = sharedMeta
			if shared == nil {
				it.body, it.renderErr = c.RenderRow(it.entry, it.num.E164)
				if it.renderErr == nil {
					it.meta = bodyMeta(it.body)
				}
				if it.empty = c.EmptyVariable(it.entry); it.empty != "" {
					it.meta.flags |= flagEmpty
				}
			}
			it.meta.region = packRegion(it.num.Region)
			if c.Prices != nil {
				if row, ok := c.Prices.Lookup(it.num.E164, it.num.Region); ok {
					it.meta.row = uint16(row + 1)
				}
			}
			it.entry.Values = nil // rendered: the row's other columns are not needed any more
		}
		if shared == nil {
			packBodies(items)
		}
	}
	for _, src := range c.Recipients {
		b.warnEscape("recipients", src)
		b.sources = append(b.sources, sourceStart{file: src.Path, first: int32(len(b.phones))})
		if src.Kind == campaign.KindInline {
			b.sources[len(b.sources)-1].file = c.Path
		}
		if err := scan(ctx, src, process, b.add); err != nil {
			return nil, err
		}
	}
	b.noteSkipped("fixed-line", b.fixedLines)
	if err := b.noteEmpty(); err != nil {
		return nil, err
	}
	err = <-loaded
	loaded = nil
	if err != nil {
		return nil, err
	}
	b.matchHeld()
	b.collect()
	b.settle()
	if c.Window.HasWindow() {
		if err := b.splitByZone(); err != nil {
			return nil, err
		}
	}
	b.collect()
	b.finish()
	if c.Strict && len(b.p.Invalid) > 0 {
		return b.p, &StrictError{Invalid: b.p.Invalid}
	}
	check, err := CheckBudget(b.p, c.Budget)
	b.p.Budget = check
	return b.p, err
}

// groups are the recipients to send, by body: group i sends bodies[i] to
// phones[ends[i-1]:ends[i]], in file order. Parallel slices rather than a
// slice of structs keep a million groups of one small.
type groups struct {
	bodies []string
	meta   []recMeta // of each group's body (the region and price are its first recipient's)
	ends   []int32
	phones []e164.Packed
}

func (g *groups) len() int { return len(g.bodies) }

func (g *groups) members(i int) []e164.Packed {
	start := int32(0)
	if i > 0 {
		start = g.ends[i-1]
	}
	return g.phones[start:g.ends[i]:g.ends[i]]
}

type builder struct {
	c    *campaign.Campaign
	p    *Plan
	norm *e164.Normalizer
	held heldSet
	// numbers holds every distinct number of the recipients and the
	// exclusions: its value is the number's index in phones, or one of
	// excludedOnly and excludedSeen.
	numbers *e164.Map[int32]

	// The recipients that are neither duplicates nor excluded, in file
	// order, with their bodies (none when the body is shared): settle
	// splits them into what the state holds and what is to send.
	shared     bool
	sharedText string
	phones     []e164.Packed
	bodies     []string
	meta       []recMeta // per recipient of phones
	lines      []uint32  // per recipient of phones: its line in its source
	sources    []sourceStart
	heldAt     []int32 // per recipient of phones: the index of its state record, or -1
	groups     groups
	groupZones []*window.Zones // per group, with a send window (see splitByZone)

	toSend    tally          // what is to send, priced and counted in settle
	ucs2Extra map[uint16]int // of toSend: the segments UCS-2 adds, by price row + 1
	spent     tally          // what the state records as sent, still in the campaign
	estimate  int            // of spent: recipients sent another body than today's
	sampler   sampler

	emptyRows []string // the first maxListed rows that print an empty variable
	emptyAt   []*campaign.Error

	badExclusions []string // warnings, all of them counted, the first maxListed kept
	fixedLines    []string
}

// sourceStart is where a recipient source begins in builder.phones.
type sourceStart struct {
	file  string
	first int32
}

// location is the source line of recipient i of b.phones.
func (b *builder) location(i int32) string {
	src := b.sources[0]
	for _, s := range b.sources {
		if s.first > i {
			break
		}
		src = s
	}
	return fmt.Sprintf("%s:%d", src.file, b.lines[i])
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

func (b *builder) normalizeAll(items []item) {
	for i := range items {
		b.normalize(&items[i])
	}
}

// packBodies moves the bodies of a chunk's valid items into one string.
// What a plan keeps of a million bodies then lives in a few hundred blocks
// rather than among the rows' garbage, which the collector can then give
// back whole. (Numbers are kept packed, as e164.Packed.)
func packBodies(items []item) {
	size := 0
	for i := range items {
		if it := &items[i]; it.err == nil {
			size += len(it.body)
		}
	}
	var sb strings.Builder
	sb.Grow(size)
	for i := range items {
		if it := &items[i]; it.err == nil {
			sb.WriteString(it.body)
		}
	}
	block, off := sb.String(), 0
	for i := range items {
		if it := &items[i]; it.err == nil {
			it.body = block[off : off+len(it.body)]
			off += len(it.body)
		}
	}
}

func (b *builder) exclude(it *item) error {
	if it.err != nil {
		b.badExclusions = append(b.badExclusions, fmt.Sprintf("%s:%d: ignoring invalid exclusion %q: %v",
			it.entry.File, it.entry.Line, e164.Mask(it.entry.Raw), it.err))
		return nil
	}
	if v, added := b.numbers.Ref(it.num.E164); added {
		*v = excludedOnly
	}
	return nil
}

// Values in builder.numbers of numbers that are not in phones.
const (
	excludedOnly int32 = -1 // excluded, not (yet) among the recipients
	excludedSeen int32 = -2 // excluded, and among the recipients
)

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
	k, ok := e164.Pack(phone)
	if !ok { // a Normalizer's E.164 always packs
		return fmt.Errorf("%s:%d: %s: not in E.164 form", it.entry.File, it.entry.Line, e164.Mask(phone))
	}
	v, added := b.numbers.RefPacked(k)
	if !added && *v != excludedOnly {
		s.Duplicates++
		if len(b.p.DuplicateRows) < maxListed {
			d := Duplicate{Row: fmt.Sprintf("%s:%d", it.entry.File, it.entry.Line), Phone: phone}
			if *v >= 0 {
				d.Kept = b.location(*v)
			}
			b.p.DuplicateRows = append(b.p.DuplicateRows, d)
		}
		return nil
	}
	s.Recipients++
	if !added {
		*v = excludedSeen
		s.Excluded++
		return nil
	}
	*v = int32(len(b.phones))
	if it.renderErr != nil {
		return &campaign.Error{File: it.entry.File, Line: it.entry.Line, Field: "body",
			Msg:  it.renderErr.Error(),
			Hint: "add the column to the list, or give it a default: {{ default \"friend\" .name }}"}
	}
	if it.empty != "" {
		ev := &b.p.EmptyVariables
		ev.Recipients++
		if len(ev.Rows) < maxListed {
			ev.Rows = append(ev.Rows, fmt.Sprintf("%s:%d: %s", it.entry.File, it.entry.Line, it.empty))
			b.emptyAt = append(b.emptyAt, &campaign.Error{File: it.entry.File, Line: it.entry.Line, Field: it.empty,
				Msg:  "variable is empty, and the body prints it (empty_variables: error)",
				Hint: "fill the list in, give the variable a default: {{ default \"friend\" ." + it.empty + " }}, or set empty_variables: warn"})
		}
	}
	if it.num.FixedLineOnly {
		b.fixedLines = append(b.fixedLines, fmt.Sprintf("%s:%d: %s is a fixed-line number and may not receive SMS",
			it.entry.File, it.entry.Line, e164.Mask(phone)))
	}
	b.phones = append(b.phones, k)
	b.meta = append(b.meta, it.meta)
	b.lines = append(b.lines, uint32(it.entry.Line))
	if !b.shared {
		b.bodies = append(b.bodies, it.body)
	}
	return nil
}

// settle accounts for the recipients the state holds and groups the others
// by body: groups in the order of their first recipient, each group's
// recipients in file order.
func (b *builder) settle() {
	s := &b.p.Summary
	// Pass one: which group each recipient to send joins. The recipients
	// to send are compacted in place at the front of b.phones.
	var (
		index   bodyIndex
		gidx    = make([]int32, 0, max(len(b.phones)-b.held.len(), 0))
		counts  []int32
		ngroups int
		sorted  = true // every group's recipients already follow each other
	)
	n := 0
	b.toSend = tally{}
	for i, phone := range b.phones {
		if b.heldAt != nil && b.heldAt[i] >= 0 {
			b.hold(phone.String(), &b.held.recs[b.heldAt[i]])
			continue
		}
		m := b.meta[i]
		b.toSend[m.key()]++
		if m.flags&flagUCS2 != 0 && m.segs > m.gsm {
			if b.ucs2Extra == nil {
				b.ucs2Extra = map[uint16]int{}
			}
			b.ucs2Extra[m.row] += int(m.segs - m.gsm)
		}
		body := b.sharedText
		if !b.shared {
			body = b.bodies[i]
		}
		b.sampler.consider(phone, body, m)
		gi := 0
		if !b.shared {
			// The groups' bodies are kept at the front of b.bodies: there
			// are never more groups than recipients seen.
			body := b.bodies[i]
			var ok bool
			if gi, ok = index.find(body, b.bodies[:ngroups]); !ok {
				gi = ngroups
				b.bodies[gi] = body
				ngroups++
				counts = append(counts, 0)
				b.groups.meta = append(b.groups.meta, m)
				index.note(gi, b.bodies[:ngroups])
			}
		} else if len(counts) == 0 {
			counts = append(counts, 0)
			b.groups.meta = append(b.groups.meta, m)
		}
		if len(gidx) > 0 && int32(gi) < gidx[len(gidx)-1] {
			sorted = false
		}
		gidx = append(gidx, int32(gi))
		counts[gi]++
		b.phones[n] = phone
		n++
	}
	if b.shared {
		if n > 0 {
			b.groups.bodies = []string{b.sharedText}
		}
	} else {
		clear(b.bodies[ngroups:])
		b.groups.bodies = b.bodies[:ngroups:ngroups]
	}
	s.ToSend = n
	phones := b.phones[:n:n]
	clear(b.phones[n:])
	b.bodies, b.heldAt, b.held, b.meta, b.lines = nil, nil, heldSet{}, nil, nil
	index = bodyIndex{}
	// Pass two: each group's recipients side by side in one array.
	if !sorted {
		ordered := make([]e164.Packed, n)
		next := make([]int32, len(counts))
		off := int32(0)
		for gi, c := range counts {
			next[gi] = off
			off += c
		}
		for k, phone := range phones {
			ordered[next[gidx[k]]] = phone
			next[gidx[k]]++
		}
		phones = ordered
	}
	off := int32(0)
	for gi, c := range counts {
		off += c
		counts[gi] = off
	}
	b.groups.ends, b.groups.phones = counts, phones
	b.phones = nil
}

// collect runs the garbage collector in a large plan and gives the memory
// it frees back to the system. The Go collector lets the heap grow to twice
// what survived the last collection, and keeps what it frees for reuse; but
// the next step allocates a few large arrays, which the freed scraps of the
// last one cannot hold. Collecting between steps keeps the peak near what
// the plan keeps rather than the sum of every step's garbage.
func (b *builder) collect() {
	if len(b.phones)+len(b.groups.phones) >= collectBefore {
		debug.FreeOSMemory()
	}
}

func (b *builder) finish() {
	p := b.p
	p.cut = newBatchTable(&b.groups, b.c.BatchSize)
	p.cut.zones = b.groupZones
	b.price()
	p.Summary.Batches = p.cut.n
	for gi := range b.groups.len() {
		p.Summary.Segments += int(b.groups.meta[gi].segs) * len(b.groups.members(gi))
	}
	b.warnUCS2()
	sort.Strings(p.Removed)
	p.Removed = slices.Compact(p.Removed) // a state that records a number twice
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
