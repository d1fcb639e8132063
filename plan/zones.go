package plan

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/smsform/smsform/compliance"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
)

// This file splits the groups of a campaign with a send window by the time
// zones of their recipients, so that every recipient of a batch has the same
// zones: a batch is then either sendable at a moment or not, and apply never
// has to send part of one.

// splitByZone splits each body's group into one group per set of zones and
// hours of rules, in the order of each set's first recipient, and holds back
// the recipients whose zone is needed and not known when the campaign names
// no fallback. A recipient needs its zones when the campaign has a send
// window or a rule sets its hours (see checker); a plain campaign never
// looks a zone up.
func (b *builder) splitByZone() error {
	sc, err := window.Compile(b.c.Window)
	if err != nil {
		return fmt.Errorf("send window: %w", err)
	}
	g := &b.groups
	all := b.c.Window.HasWindow()
	lk := lookUpZones(sc, &g.phones, b.comp, all)
	var (
		out     groups
		zones   []*window.Zones // of each new group
		hours   []string        // of each new group
		unknown []string        // warnings, the first maxListed kept
		sets    []zoneKey       // of the group being split, by first appearance
		next    []int32         // per set: its members' count, then where its next member goes in out
		said    = map[*compliance.Law]string{}
		// slot is, by a key, its index in sets while stamp is the group's
		// number + 1: an array read per member, no hashing.
		slot = lk.slots()
	)
	held := func(key zoneKey) bool { return key.z == nil && (all || key.law.HasHours()) }
	for gi := range g.len() {
		start, end := g.members(gi)
		sets, next = sets[:0], next[:0]
		for k := start; k < end; k++ {
			st, key := lk.at(slot, k)
			if held(key) {
				b.p.Summary.NoTimezone++
				if len(unknown) < maxListed+1 {
					unknown = append(unknown, e164.Mask(g.phones.at(k).String()))
				}
				continue
			}
			if st.stamp != int32(gi)+1 {
				st.stamp, st.set = int32(gi)+1, int32(len(sets))
				sets, next = append(sets, key), append(next, 0)
			}
			next[st.set]++
		}
		// Members of each set side by side, in file order within the set:
		// a counting sort by set, the members read again.
		pos := int32(out.phones.len())
		for si, s := range sets {
			if s.law != nil {
				b.comp.laws[s.law] += int(next[si])
			}
			pos, next[si] = pos+next[si], pos
			out.bodies = append(out.bodies, g.bodies[gi])
			out.ends = append(out.ends, pos)
			zones = append(zones, s.z)
			hours = append(hours, hoursWords(said, s.law))
		}
		out.phones.extend(int(pos) - out.phones.len())
		for k := start; k < end; k++ {
			if st, key := lk.at(slot, k); !held(key) {
				*out.phones.ptr(int(next[st.set])) = g.phones.at(k)
				next[st.set]++
			}
		}
	}
	b.p.Summary.ToSend -= b.p.Summary.NoTimezone
	b.groups, b.groupZones = out, zones
	if b.comp != nil {
		b.groupHours = hours
	}
	b.warnZones(unknown, lk.fallbacks)
	return nil
}

// hoursWords is the Batch.Hours of recipients under law, written once per
// law.
func hoursWords(seen map[*compliance.Law]string, law *compliance.Law) string {
	if !law.HasHours() {
		return ""
	}
	w, ok := seen[law]
	if !ok {
		w = law.Hours.String()
		seen[law] = w
	}
	return w
}

// warnZones warns of the recipients held back for want of a zone, and of
// those sent in the fallback zone's window.
func (b *builder) warnZones(unknown []string, fallbacks int) {
	if n := b.p.Summary.NoTimezone; n > 0 {
		for i, m := range unknown {
			if i == maxListed {
				b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("... and %s more without a known time zone", words.Count(n-maxListed)))
				break
			}
			b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("%s has no known time zone: held back (set fallback_timezone to send it in that zone's window)", m))
		}
	}
	if fallbacks > 0 {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("%s no known time zone: their window is taken in fallback_timezone %s",
			words.N(fallbacks, "recipient has", "recipients have"), b.c.Window.Fallback))
	}
}

