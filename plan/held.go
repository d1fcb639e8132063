package plan

import (
	"context"
	"crypto/sha256"
	"runtime"
	"sync"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/state"
)

// heldRec is the little the plan keeps of a state record: a million of them
// must stay small.
type heldRec struct {
	key    e164.Packed // the phone packed; 0 when it does not pack (see heldSet.other)
	sum    int32       // index in heldSet.sums of the body hash, or -1 when it is in heldSet.raw
	raw    int32       // index in heldSet.raw of a body hash that is not 64 hex digits, else -1
	more   int32       // index in heldSet.more for in-doubt and failed records, else -1
	status state.Status
}

type heldMore struct{ batch, reason string }

// heldSet is what the state records, in the order it gave it.
type heldSet struct {
	recs  []heldRec
	other map[int32]string // phones of the records that do not pack, by index in recs
	sums  [][sha256.Size]byte
	raw   []string
	more  []heldMore

	// The records of one attempt share its body hash: it is decoded once.
	lastHash     string
	lastSum      int32
	lastRaw      int32
	haveLastHash bool
}

func (h *heldSet) len() int { return len(h.recs) }

func (h *heldSet) put(r state.Recipient) {
	rec := heldRec{more: -1, status: r.Status}
	if rec.status == state.InDoubt || rec.status == state.Failed {
		rec.more = int32(len(h.more))
		h.more = append(h.more, heldMore{batch: r.BatchID, reason: r.Reason})
	}
	if !h.haveLastHash || r.BodyHash != h.lastHash {
		h.lastHash, h.lastSum, h.lastRaw, h.haveLastHash = r.BodyHash, -1, -1, true
		var sum [sha256.Size]byte
		if decodeHash(r.BodyHash, &sum) {
			h.lastSum = int32(len(h.sums))
			h.sums = append(h.sums, sum)
		} else {
			h.lastRaw = int32(len(h.raw))
			h.raw = append(h.raw, r.BodyHash)
		}
	}
	rec.sum, rec.raw = h.lastSum, h.lastRaw
	if k, ok := e164.Pack(r.Phone); ok {
		rec.key = k
	} else {
		if h.other == nil {
			h.other = make(map[int32]string)
		}
		h.other[int32(len(h.recs))] = r.Phone
	}
	h.recs = append(h.recs, rec)
}

// phone is the phone of record i.
func (h *heldSet) phone(i int) string {
	if k := h.recs[i].key; k != 0 {
		return k.String()
	}
	return h.other[int32(i)]
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

func (b *builder) loadRecorded(ctx context.Context, rec Recorded) error {
	return rec.EachRecipient(ctx, func(r state.Recipient) error {
		b.held.put(r)
		return nil
	})
}

// matchHeld finds which recipients the state holds (b.heldAt), lists the
// numbers it holds that the campaign no longer has (excluded ones are still
// the campaign's) and counts those recorded as sent with a body other than
// the one they would get now. The campaign's numbers are not needed after
// it.
func (b *builder) matchHeld() {
	defer func() { b.numbers = nil }()
	recs := b.held.recs
	if len(recs) == 0 {
		return
	}
	// Each record's value in b.numbers, looked up on every core.
	const absent = excludedOnly // not a recipient: to the plan, the same
	at := make([]int32, len(recs))
	onEveryCore(len(recs), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			var v int32
			var ok bool
			if k := recs[i].key; k != 0 {
				v, ok = b.numbers.GetPacked(k)
			} else {
				v, ok = b.numbers.Get(b.held.other[int32(i)])
			}
			if !ok {
				v = absent
			}
			at[i] = v
		}
	})
	// In the state's order, so that of two records of a number (which a
	// real state never gives) the later one counts.
	b.heldAt = make([]int32, len(b.phones))
	for i := range b.heldAt {
		b.heldAt[i] = -1
	}
	for i, v := range at {
		switch {
		case v >= 0:
			b.heldAt[v] = int32(i)
		case v == absent:
			b.p.Removed = append(b.p.Removed, b.held.phone(i))
		}
	}
	b.p.BodyChanged = b.countBodyChanged()
}

// countBodyChanged counts, on every core, the recipients recorded as sent
// with a body other than the one they would get now, and tallies what was
// sent for its cost (b.spent). The state keeps the hash of a body, not the
// body: one sent another body is tallied as today's (b.estimate counts them).
func (b *builder) countBodyChanged() int {
	workers := runtime.GOMAXPROCS(0)
	counts := make([]int, workers)
	spent := make([]tally, workers)
	onEveryCore(len(b.phones), func(w, lo, hi int) {
		var last string
		var lastSum [sha256.Size]byte
		haveLast := false
		spent[w] = tally{}
		for i := lo; i < hi; i++ {
			at := b.heldAt[i]
			if at < 0 || b.held.recs[at].status != state.Sent {
				continue
			}
			spent[w][b.meta[i].key()]++
			r := &b.held.recs[at]
			body := b.sharedText
			if !b.shared {
				body = b.bodies[i]
			}
			if r.raw >= 0 {
				if b.held.raw[r.raw] != state.BodyHash(body) {
					counts[w]++
				}
				continue
			}
			// Neighbours often share a body (a shared one always).
			if !haveLast || body != last {
				last, lastSum, haveLast = body, sha256.Sum256([]byte(body)), true
			}
			if lastSum != b.held.sums[r.sum] {
				counts[w]++
			}
		}
	})
	total := 0
	b.spent = tally{}
	for w, c := range counts {
		total += c
		b.spent.add(spent[w])
	}
	b.estimate = total
	return total
}

// onEveryCore splits [0, n) into one range per core and runs fn on each,
// w being the range's number, less than GOMAXPROCS.
func onEveryCore(n int, fn func(w, lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := min(w*per, n), min((w+1)*per, n)
		wg.Go(func() { fn(w, lo, hi) })
	}
	wg.Wait()
}

// hold accounts for a recipient the state already records: whatever the
// campaign says now, it is not planned again. (Sent recipients whose body
// changed are counted by matchHeld.)
func (b *builder) hold(phone string, r *heldRec) {
	s := &b.p.Summary
	switch r.status {
	case state.Sent:
		s.AlreadySent++
	case state.InDoubt:
		s.InDoubt++
		b.p.InDoubt = append(b.p.InDoubt, Held{Phone: phone, BatchID: b.held.more[r.more].batch})
	case state.Failed:
		s.Failed++
		m := b.held.more[r.more]
		b.p.Failed = append(b.p.Failed, Held{Phone: phone, BatchID: m.batch, Reason: m.reason})
	}
}
