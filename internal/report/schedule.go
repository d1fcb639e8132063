package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// label words a group as seen at the schedule's moment: "now", "window
// opens 09:00 America/New_York, in 3 h 10 min". Zones of different offsets
// may open at the same instant, each at its own hour: each local time
// comes before the zones it is the time of, earliest first ("08:00
// America/Chicago, 09:00 America/Detroit, America/New_York").
func label(s *plan.Schedule, w plan.When) string {
	if w.Reason != window.ReasonWindow {
		return w.Describe(s.At)
	}
	idx := make([]int, len(w.Zones))
	for i := range idx {
		idx[i] = i
	}
	local := func(i int) string {
		if i < len(w.Locals) {
			return w.Locals[i]
		}
		return w.Local
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(local(a), local(b)) })
	n := min(len(idx), maxZonesNamed)
	named := make([]string, n)
	for k, i := range idx[:n] {
		named[k] = w.Zones[i]
		if k == 0 || local(i) != local(idx[k-1]) {
			named[k] = local(i) + " " + named[k]
		}
	}
	more := ""
	if len(idx) > n {
		more = fmt.Sprintf(" and %d more %s", len(idx)-n, words.Plural(len(idx)-n, "zone", "zones"))
	}
	return fmt.Sprintf("window opens %s%s, in %s", strings.Join(named, ", "), more, words.Wait(w.At.Sub(s.At)))
}

// short words when a batch may go in a few characters, for a table column:
// "now", "2026-11-23 14:00 UTC", "never".
func short(w plan.When) string {
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

// describeTimes words what decides when p's batches go: its window, and
// the hours of its rule sets.
func describeTimes(p *plan.Plan) string {
	d := describeWindow(p.Window)
	if p.HasLawHours() {
		law := fmt.Sprintf("the hours of rule sets %s in each recipient's local time", strings.Join(p.Compliance.HoursSets(), ", "))
		if d == "" {
			return law
		}
		return d + "; within " + law
	}
	return d
}

// writeScheduleText writes the groups of p.Schedule, one paragraph each,
// as plan's table shows them, wrapped at width.
func writeScheduleText(b *strings.Builder, p *plan.Plan, width int) {
	s := p.Schedule
	if s == nil {
		return
	}
	para := func(s, indent string) { b.WriteString(wrapProse(s, width, indent) + "\n") }
	para(fmt.Sprintf("When, as at %s (%s):", s.At.UTC().Format("2006-01-02 15:04 UTC"), describeTimes(p)), "  ")
	for _, w := range s.Groups {
		line := fmt.Sprintf("  %s %s: %s", words.Count(w.Recipients), words.Plural(w.Recipients, "recipient", "recipients"), label(s, w))
		if w.Reason == window.ReasonWindow || w.Reason == window.ReasonNotBefore {
			line += fmt.Sprintf(" (%s)", short(w))
		}
		para(line, "    ")
	}
	if n := p.Summary.NoTimezone; n > 0 {
		para(fmt.Sprintf("  %s %s: held back, no known time zone (set fallback_timezone)", words.Count(n), words.Plural(n, "recipient", "recipients")), "    ")
	}
	b.WriteString("\n")
}

// withWhen adds to a markdown batch when it may go.
func withWhen(bl mdBlock, p *plan.Plan, i int) mdBlock {
	if p.Schedule != nil {
		bl.text = strings.Replace(bl.text, "`: ", "` ("+short(p.Schedule.Batch(i))+"): ", 1)
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
	LocalTime  string    `json:"local_time,omitempty"`  // when the same in every zone
	LocalTimes []string  `json:"local_times,omitempty"` // each zone's, in the order of Zones
	Label      string    `json:"label"`
	Recipients int       `json:"recipients"`
	Batches    int       `json:"batches"`
}

func scheduleJSON(s *plan.Schedule) *jsonSchedule {
	if s == nil {
		return nil
	}
	out := &jsonSchedule{At: s.At.UTC(), Window: s.Window, Groups: []jsonWhen{}}
	for _, w := range s.Groups {
		j := jsonWhen{When: whenJSON(w), Reason: string(w.Reason), Zones: w.Zones, LocalTime: w.SameLocal(), LocalTimes: w.Locals,
			Label: label(s, w), Recipients: w.Recipients, Batches: w.Batches}
		if !w.At.IsZero() {
			j.At = w.At.UTC()
			j.InNS = int64(w.At.Sub(s.At))
		}
		out.Groups = append(out.Groups, j)
	}
	return out
}

// whenJSON is short for programs: "now", an RFC 3339 time, "ended" or "never".
func whenJSON(w plan.When) string {
	if w.Reason == window.ReasonWindow || w.Reason == window.ReasonNotBefore {
		return w.At.UTC().Format(time.RFC3339)
	}
	return short(w)
}

// shorter is short in fewer characters still, for a narrow table whose
// header says the zone: "now", "11-23 14:00", "never".
func shorter(w plan.When) string {
	switch w.Reason {
	case window.ReasonWindow, window.ReasonNotBefore:
		return w.At.UTC().Format("01-02 15:04")
	}
	return short(w)
}

// Sendable counts the recipients of p a run sends, as p.Schedule sees it:
// those whose window is open now and, when the run waits for the windows
// (apply --wait), those whose window opens before the campaign ends. It
// also counts those whose window is closed now (waiting), and says when
// the first of them opens. A plan with no schedule sends everything now.
func Sendable(p *plan.Plan, wait bool) (run, waiting int, next string) {
	s := p.Schedule
	if s == nil {
		return p.Summary.ToSend, 0, ""
	}
	for _, g := range s.Groups {
		switch g.Reason {
		case window.ReasonNow:
			run += g.Recipients
		case window.ReasonWindow, window.ReasonNotBefore:
			waiting += g.Recipients
			if next == "" {
				next = short(g)
			}
			if wait {
				run += g.Recipients
			}
		}
	}
	return run, waiting, next
}
