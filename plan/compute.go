package plan

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
)

// collectBefore is the number of recipients from which Compute collects
// garbage between its steps (see collect).
const collectBefore = 100_000

// Compute plans c against what rec records (rec may be nil: nothing is
// recorded yet). With a strict campaign that lists invalid numbers it returns
// the plan and a *StrictError; with recipients none of which is valid, the
// plan and a *NoValidError.
//
// What a plan keeps of each recipient is a few fixed-size values in columns
// that hold no pointers, and the text of each distinct body goes to a spool
// (see bodyStore): ten million recipients must fit in well under a
// gigabyte. The state's records are matched to the recipients once every
// recipient is known, and kept only as a status per recipient.
func Compute(ctx context.Context, c *campaign.Campaign, rec Recorded) (*Plan, error) {
	return ComputeWith(ctx, c, rec, Options{})
}

// ComputeWith is [Compute] with options: the opt-outs as of a given number
// of their log, the moment the frequency cap is judged at (see [Ledger]).
func ComputeWith(ctx context.Context, c *campaign.Campaign, rec Recorded, o Options) (*Plan, error) {
	b := &builder{
		c:              c,
		p:              &Plan{Campaign: c.Name, Sender: c.Sender, Window: c.Window, Template: c.Body},
		norm:           e164.NewNormalizer(c.DefaultRegion),
		bodies:         &bodyStore{},
		comp:           newChecker(c),
		undeliveredSet: o.Undelivered,
	}
	// The state is read on another goroutine while the lists are, a
	// bounded way ahead (see readRecorded), and matched once every
	// recipient is known.
	var (
		recorded     <-chan *heldChunk
		recordedDone func() error
		ledger       func() (*ledgerView, error)
	)
	if rec != nil {
		b.p.State = StateStamp{Lineage: rec.Lineage(), Serial: rec.Serial(), Location: rec.Path(), FirstSend: rec.Lineage() == "" || rec.Serial() == 0}
		readCtx, cancel := context.WithCancel(ctx)
		recorded, recordedDone = readRecorded(readCtx, rec)
		ledger = readLedger(readCtx, CapsOf(c), o)
		// On any return the readers are stopped and waited for, so that
		// they never outlive Compute.
		defer func() {
			cancel()
			recordedDone()
			ledger()
		}()
	}
	if err := b.read(ctx); err != nil {
		return nil, err
	}
	if rec != nil {
		b.matchRecorded(recorded)
		if err := recordedDone(); err != nil {
			return nil, err
		}
		v, err := ledger()
		if err != nil {
			return nil, err
		}
		b.useLedger(v)
	}
	if err := b.arrange(); err != nil {
		return nil, err
	}
	if err := b.readControls(ctx, rec); err != nil {
		return nil, err
	}
	if err := noValid(b.p, c.DefaultRegion); err != nil {
		return b.p, err
	}
	if c.Strict && len(b.p.Invalid) > 0 {
		return b.p, &StrictError{Invalid: b.p.Invalid}
	}
	check, err := CheckBudget(b.p, c.Budget)
	b.p.Budget = check
	// Messages that break a rule fail the plan before its budget does:
	// the plan is shown, with each rule's verdict, and never applied.
	if cerr := b.comp.err(); cerr != nil {
		return b.p, cerr
	}
	return b.p, err
}

