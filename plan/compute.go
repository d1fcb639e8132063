package plan

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash/maphash"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/state"
)

// collectBefore is the number of recipients from which Compute collects
// garbage between its steps (see collect).
const collectBefore = 100_000

// maxListed caps how many of one kind of warning a plan spells out.
const maxListed = 20

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
		c:    c,
		p:    &Plan{Campaign: c.Name, Sender: c.Sender},
		norm: e164.NewNormalizer(c.DefaultRegion),
	}
	loaded := make(chan error, 1)
	if rec != nil {
		b.p.State = StateStamp{Lineage: rec.Lineage(), Serial: rec.Serial()}
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
	if shared != nil {
		b.shared, b.sharedText = true, *shared
	}
	process := func(items []item) {
		for i := range items {
			it := &items[i]
			b.normalize(it)
			if it.err != nil {
				continue
			}
			if shared == nil {
				it.body, it.renderErr = c.RenderRow(it.entry, it.num.E164)
			}
			it.entry.Values = nil // rendered: the row's other columns are not needed any more
		}
		pack(items, shared == nil)
	}
	for _, src := range c.Recipients {
		b.warnEscape("recipients", src)
		if err := scan(ctx, src, process, b.add); err != nil {
			return nil, err
		}
	}
	b.noteSkipped("fixed-line", b.fixedLines)
	err = <-loaded
	loaded = nil
	if err != nil {
		return nil, err
	}
	b.noteRemoved()
	b.collect()
	b.settle()
	b.collect()
	b.finish()
	if c.Strict && len(b.p.Invalid) > 0 {
		return b.p, &StrictError{Invalid: b.p.Invalid}
	}
	return b.p, nil
}

// groups are the recipients to send, by body: group i sends bodies[i] to
// phones[ends[i-1]:ends[i]], in file order. Parallel slices rather than a
// slice of structs keep a million groups of one small.
type groups struct {
	bodies []string
	ends   []int32
	phones []string
}

func (g *groups) len() int { return len(g.bodies) }

func (g *groups) members(i int) []string {
	start := int32(0)
	if i > 0 {
		start = g.ends[i-1]
	}
	return g.phones[start:g.ends[i]:g.ends[i]]
}

