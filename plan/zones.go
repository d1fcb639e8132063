package plan

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
)

// This file splits the groups of a campaign with a send window by the time
// zones of their recipients, so that every recipient of a batch has the same
// zones: a batch is then either sendable at a moment or not, and apply never
// has to send part of one.

// splitByZone splits each body's group into one group per set of zones, in
// the order of each set's first recipient, and holds back the recipients
// whose zone is not known when the campaign names no fallback. It runs only
// for a campaign with a send window: a plain campaign never looks a zone up.
func (b *builder) splitByZone() error {
	sc, err := window.Compile(b.c.Window)
	if err != nil {
		return fmt.Errorf("send window: %w", err)
	}
	g := &b.groups
	zs, fallbacks := lookUpZones(sc, &g.phones)
	var (
		out     groups
		zones   []*window.Zones // of each new group
		unknown []string        // warnings, the first maxListed kept
		sets    []*window.Zones // of the group being split, by first appearance
		local   = map[*window.Zones]int{}
		of      []int32 // per member: its index in sets
	)
	for gi := range g.len() {
		start, end := g.members(gi)
		sets, of = sets[:0], of[:0]
		clear(local)
		for k := start; k < end; k++ {
			z := zs[k]
			if z == nil {
				b.p.Summary.NoTimezone++
				if len(unknown) < maxListed+1 {
					unknown = append(unknown, e164.Mask(g.phones.at(k).String()))
				}
				of = append(of, -1)
				continue
			}
			i, ok := local[z]
			if !ok {
				i = len(sets)
				local[z] = i
				sets = append(sets, z)
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
		for si := range sets {
			counts[si+1] += counts[si]
			out.bodies = append(out.bodies, g.bodies[gi])
			out.ends = append(out.ends, int32(first)+counts[si+1])
			zones = append(zones, sets[si])
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
	return nil
}

// lookUpZones finds the zones of each phone on every core, each goroutine
// with a Finder of its own (they share the schedule's Zones values), and
// counts the phones that got the fallback zone.
func lookUpZones(sc *window.Schedule, phones *column[e164.Packed]) ([]*window.Zones, int) {
	zs := make([]*window.Zones, phones.len())
	workers := runtime.GOMAXPROCS(0)
	fallbacks := make([]int, workers)
	onEveryCore(phones.len(), func(w, lo, hi int) {
		f := sc.Finder()
		for i := lo; i < hi; i++ {
			var fb bool
			if zs[i], fb = f.Zones(phones.at(i).String()); fb {
				fallbacks[w]++
			}
		}
	})
	n := 0
	for _, c := range fallbacks {
		n += c
	}
	return zs, n
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