// read reads the exclusions, then the recipients, each rendered and
// checked; it fails on the rows that the campaign refuses.
func (b *builder) read(ctx context.Context) error {
	for _, src := range b.c.Exclude {
		b.warnEscape("exclude", src)
		if err := scan(ctx, src, b.normalizeAll, b.exclude); err != nil {
			return err
		}
	}
	b.noteSkipped("exclusion", b.badExclusions)
	if err := b.useSharedBody(); err != nil {
		return err
	}
	for _, src := range b.c.Recipients {
		b.warnEscape("recipients", src)
		b.sources = append(b.sources, sourceStart{file: src.Path, first: int32(b.phones.len())})
		if src.Kind == campaign.KindInline {
			b.sources[len(b.sources)-1].file = b.c.Path
		}
		before := b.rowsRead()
		if err := scan(ctx, src, b.prepare, b.add); err != nil {
			return err
		}
		if b.rowsRead() == before {
			b.warnEmptyList(src)
		}
	}
	b.noteSkipped("fixed-line", b.fixedLines)
	if b.comp != nil && b.shared {
		b.comp.finishShared(b.c, b.p.Summary.Recipients-b.p.Summary.Excluded)
	}
	return errors.Join(b.noteEmpty(), b.noteTooLong())
}

// useSharedBody renders once, for everyone, a body that uses no
// per-recipient variable.
func (b *builder) useSharedBody() error {
	shared, err := b.sharedBody()
	if err != nil || shared == nil {
		return err
	}
	b.shared = true
	if b.comp != nil {
		b.comp.useShared(*shared)
	}
	m := metaOf(*shared)
	if limit := b.c.Provider.MaxBodyLength; limit > 0 && int(m.chars) > limit {
		return &campaign.Error{File: campaign.Plain(b.c.Path), Line: b.c.BodyLine, Field: "body", Msg: tooLongWords(int(m.chars), limit), Hint: tooLongHint}
	}
	_, err = b.bodies.add(*shared, sumBody(*shared), m)
	return err
}

// prepare does, on scan's workers, what each recipient needs before it is
// added: its number in E.164, its body rendered and checked, its place.
func (b *builder) prepare(items []item) {
	c := b.c
	for i := range items {
		it := &items[i]
		b.normalize(it)
		if it.err != nil {
			continue
		}
		if !b.shared {
			it.body, it.renderErr = c.RenderRow(it.entry, it.num.E164)
			if it.renderErr == nil {
				it.meta, it.sum = metaOf(it.body), sumBody(it.body)
				if b.comp != nil {
					it.violations = b.comp.check(it.body)
				}
			}
			if it.empty = c.BlankVariables(it.entry, it.num.E164); it.empty != nil {
				it.meta.flags |= flagEmpty
			}
		}
		it.place.region = packRegion(it.num.Region)
		if c.Prices != nil {
			if row, ok := c.Prices.Lookup(it.num.E164, it.num.Region); ok {
				it.place.row = uint16(row + 1)
			}
		}
		it.entry.Values = nil // rendered: the row's other columns are not needed any more
	}
}

// arrange groups the recipients, once every one is known and matched to
// the state, and cuts the groups into batches.
func (b *builder) arrange() error {
	b.numbers, b.excluded = index{}, nil
	if err := b.bodies.done(); err != nil {
		return err
	}
	b.collect()
	b.settle()
	if b.c.Window.HasWindow() || b.comp != nil && b.comp.hours {
		if err := b.splitByZone(); err != nil {
			return err
		}
	}
	if b.comp != nil {
		b.comp.verdicts(b.p, b.c.Window.Week(), b.c.Window.HasWindow())
		if err := b.comp.closedWindow(b.c); err != nil {
			return err
		}
	}
	b.collect()
	return b.finish()
}

// groups are the recipients to send, by body: group i sends body bodies[i]
// to phones [ends[i-1], ends[i]), in file order.
type groups struct {
	bodies []int32 // ids in the bodyStore
	ends   []int32
	phones column[e164.Packed]
}

func (g *groups) len() int { return len(g.bodies) }

// members returns where group i's recipients are in phones.
func (g *groups) members(i int) (start, end int) {
	if i > 0 {
		start = int(g.ends[i-1])
	}
	return start, int(g.ends[i])
}

// place is what pricing needs of a recipient's number.
type place struct {
	region uint16 // packRegion of the number's country
	row    uint16 // the price row + 1; 0: no price
}

