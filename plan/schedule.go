package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/smsform/smsform/internal/window"
)

// Schedule is when a plan's batches may go, as seen at one moment: those
// that may go now, and the others grouped by when they may.
type Schedule struct {
	At     time.Time
	Window window.Spec
	Groups []When  // now first, then by opening, then what will not be sent
	batch  []int32 // per batch of the plan: its group
	// capLast is, when the frequency cap holds recipients back until
	// after At, the latest moment one of them may go: the first moment
	// from Summary.HeldByCapUntil that a window is open, the latest over
	// the batches' windows (which batches they are in is not known).
	capLast time.Time
}

// eachTiming calls fn with what says when each batch may go: its zones,
// hours and recipients. A plan Compute made gives them from its groups,
// without making the batches (their bodies, numbers and ids are not
// needed: a plan of a million recipients would make a million strings);
// Recipients then has the right length, its numbers empty, and ID says the
// batch's place. Any other plan walks its batches.
func (p *Plan) eachTiming(fn func(i int, b Batch) error) error {
	t := p.cut
	if t == nil {
		return p.EachBatch(fn)
	}
	var phones []string
	i := 0
	for gi := range t.g.len() {
		start, end := t.g.members(gi)
		b := Batch{}
		if t.zones != nil {
			b.Zones = t.zones[gi].Names()
		}
		if t.hours != nil {
			b.Hours = t.hours[gi]
		}
		for k := start; k < end; k += t.size {
			n := min(t.size, end-k)
			if cap(phones) < n {
				phones = make([]string, n)
			}
			b.ID, b.Recipients = fmt.Sprintf("number %d", i+1), phones[:n]
			if err := fn(i, b); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

// BatchSchedule returns what decides when batch b may go: the plan's
// schedule sc, narrowed to the hours rules allow its recipients (b.Hours),
// and the recipients' zones. Its error names the batch: a saved plan whose
// batch says hours or zones smsform cannot read was damaged.
func BatchSchedule(sc *window.Schedule, b Batch) (*window.Schedule, *window.Zones, error) {
	if b.Hours != "" {
		w, err := window.ParseWeek(b.Hours)
		if err != nil {
			return nil, nil, fmt.Errorf("batch %s: hours: %w", b.ID, err)
		}
		sc = sc.Narrow(w)
	}
	if sc.HasWindow() && len(b.Zones) == 0 {
		return nil, nil, fmt.Errorf("batch %s has no time zones, and a send window or hours: plan again", b.ID)
	}
	z, err := sc.Zones(b.Zones)
	if err != nil {
		return nil, nil, fmt.Errorf("batch %s: %w", b.ID, err)
	}
	return sc, z, nil
}

// When is a group of batches that may go at the same moment.
type When struct {
	window.Opening
	// Zones are the zones whose window opens last, deciding Opening.At
	// (ReasonWindow only), sorted; Locals, in the same order, is Opening.At
	// on each one's clock ("08:00", "09:00"): batches of zones whose
	// offsets differ may open at the same instant, each at its own hour.
	// Opening.Zone and Opening.Local are those of one of them.
	Zones      []string
	Locals     []string
	Recipients int
	Batches    int
}

// Batch returns the group of the plan's batch i.
func (s *Schedule) Batch(i int) When { return s.Groups[s.batch[i]] }

// ScheduleAt works out p.Schedule as at the moment at; it leaves it nil for
// a campaign that may send at any time. It also says when the estimate's
// last batch goes. It fails only on a window a saved plan carries damaged.
func (p *Plan) ScheduleAt(at time.Time) error {
	p.Schedule = nil
	if err := p.schedule(at); err != nil {
		return err
	}
	p.Estimate.finish(at, p.Schedule, p.capLast(at))
	return nil
}

// capLast is when the last of the recipients the frequency cap holds back
// may go, as seen at at; zero when it holds nobody back after at.
func (p *Plan) capLast(at time.Time) time.Time {
	s := p.Summary
	switch {
	case s.HeldByCap == 0 || !s.HeldByCapUntil.After(at):
		return time.Time{}
	case p.Schedule != nil:
		return p.Schedule.capLast
	}
	return s.HeldByCapUntil
}

// schedule sets p.Schedule as at the moment at, for a campaign with
// windows.
func (p *Plan) schedule(at time.Time) error {
	if !p.Timed() {
		return nil
	}
	sc, err := window.Compile(p.Window)
	if err != nil {
		return fmt.Errorf("plan's send window: %w", err)
	}
	s := &Schedule{At: at, Window: p.Window, batch: make([]int32, p.NumBatches())}
	type key struct {
		reason window.Reason
		at     time.Time
	}
	index := map[key]int32{}
	openings := map[string]window.Opening{} // by the batch's zones and hours
	held := p.Summary.HeldByCapUntil
	if p.Summary.HeldByCap == 0 || !held.After(at) {
		held = time.Time{}
	}
	var zoneKey []byte
	err = p.eachTiming(func(i int, b Batch) error {
		zoneKey = append(zoneKey[:0], b.Hours...)
		for _, z := range b.Zones {
			zoneKey = append(append(zoneKey, ','), z...)
		}
		o, ok := openings[string(zoneKey)]
		if !ok {
			bs, z, err := BatchSchedule(sc, b)
			if err != nil {
				return err
			}
			o = bs.Next(z, at)
			openings[string(zoneKey)] = o
			if !held.IsZero() && o.Sendable() {
				// Where a held recipient may be, when it may go.
				switch h := bs.Next(z, held); h.Reason {
				case window.ReasonNow:
					s.capLast = later(s.capLast, held)
				case window.ReasonWindow, window.ReasonNotBefore:
					s.capLast = later(s.capLast, h.At)
				}
			}
		}
		k := key{o.Reason, o.At}
		g, ok := index[k]
		if !ok {
			g = int32(len(s.Groups))
			index[k] = g
			s.Groups = append(s.Groups, When{Opening: o})
		}
		w := &s.Groups[g]
		if o.Zone != "" && !slices.Contains(w.Zones, o.Zone) {
			w.Zones = append(w.Zones, o.Zone)
			w.Locals = append(w.Locals, o.Local)
		}
		w.Recipients += len(b.Recipients)
		w.Batches++
		s.batch[i] = g
		return nil
	})
	if err != nil {
		return err
	}
	s.sort()
	p.Schedule = s
	return nil
}

// sort orders the groups now first, then by opening, then what will not be
// sent, and renumbers the batches' groups to match.
func (s *Schedule) sort() {
	order := make([]int32, len(s.Groups))
	for i := range order {
		order[i] = int32(i)
	}
	rank := func(w When) int {
		switch w.Reason {
		case window.ReasonNow:
			return 0
		case window.ReasonEnded:
			return 2
		case window.ReasonNever:
			return 3
		}
		return 1
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		wa, wb := s.Groups[a], s.Groups[b]
		if r := rank(wa) - rank(wb); r != 0 {
			return r
		}
		return wa.At.Compare(wb.At)
	})
	sorted := make([]When, len(order))
	moved := make([]int32, len(order))
	for to, from := range order {
		sorted[to] = s.Groups[from]
		sorted[to].sortZones()
		moved[from] = int32(to)
	}
	for i, g := range s.batch {
		s.batch[i] = moved[g]
	}
	s.Groups = sorted
}

// sortZones sorts w's zones, keeping each one's local time beside it.
func (w *When) sortZones() {
	idx := make([]int, len(w.Zones))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(w.Zones[a], w.Zones[b]) })
	zones, locals := make([]string, len(idx)), make([]string, len(idx))
	for to, from := range idx {
		zones[to], locals[to] = w.Zones[from], w.Locals[from]
	}
	w.Zones, w.Locals = zones, locals
}

// SameLocal returns the local time at which the group opens when it is the
// same in each of its zones, "" when they differ.
func (w When) SameLocal() string {
	if len(w.Locals) == 0 {
		return w.Local
	}
	for _, l := range w.Locals[1:] {
		if l != w.Locals[0] {
			return ""
		}
	}
	return w.Locals[0]
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
