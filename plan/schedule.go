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
}

// When is a group of batches that may go at the same moment.
type When struct {
	window.Opening
	// Zones are the zones whose window opens last, deciding Opening.At
	// (ReasonWindow only).
	Zones      []string
	Recipients int
	Batches    int
}

// Batch returns the group of the plan's batch i.
func (s *Schedule) Batch(i int) When { return s.Groups[s.batch[i]] }

// ScheduleAt works out p.Schedule as at the moment at; it leaves it nil for
// a campaign that may send at any time. It fails only on a window a saved
// plan carries damaged.
func (p *Plan) ScheduleAt(at time.Time) error {
	p.Schedule = nil
	if !p.Window.Active() {
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
	openings := map[string]window.Opening{} // by the batch's zones
	var zoneKey []byte
	err = p.EachBatch(func(i int, b Batch) error {
		zoneKey = zoneKey[:0]
		for _, z := range b.Zones {
			zoneKey = append(append(zoneKey, z...), ',')
		}
		o, ok := openings[string(zoneKey)]
		if !ok {
			z, err := sc.Zones(b.Zones)
			if err != nil {
				return fmt.Errorf("batch %s: %w", b.ID, err)
			}
			o = sc.Next(z, at)
			openings[string(zoneKey)] = o
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
		}
		w.Recipients += len(b.Recipients)
		w.Batches++
		s.batch[i] = g
		return nil
	})
	if err != nil {
		return err
	}
	// Now first, then by opening, then what will not be sent.
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
		slices.Sort(sorted[to].Zones)
		moved[from] = int32(to)
	}
	for i, g := range s.batch {
		s.batch[i] = moved[g]
	}
	s.Groups = sorted
	p.Schedule = s
	return nil
}

// label words a group as seen at the schedule's moment: "now", "window
// opens 09:00 America/New_York, in 3 h 10 min".
func (s *Schedule) label(w When) string {
	if w.Reason != window.ReasonWindow {
		return w.Describe(s.At)
	}
	zones := w.Zones
	more := ""
	if len(zones) > 3 {
		more = fmt.Sprintf(" and %d more zones", len(zones)-3)
		zones = zones[:3]
	}
	return fmt.Sprintf("window opens %s %s%s, in %s", w.Local, strings.Join(zones, ", "), more, window.Wait(w.At.Sub(s.At)))
}

// short words when a batch may go in a few characters, for a table column:
// "now", "2026-11-23 14:00 UTC", "never".
func (w When) short() string {
	switch w.Reason {
	case window.ReasonNow:
		return "now"
	case window.ReasonWindow, window.ReasonNotBefore:
		return w.At.UTC().Format("2006-01-02 15:04 UTC")
	case window.ReasonEnded:
		return "ended"
	}
	return "never"
}

// describeWindow words the campaign's window for a person: "09:00-20:00 mon-fri,
// recipients' local time; not after 2026-12-24T18:00:00Z".
func describeWindow(w window.Spec) string {
	var parts []string
	if w.HasWindow() {
		days := "every day"
		if len(w.Days) > 0 && len(w.Days) < 7 {
			days = strings.Join(w.Days, ", ")
		}
		parts = append(parts, fmt.Sprintf("send window %s-%s %s in each recipient's local time", w.From, w.To, days))
		if w.Fallback != "" {
			parts = append(parts, "unknown zones in "+w.Fallback)
		}
	}
	if !w.NotBefore.IsZero() {
		parts = append(parts, "not before "+w.NotBefore.UTC().Format(time.RFC3339))
	}
	if !w.NotAfter.IsZero() {
		parts = append(parts, "not after "+w.NotAfter.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, "; ")
}

// writeScheduleText writes the groups of p.Schedule, one line each, as
// plan's table shows them.
func writeScheduleText(b *strings.Builder, p *Plan, bullet string) {
	s := p.Schedule
	if s == nil {
		return
	}
	fmt.Fprintf(b, "When, as at %s (%s):\n", s.At.UTC().Format("2006-01-02 15:04 UTC"), describeWindow(s.Window))
	if bullet == "- " {
		b.WriteString("\n")
	}
	for _, w := range s.Groups {
		fmt.Fprintf(b, "%s%s %s: %s", bullet, count(w.Recipients), plural(w.Recipients, "recipient", "recipients"), s.label(w))
		if w.Reason == window.ReasonWindow || w.Reason == window.ReasonNotBefore {
			fmt.Fprintf(b, " (%s)", w.short())
		}
		b.WriteString("\n")
	}
	if n := p.Summary.NoTimezone; n > 0 {
		fmt.Fprintf(b, "%s%s %s: held back, no known time zone (set fallback_timezone)\n", bullet, count(n), plural(n, "recipient", "recipients"))
	}
	b.WriteString("\n")
}

// withWhen adds to a markdown batch when it may go.
func withWhen(bl mdBlock, p *Plan, i int) mdBlock {
	if p.Schedule != nil {
		bl.text = strings.Replace(bl.text, "`: ", "` ("+p.Schedule.Batch(i).short()+"): ", 1)
	}
	return bl
}

// jsonSchedule is the schedule in plan's JSON.
type jsonSchedule struct {
	At     time.Time   `json:"at"`
	Window window.Spec `json:"window"`
	Groups []jsonWhen  `json:"groups"`
}

type jsonWhen struct {
	When       string    `json:"when"` // now, an RFC 3339 time, ended or never
	Reason     string    `json:"reason"`
	At         time.Time `json:"at,omitzero"`
	InNS       int64     `json:"in_ns,omitempty"`
	Zones      []string  `json:"zones,omitempty"`
	LocalTime  string    `json:"local_time,omitempty"`
	Label      string    `json:"label"`
	Recipients int       `json:"recipients"`
	Batches    int       `json:"batches"`
}

func scheduleJSON(s *Schedule) *jsonSchedule {
	if s == nil {
		return nil
	}
	out := &jsonSchedule{At: s.At.UTC(), Window: s.Window, Groups: []jsonWhen{}}
	for _, w := range s.Groups {
		j := jsonWhen{When: w.jsonWhen(), Reason: string(w.Reason), Zones: w.Zones, LocalTime: w.Local,
			Label: s.label(w), Recipients: w.Recipients, Batches: w.Batches}
		if !w.At.IsZero() {
			j.At = w.At.UTC()
			j.InNS = int64(w.At.Sub(s.At))
		}
		out.Groups = append(out.Groups, j)
	}
	return out
}

// jsonWhen is When.short for programs: "now", an RFC 3339 time, "ended" or "never".
func (w When) jsonWhen() string {
	if w.Reason == window.ReasonWindow || w.Reason == window.ReasonNotBefore {
		return w.At.UTC().Format(time.RFC3339)
	}
	return w.short()
}