type builder struct {
	c      *campaign.Campaign
	p      *Plan
	norm   *e164.Normalizer
	shared bool // one body for everyone: bodies holds it, bodyOf nothing

	// The recipients that are neither duplicates nor excluded, in file
	// order: settle splits them into what the state holds and what is to
	// send.
	phones  column[e164.Packed]
	bodyOf  column[int32] // a personalised body's id in bodies
	places  column[place]
	lines   lineIndex
	sources []sourceStart
	numbers index // finds a number among phones
	// excluded holds the exclusions' numbers: true once one was met among
	// the recipients.
	excluded   *e164.Map[bool]
	bodies     *bodyStore
	held       heldSet
	groups     groups
	groupZones []*window.Zones // per group, with a send window (see splitByZone)
	groupHours []string        // per group, with rules that set hours: the hours, "" for none
	ledger     *ledgerView     // the project's opt-outs and cap holds; nil: none
	comp       *checker        // the campaign's rule sets; nil: none

	toSend    tally          // what is to send, priced and counted in settle
	ucs2Extra map[uint16]int // of toSend: the segments UCS-2 adds, by price row + 1
	spent     tally          // what the state records as sent, still in the campaign
	// undelivered is, of spent, what the provider reported undelivered
	// (the numbers in undeliveredSet); nil when no set was given.
	undelivered    tally
	undeliveredSet map[string]bool
	sampler        sampler

	emptyAt  []*campaign.Error // the first maxListed rows that print an empty variable
	emptyRef string            // how the body reads the first variable found empty, for the warning's example
	tooLong  tooLong           // the rows whose body is longer than the provider takes

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
	return fmt.Sprintf("%s:%d", src.file, b.lines.at(i))
}

// lineIndex is the line of each recipient in its source, written down only
// where it is not the line after the previous recipient's: rows mostly
// follow each other.
type lineIndex struct {
	from []int32  // recipients where the run of lines breaks
	line []uint32 // the line of each of them
}

func (x *lineIndex) add(i int32, line uint32) {
	if k := len(x.from) - 1; k >= 0 && x.line[k]+uint32(i-x.from[k]) == line {
		return
	}
	x.from, x.line = append(x.from, i), append(x.line, line)
}

func (x *lineIndex) at(i int32) uint32 {
	k := sort.Search(len(x.from), func(k int) bool { return x.from[k] > i }) - 1
	return x.line[k] + uint32(i-x.from[k])
}