type builder struct {
	c        *campaign.Campaign
	p        *Plan
	norm     *e164.Normalizer
	held     heldSet
	seen     phoneSet
	excluded phoneSet

	// The recipients that are neither duplicates nor excluded, in file
	// order, with their bodies (none when the body is shared): settle
	// splits them into what the state holds and what is to send.
	shared     bool
	sharedText string
	phones     []string
	bodies     []string
	heldAt     []int32 // per recipient of phones: the index of its state record, or -1
	groups     groups

	badExclusions []string // warnings, all of them counted, the first maxListed kept
	fixedLines    []string
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

// pack moves the numbers (and bodies) of a chunk's valid items into one
// string. What a plan keeps of a million recipients then lives in a few
// hundred blocks rather than among the rows' garbage, which the collector
// can then give back whole.
func pack(items []item, bodies bool) {
	size := 0
	for i := range items {
		if it := &items[i]; it.err == nil {
			size += len(it.num.E164)
			if bodies {
				size += len(it.body)
			}
		}
	}
	var sb strings.Builder
	sb.Grow(size)
	for i := range items {
		if it := &items[i]; it.err == nil {
			sb.WriteString(it.num.E164)
			if bodies {
				sb.WriteString(it.body)
			}
		}
	}
	block, off := sb.String(), 0
	take := func(n int) string {
		s := block[off : off+n]
		off += n
		return s
	}
	for i := range items {
		if it := &items[i]; it.err == nil {
			it.num.E164 = take(len(it.num.E164))
			if bodies {
				it.body = take(len(it.body))
			}
		}
	}
}

func (b *builder) exclude(it *item) error {
	if it.err != nil {
		b.badExclusions = append(b.badExclusions, fmt.Sprintf("%s:%d: ignoring invalid exclusion %q: %v",
			it.entry.File, it.entry.Line, e164.Mask(it.entry.Raw), it.err))
		return nil
	}
	b.excluded.add(it.num.E164)
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
	if !b.seen.add(phone) {
		s.Duplicates++
		return nil
	}
	s.Recipients++
	if b.excluded.has(phone) {
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
	b.phones = append(b.phones, phone)
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
	b.p.BodyChanged = b.lookupHeld()
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
	for i, phone := range b.phones {
		if b.heldAt != nil && b.heldAt[i] >= 0 {
			b.hold(phone, &b.held.recs[b.heldAt[i]])
			continue
		}
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
				index.note(gi, b.bodies[:ngroups])
			}
		} else if len(counts) == 0 {
			counts = append(counts, 0)
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
	b.bodies, b.heldAt, b.held = nil, nil, heldSet{}
	index = bodyIndex{}
	// Pass two: each group's recipients side by side in one array.
	if !sorted {
		ordered := make([]string, n)
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

// lookupHeld finds, on every core, which recipients the state holds
// (b.heldAt) and counts those it records as sent with a body other than the
// one they would get now.
func (b *builder) lookupHeld() int {
	if b.held.len() == 0 {
		return 0
	}
	b.heldAt = make([]int32, len(b.phones))
	workers := runtime.GOMAXPROCS(0)
	per := (len(b.phones) + workers - 1) / workers
	counts := make([]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := min(w*per, len(b.phones)), min((w+1)*per, len(b.phones))
		wg.Go(func() {
			var last string
			var lastSum [sha256.Size]byte
			haveLast := false
			for i := lo; i < hi; i++ {
				at := b.held.find(b.phones[i])
				b.heldAt[i] = at
				if at < 0 || b.held.recs[at].status != heldSent {
					continue
				}
				r := &b.held.recs[at]
				body := b.sharedText
				if !b.shared {
					body = b.bodies[i]
				}
				if r.rawHash >= 0 {
					if b.held.raw[r.rawHash] != BodyHash(body) {
						counts[w]++
					}
					continue
				}
				// Neighbours often share a body (a shared one always).
				if !haveLast || body != last {
					last, lastSum, haveLast = body, sha256.Sum256([]byte(body)), true
				}
				if lastSum != r.hash {
					counts[w]++
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

// hold accounts for a recipient the state already records: whatever the
// campaign says now, it is not planned again. (Sent recipients whose body
// changed are counted by lookupHeld.)
func (b *builder) hold(phone string, r *heldRec) {
	s := &b.p.Summary
	switch r.status {
	case heldSent:
		s.AlreadySent++
	case heldInDoubt:
		s.InDoubt++
		b.p.InDoubt = append(b.p.InDoubt, Held{Phone: phone, BatchID: b.held.more[r.more].batch})
	case heldFailed:
		s.Failed++
		m := b.held.more[r.more]
		b.p.Failed = append(b.p.Failed, Held{Phone: phone, BatchID: m.batch, Reason: m.reason})
	}
}

// noteRemoved lists the recipients the state records that the campaign no
// longer has (excluded ones are still the campaign's).
func (b *builder) noteRemoved() {
	b.held.each(func(phone string) {
		if !b.seen.has(phone) {
			b.p.Removed = append(b.p.Removed, phone)
		}
	})
	b.seen, b.excluded = phoneSet{}, phoneSet{}
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
	p.Batches = cut(&b.groups, b.c.BatchSize)
	p.Summary.Batches = len(p.Batches)
	for _, batch := range p.Batches {
		p.Summary.Segments += batch.TotalSegments()
	}
	b.warnUCS2()
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
// does not repeat itself a million times. It reads each group's encoding
// from its first batch, and analyses again only the UCS-2 bodies.
func (b *builder) warnUCS2() {
	type cost struct{ bodies, extra int }
	costs := map[string]*cost{}
	var order []string
	first := 0 // the group's first batch
	for gi, body := range b.groups.bodies {
		members := len(b.groups.members(gi))
		enc := b.p.Batches[first].Encoding
		first += (members + b.c.BatchSize - 1) / b.c.BatchSize
		if enc != sms.UCS2 {
			continue
		}
		a := sms.Analyze(body)
		key := string(a.Forcing)
		c, ok := costs[key]
		if !ok {
			c = &cost{}
			costs[key] = c
			order = append(order, key)
		}
		c.bodies++
		c.extra += (a.Segments - a.SegmentsIfGSM7) * members
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

// phoneKey packs a number in E.164 ("+" and up to 19 digits, the first not
// 0) into an integer, which makes sets of a million numbers far smaller
// and faster than sets of strings. Anything else reports false.
func phoneKey(phone string) (uint64, bool) {
	if len(phone) < 2 || len(phone) > 20 || phone[0] != '+' || phone[1] == '0' {
		return 0, false
	}
	var k uint64
	for i := 1; i < len(phone); i++ {
		c := phone[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		k = k*10 + uint64(c-'0')
	}
	return k, true
}

// keyPhone is the inverse of phoneKey.
func keyPhone(k uint64) string {
	var buf [21]byte
	return string(strconv.AppendUint(append(buf[:0], '+'), k, 10))
}

// phoneSet is a set of phone numbers.
type phoneSet struct {
	keys  map[uint64]struct{}
	other map[string]struct{} // numbers phoneKey does not take
}

// add adds phone and reports whether it was new.
func (s *phoneSet) add(phone string) bool {
	if k, ok := phoneKey(phone); ok {
		if s.keys == nil {
			s.keys = make(map[uint64]struct{})
		}
		n := len(s.keys)
		s.keys[k] = struct{}{}
		return len(s.keys) > n
	}
	if s.other == nil {
		s.other = make(map[string]struct{})
	}
	n := len(s.other)
	s.other[phone] = struct{}{}
	return len(s.other) > n
}

func (s *phoneSet) has(phone string) bool {
	if k, ok := phoneKey(phone); ok {
		_, found := s.keys[k]
		return found
	}
	_, found := s.other[phone]
	return found
}

// Statuses of a held recipient; heldOther is a status this version does not
// know: the recipient is held back but counted nowhere.
const (
	heldOther uint8 = iota
	heldSent
	heldInDoubt
	heldFailed
)

// heldRec is the little the plan keeps of a state record: a million of them
// must stay small.
type heldRec struct {
	hash    [sha256.Size]byte // the body hash, decoded
	rawHash int32             // index in heldSet.raw when the hash is not 64 hex digits, else -1
	more    int32             // index in heldSet.more for in-doubt and failed records, else -1
	status  uint8
}

type heldMore struct{ batch, reason string }

// heldSet is what the state records, by phone.
type heldSet struct {
	keys  map[uint64]int32 // index in recs
	other map[string]int32
	recs  []heldRec
	more  []heldMore
	raw   []string
}

func (h *heldSet) len() int { return len(h.recs) }

// find returns the index in h.recs of phone's record, or -1.
func (h *heldSet) find(phone string) int32 {
	if len(h.recs) == 0 {
		return -1
	}
	var i int32
	var found bool
	if k, ok := phoneKey(phone); ok {
		i, found = h.keys[k]
	} else {
		i, found = h.other[phone]
	}
	if !found {
		return -1
	}
	return i
}

func (h *heldSet) put(r state.Recipient) {
	rec := heldRec{rawHash: -1, more: -1}
	switch r.Status {
	case state.Sent:
		rec.status = heldSent
	case state.InDoubt:
		rec.status = heldInDoubt
	case state.Failed:
		rec.status = heldFailed
	}
	if rec.status == heldInDoubt || rec.status == heldFailed {
		rec.more = int32(len(h.more))
		h.more = append(h.more, heldMore{batch: r.BatchID, reason: r.Reason})
	}
	if !decodeHash(r.BodyHash, &rec.hash) {
		rec.rawHash = int32(len(h.raw))
		h.raw = append(h.raw, r.BodyHash)
	}
	i := int32(len(h.recs))
	if k, ok := phoneKey(r.Phone); ok {
		if h.keys == nil {
			h.keys = make(map[uint64]int32)
		}
		if j, dup := h.keys[k]; dup { // not from a real state, whose phones are unique
			h.recs[j] = rec
			return
		}
		h.keys[k] = i
	} else {
		if h.other == nil {
			h.other = make(map[string]int32)
		}
		if j, dup := h.other[r.Phone]; dup {
			h.recs[j] = rec
			return
		}
		h.other[r.Phone] = i
	}
	h.recs = append(h.recs, rec)
}

// decodeHash decodes a hash written as BodyHash writes it: 64 lower-case
// hex digits. Anything else is compared as written.
func decodeHash(s string, dst *[sha256.Size]byte) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := range dst {
		hi, ok1 := lowerHex(s[2*i])
		lo, ok2 := lowerHex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// each calls fn with every phone, in no particular order.
func (h *heldSet) each(fn func(phone string)) {
	for k := range h.keys {
		fn(keyPhone(k))
	}
	for phone := range h.other {
		fn(phone)
	}
}

func (b *builder) loadRecorded(ctx context.Context, rec Recorded) error {
	return rec.EachRecipient(ctx, func(r state.Recipient) error {
		b.held.put(r)
		return nil
	})
}

// bodyIndex finds the group of a body: an open-addressing table of group
// numbers, which for a million distinct bodies is a fraction of the size
// of a map keyed by the bodies.
type bodyIndex struct {
	seed  maphash.Seed
	slots []uint32 // group+1, 0 for empty; the length is a power of two
	n     int
}

// find returns the group of body among bodies, the groups' bodies.
func (x *bodyIndex) find(body string, bodies []string) (int, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := uint64(len(x.slots) - 1)
	for i := maphash.String(x.seed, body) & mask; ; i = (i + 1) & mask {
		g := x.slots[i]
		if g == 0 {
			return 0, false
		}
		if bodies[g-1] == body {
			return int(g - 1), true
		}
	}
}

// note records that bodies[gi], not found, is group gi's.
func (x *bodyIndex) note(gi int, bodies []string) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow(bodies)
	}
	x.insert(gi, bodies[gi])
	x.n++
}

func (x *bodyIndex) insert(gi int, body string) {
	mask := uint64(len(x.slots) - 1)
	i := maphash.String(x.seed, body) & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = uint32(gi + 1)
}

func (x *bodyIndex) grow(bodies []string) {
	if x.slots == nil {
		x.seed = maphash.MakeSeed()
		x.slots = make([]uint32, 1024)
		return
	}
	old := x.slots
	x.slots = make([]uint32, 2*len(old))
	for _, g := range old {
		if g != 0 {
			x.insert(int(g-1), bodies[g-1])
		}
	}
}

// item is one recipient on its way through scan.
type item struct {
	entry     campaign.Row
	num       e164.Number
	err       error // the number is invalid
	body      string
	renderErr error
}

// chunkSize is how many entries travel together through scan: enough that
// handing chunks between goroutines costs little.
const chunkSize = 2048

type chunk struct {
	items []item
	done  chan struct{}
}

// scan reads src, runs process on chunks of entries on all cores, and hands the
// results to deliver one at a time in file order, so that the plan is the
// same whatever the scheduling. Delivered chunks are cleared and reused.
func scan(ctx context.Context, src campaign.Source, process func([]item), deliver func(*item) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *chunk, workers*2)
	ordered := make(chan *chunk, workers*4)
	free := make(chan *chunk, workers*6+2)

	var readErr error
	go func() {
		defer close(ordered)
		defer close(jobs)
		newChunk := func() *chunk {
			select {
			case ch := <-free:
				return ch
			default:
				return &chunk{items: make([]item, 0, chunkSize), done: make(chan struct{})}
			}
		}
		cur := newChunk()
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
			cur = newChunk()
			return nil
		}
		readErr = src.ReadRows(ctx, func(e campaign.Row) error {
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
		wg.Go(func() {
			for ch := range jobs {
				process(ch.items)
				close(ch.done)
			}
		})
	}

	var err error
	for ch := range ordered {
		<-ch.done
		for i := 0; err == nil && i < len(ch.items); i++ {
			if err = deliver(&ch.items[i]); err != nil {
				cancel()
			}
		}
		clear(ch.items)
		ch.items, ch.done = ch.items[:0], make(chan struct{})
		select {
		case free <- ch:
		default:
		}
	}
	wg.Wait()
	if err != nil {
		return err
	}
	return readErr
}
