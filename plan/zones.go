package plan

import (
	"fmt"
	"runtime"
	"slices"
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
	zs, laws, fallbacks := lookUpZones(sc, &g.phones, b.comp, all)
	type set struct {
		z   *window.Zones
		law *compliance.Law
	}
	var (
		out     groups
		zones   []*window.Zones // of each new group
		hours   []string        // of each new group
		unknown []string        // warnings, the first maxListed kept
		sets    []set           // of the group being split, by first appearance
		local   = map[set]int{}
		of      []int32 // per member: its index in sets
		said    = map[*compliance.Law]string{}
	)
	for gi := range g.len() {
		start, end := g.members(gi)
		sets, of = sets[:0], slices.Grow(of[:0], end-start)
		clear(local)
		for k := start; k < end; k++ {
			s := set{z: zs[k]}
			if laws != nil {
				s.law = laws[k]
			}
			if s.z == nil && (all || s.law.HasHours()) {
				b.p.Summary.NoTimezone++
				if len(unknown) < maxListed+1 {
					unknown = append(unknown, e164.Mask(g.phones.at(k).String()))
				}
				of = append(of, -1)
				continue
			}
			i, ok := local[s]
			if !ok {
				i = len(sets)
				local[s] = i
				sets = append(sets, s)
			}
			of = append(of, int32(i))
		}
		// Members of each set side by side, in file order within the set:
		// a counting sort by set.
		first := out.phones.len()
		counts := make([]int32, len(sets)+1)
		for _, si := range of {
			if si >= 0 {
				counts[si+1]++
			}
		}
		for si, s := range sets {
			if s.law != nil {
				b.comp.laws[s.law] += int(counts[si+1])
			}
			counts[si+1] += counts[si]
			out.bodies = append(out.bodies, g.bodies[gi])
			out.ends = append(out.ends, int32(first)+counts[si+1])
			zones = append(zones, s.z)
			hours = append(hours, hoursWords(said, s.law))
		}
		for range counts[len(sets)] {
			out.phones.append(0)
		}
		for k, si := range of {
			if si >= 0 {
				*out.phones.ptr(first + int(counts[si])) = g.phones.at(start + k)
				counts[si]++
			}
		}
	}
	b.p.Summary.ToSend -= b.p.Summary.NoTimezone
	b.groups, b.groupZones = out, zones
	if laws != nil {
		b.groupHours = hours
	}
	b.warnZones(unknown, fallbacks)
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

// lookUpZones finds, on every core, what the rules ask of each phone (laws
// is nil without rules) and the zones of each phone that needs them: every
// phone when all, else those whose rules set hours. Each goroutine has a
// Finder of its own (they share the schedule's Zones values); it counts the
// phones that got the fallback zone.
func lookUpZones(sc *window.Schedule, phones *column[e164.Packed], k *checker, all bool) ([]*window.Zones, []*compliance.Law, int) {
	zs := make([]*window.Zones, phones.len())
	var laws []*compliance.Law
	if k != nil {
		laws = make([]*compliance.Law, phones.len())
	}
	workers := runtime.GOMAXPROCS(0)
	fallbacks := make([]int, workers)
	onEveryCore(phones.len(), func(w, lo, hi int) {
		f := sc.Finder()
		var buf [16]byte
		for i := lo; i < hi; i++ {
			phone := phones.at(i)
			need := all
			if laws != nil {
				laws[i] = k.rules.For(phone, k.kind)
				need = need || laws[i].HasHours()
			}
			if !need {
				continue
			}
			var fb bool
			if zs[i], fb = f.Zones(string(phone.Append(buf[:0]))); fb {
				fallbacks[w]++
			}
		}
	})
	n := 0
	for _, c := range fallbacks {
		n += c
	}
	return zs, laws, n
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