// sharedBody renders a body that uses no per-recipient variable once, for
// everyone; it returns nil for a personalised body.
func (b *builder) sharedBody() (*string, error) {
	if b.c.Personalised() {
		return nil, nil
	}
	body, err := b.c.Render(nil, "")
	if err != nil {
		return nil, &campaign.Error{File: campaign.Plain(b.c.Path), Line: b.c.BodyLine, Field: "body", Msg: err.Error()}
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

func (b *builder) exclude(it *item) error {
	if it.err != nil {
		b.badExclusions = append(b.badExclusions, fmt.Sprintf("%s:%d: ignoring invalid exclusion %s: %v",
			campaign.Plain(it.entry.File), it.entry.Line, campaign.Quote(e164.Mask(it.entry.Raw)), it.err))
		return nil
	}
	if b.excluded == nil {
		b.excluded = e164.NewMap[bool](0)
	}
	b.excluded.Ref(it.num.E164)
	return nil
}

// hashNumber spreads a packed number's bits over a hash (murmur3's
// finaliser): packed digits differ mostly in a few low nibbles.
func hashNumber(k e164.Packed) uint64 {
	h := uint64(k)
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

// recipient returns the index in b.phones of the recipient of number k.
func (b *builder) recipient(k e164.Packed) (int32, bool) {
	return b.numbers.find(hashNumber(k), func(id int32) bool { return b.phones.at(int(id)) == k })
}

// excludedSeen says whether k is excluded and among the recipients.
func (b *builder) excludedSeen(k e164.Packed) bool {
	if b.excluded == nil {
		return false
	}
	seen, _ := b.excluded.GetPacked(k)
	return seen
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
	k, ok := e164.Pack(phone)
	if !ok { // a Normalizer's E.164 always packs
		return fmt.Errorf("%s:%d: %s: not in E.164 form", it.entry.File, it.entry.Line, e164.Mask(phone))
	}
	kept, dup := b.recipient(k)
	excluded := false
	if !dup && b.excluded != nil {
		if seen, ok := b.excluded.GetPacked(k); ok {
			excluded, dup, kept = true, seen, -1
			if !seen {
				v, _ := b.excluded.RefPacked(k)
				*v = true
			}
		}
	}
	if dup {
		s.Duplicates++
		if len(b.p.DuplicateRows) < maxListed {
			d := Duplicate{Row: fmt.Sprintf("%s:%d", it.entry.File, it.entry.Line), Phone: phone}
			if kept >= 0 {
				d.Kept = b.location(kept)
				// A personalised body that differs: the dropped row's
				// variables are not the kept one's.
				d.Differs = !b.shared && it.renderErr == nil && b.bodies.sums.at(int(b.bodyOf.at(int(kept)))) != it.sum
			}
			b.p.DuplicateRows = append(b.p.DuplicateRows, d)
		}
		return nil
	}
	s.Recipients++
	if excluded {
		s.Excluded++
		return nil
	}
	if it.renderErr != nil {
		return &campaign.Error{File: campaign.Plain(it.entry.File), Line: it.entry.Line, Field: "body",
			Msg: it.renderErr.Error(), Hint: b.c.MissingHint(it.renderErr)}
	}
	if it.empty != nil {
		b.noteBlank(it)
	}
	if b.comp != nil && !b.shared {
		b.comp.note(it.entry.File, it.entry.Line, it.violations)
	}
	if limit := b.c.Provider.MaxBodyLength; limit > 0 && !b.shared && int(it.meta.chars) > limit {
		b.noteLong(it, limit)
	}
	if it.num.FixedLineOnly {
		b.fixedLines = append(b.fixedLines, fmt.Sprintf("%s:%d: %s is a fixed-line number and may not receive SMS",
			it.entry.File, it.entry.Line, e164.Mask(phone)))
	}
	id := int32(b.phones.len())
	if err := b.numbers.add(hashNumber(k), id, func(id int32) uint64 { return hashNumber(b.phones.at(int(id))) }); err != nil {
		return err
	}
	b.phones.append(k)
	b.places.append(it.place)
	b.lines.add(id, uint32(it.entry.Line))
	if !b.shared {
		body, err := b.bodies.add(it.body, it.sum, it.meta)
		if err != nil {
			return err
		}
		// Two rows can render one body, only one of them with an empty
		// variable: the body is marked if any is.
		b.bodies.meta.ptr(int(body)).flags |= it.meta.flags & flagEmpty
		b.bodyOf.append(body)
	}
	return nil
}

// settle accounts for the recipients the state holds and groups the others
// by body: groups in the order of their first recipient, each group's
// recipients in file order.
func (b *builder) settle() {
	s := &b.p.Summary
	// Pass one: which group each recipient to send joins. The recipients
	// to send are compacted in place at the front of b.phones, their
	// group in b.bodyOf.
	groupOf := make([]int32, b.bodies.len()) // group+1 of each body, 0 for none yet
	// At most a group a body: sized once, not grown (and copied) a
	// million times over in a personalised campaign.
	counts := make([]int32, 0, b.bodies.len())
	b.groups.bodies = make([]int32, 0, b.bodies.len())
	sorted := true // every group's recipients already follow each other
	optedOut := b.lookUpLedger()
	last, n := int32(0), 0
	b.toSend, b.spent = tally{}, tally{}
	if b.undeliveredSet != nil {
		b.undelivered = tally{}
	}
	for i := range b.phones.len() {
		phone := b.phones.at(i)
		body := int32(0)
		if !b.shared {
			body = b.bodyOf.at(i)
		}
		m := b.bodies.meta.at(int(body))
		key := costKeyOf(b.places.at(i), m)
		if st := b.held.of(i); st != notHeld {
			b.hold(phone, int32(i), st, key)
			continue
		}
		if optedOut != nil && optedOut[i] {
			continue
		}
		b.toSend[key]++
		if m.flags&flagUCS2 != 0 && m.segs > m.gsm {
			if b.ucs2Extra == nil {
				b.ucs2Extra = map[uint16]int{}
			}
			b.ucs2Extra[key.row] += int(m.segs - m.gsm)
		}
		b.sampler.consider(phone, body, m)
		g := groupOf[body]
		if g == 0 {
			b.groups.bodies = append(b.groups.bodies, body)
			counts = append(counts, 0)
			g = int32(len(counts))
			groupOf[body] = g
		}
		if g < last {
			sorted = false
		}
		last = g
		counts[g-1]++
		*b.phones.ptr(n) = phone
		if !b.shared {
			*b.bodyOf.ptr(n) = g - 1
		}
		n++
	}
	s.ToSend = n
	b.phones.truncate(n)
	b.places, b.held = column[place]{}, heldSet{}
	// Pass two: each group's recipients side by side.
	if !sorted {
		var ordered column[e164.Packed]
		for range n {
			ordered.append(0)
		}
		next := make([]int32, len(counts))
		off := int32(0)
		for gi, c := range counts {
			next[gi] = off
			off += c
		}
		for k := range n {
			g := b.bodyOf.at(k)
			*ordered.ptr(int(next[g])) = b.phones.at(k)
			next[g]++
		}
		b.phones = ordered
	}
	b.bodyOf = column[int32]{}
	off := int32(0)
	for gi, c := range counts {
		off += c
		counts[gi] = off
	}
	b.groups.ends, b.groups.phones = counts, b.phones
	b.phones = column[e164.Packed]{}
}

// collect runs the garbage collector in a large plan and gives the memory
// it frees back to the system. The Go collector lets the heap grow to twice
// what survived the last collection, and keeps what it frees for reuse; but
// the next step allocates a few large arrays, which the freed scraps of the
// last one cannot hold. Collecting between steps keeps the peak near what
// the plan keeps rather than the sum of every step's garbage.
func (b *builder) collect() {
	if b.phones.len()+b.groups.phones.len() >= collectBefore {
		debug.FreeOSMemory()
	}
}

func (b *builder) finish() error {
	p := b.p
	p.BatchSize = b.batchSize()
	p.cut = newBatchTable(&b.groups, b.bodies, p.BatchSize)
	p.cut.zones, p.cut.hours = b.groupZones, b.groupHours
	if err := b.price(); err != nil {
		return err
	}
	p.Summary.Batches = p.cut.n
	for gi := range b.groups.len() {
		start, end := b.groups.members(gi)
		p.Summary.Segments += int(b.bodies.meta.at(int(b.groups.bodies[gi])).segs) * (end - start)
	}
	b.warnResults()
	if err := b.warnUCS2(); err != nil {
		return err
	}
	sort.Strings(p.Removed)
	p.Removed = slices.Compact(p.Removed) // a state that records a number twice
	sortHeld(p.InDoubt)
	sortHeld(p.Failed)
	if p.BodyChanged > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"%s %s already sent an earlier version of the body: not sent again", words.Count(p.BodyChanged), words.Plural(p.BodyChanged, "recipient", "recipients")))
	}
	if n := len(p.Removed); n > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"%s %s recorded in state %s no longer in the campaign", words.Count(n), words.Plural(n, "recipient", "recipients"), words.Plural(n, "is", "are")))
	}
	return nil
}