// zoneKey is what decides when a recipient may go: its zones (nil when it
// needs none, or its zone is not known) and what the rules ask of it.
type zoneKey struct {
	z   *window.Zones
	law *compliance.Law
}

// lookedUp is what lookUpZones found: a key id per phone (the worker that
// found it in the top bits, its number among that worker's keys below),
// each worker's keys, and how many phones got the fallback zone. Two
// workers number the same key apart: global holds each distinct key once,
// and global id of a worker's key n is its tr[w][n].
type lookedUp struct {
	ids       []uint32
	keys      [][]zoneKey
	global    []zoneKey
	tr        [][]int32
	fallbacks int
}

const keyBits = 24 // a worker's keys: far more than zones times laws

// keySlot is where a key stands in the group being split (see splitByZone).
type keySlot struct{ stamp, set int32 }

// merge numbers the workers' keys as one.
func (lk *lookedUp) merge() {
	seen := map[zoneKey]int32{}
	lk.tr = make([][]int32, len(lk.keys))
	for w, ks := range lk.keys {
		lk.tr[w] = make([]int32, len(ks))
		for n, key := range ks {
			g, ok := seen[key]
			if !ok {
				g = int32(len(lk.global))
				seen[key] = g
				lk.global = append(lk.global, key)
			}
			lk.tr[w][n] = g
		}
	}
}

// slots returns a slot for every distinct key.
func (lk *lookedUp) slots() []keySlot { return make([]keySlot, len(lk.global)) }

// at returns the slot and the key of phone k.
func (lk *lookedUp) at(slots []keySlot, k int) (*keySlot, zoneKey) {
	id := lk.ids[k]
	g := lk.tr[id>>keyBits][id&(1<<keyBits-1)]
	return &slots[g], lk.global[g]
}

// lookUpZones finds, on every core, what the rules ask of each phone (k is
// nil without rules) and the zones of each phone that needs them: every
// phone when all, else those whose rules set hours. Each goroutine has a
// Finder of its own (they share the schedule's Zones values) and numbers
// the distinct keys it meets, so that splitByZone reads arrays, not maps.
func lookUpZones(sc *window.Schedule, phones *column[e164.Packed], k *checker, all bool) *lookedUp {
	workers := runtime.GOMAXPROCS(0)
	lk := &lookedUp{ids: make([]uint32, phones.len()), keys: make([][]zoneKey, workers)}
	fallbacks := make([]int, workers)
	onEveryCore(workers, phones.len(), func(w, lo, hi int) {
		f := sc.Finder()
		ids := map[zoneKey]uint32{}
		var buf [16]byte
		for i := lo; i < hi; i++ {
			var key zoneKey
			phone := phones.at(i)
			if k != nil {
				key.law = k.rules.For(phone, k.kind)
			}
			if all || key.law.HasHours() {
				var fb bool
				if key.z, fb = f.Zones(string(phone.Append(buf[:0]))); fb {
					fallbacks[w]++
				}
			}
			id, ok := ids[key]
			if !ok {
				id = uint32(w)<<keyBits | uint32(len(lk.keys[w]))
				ids[key] = id
				lk.keys[w] = append(lk.keys[w], key)
			}
			lk.ids[i] = id
		}
	})
	for _, c := range fallbacks {
		lk.fallbacks += c
	}
	lk.merge()
	return lk
}

// onEveryCore splits [0, n) into one range per worker and runs fn on
// each, w being the range's number, less than workers (GOMAXPROCS, read
// once by the caller, which sizes what each worker writes to from it).
func onEveryCore(workers, n int, fn func(w, lo, hi int)) {
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := min(w*per, n), min((w+1)*per, n)
		wg.Go(func() { fn(w, lo, hi) })
	}
	wg.Wait()
}
