package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// When a plan's messages go, for the comment: on its first screen, the
// first and the last, with their zones; folded, a personalised plan's
// batches grouped by when they go.

// maxZonesNamed is how many zones a line names before "and N more".
const maxZonesNamed = 3

// zoneWords names zones: "Europe/Berlin, Europe/Paris and 2 more".
func zoneWords(zones []string) string {
	if len(zones) <= maxZonesNamed {
		return strings.Join(zones, ", ")
	}
	return strings.Join(zones[:maxZonesNamed], ", ") + fmt.Sprintf(" and %d more", len(zones)-maxZonesNamed)
}

// groupZones are the zones of the recipients of each of the schedule's
// groups, sorted, walked from the batches (a group's own Zones name only
// those whose window decides when it opens).
func groupZones(p *plan.Plan) ([][]string, error) {
	s := p.Schedule
	zones := make([][]string, len(s.Groups))
	err := p.EachBatch(func(i int, b plan.Batch) error {
		g := s.Batch(i)
		gi := slices.IndexFunc(s.Groups, func(w plan.When) bool { return w.Reason == g.Reason && w.At.Equal(g.At) })
		for _, z := range b.Zones {
			if !slices.Contains(zones[gi], z) {
				zones[gi] = append(zones[gi], z)
			}
		}
		return nil
	})
	for _, z := range zones {
		slices.Sort(z)
	}
	return zones, err
}

// writeWhen says when the messages go, unfolded: with send windows or
// bounds, the first and the last with their zones and each group; always,
// the estimate.
func writeWhen(h *strings.Builder, v shown, estimate string) error {
	p := v.p
	s := p.Schedule
	// The frequency cap's holds are not in the schedule: say them.
	except := ""
	if n := p.Summary.HeldByCap; n > 0 {
		except = fmt.Sprintf(", but for the %s the frequency cap holds back", words.N(n, "recipient", "recipients"))
	}
	if s == nil {
		if p.Summary.ToSend > 0 {
			fmt.Fprintf(h, "**When:** every message may go now%s.", except)
			if estimate != "" {
				fmt.Fprintf(h, " %s.", mdText(estimate))
			}
			h.WriteString("\n\n")
		}
		return nil
	}
	zones, err := groupZones(p)
	if err != nil {
		return err
	}
	var sendable []int
	for i, g := range s.Groups {
		if g.Sendable() {
			sendable = append(sendable, i)
		}
	}
	clause := func(i int) string {
		c := fromWords(s.Groups[i])
		if z := zones[i]; len(z) > 0 {
			c += " (" + zoneWords(z) + ")"
		}
		return mdText(c)
	}
	switch len(sendable) {
	case 0:
		h.WriteString("**When:** no message may go: see below.\n\n")
	case 1:
		fmt.Fprintf(h, "**When:** every message may %s%s.\n\n", clause(sendable[0]), except)
	default:
		fmt.Fprintf(h, "**When:** the first messages %s; the last %s%s.\n\n", clause(sendable[0]), clause(sendable[len(sendable)-1]), except)
	}
	fmt.Fprintf(h, "As at %s (%s):\n\n", s.At.UTC().Format("2006-01-02 15:04 UTC"), mdText(describeTimes(p)))
	for _, w := range s.Groups {
		fmt.Fprintf(h, "- %s: %s", words.N(w.Recipients, "recipient", "recipients"), mdText(label(s, w)))
		if w.Reason == window.ReasonWindow || w.Reason == window.ReasonNotBefore {
			fmt.Fprintf(h, " (%s)", short(w))
		}
		h.WriteString("\n")
	}
	if n := p.Summary.NoTimezone; n > 0 {
		fmt.Fprintf(h, "- %s: held back, no known time zone (set fallback\\_timezone)\n", words.N(n, "recipient", "recipients"))
	}
	h.WriteString("\n")
	if estimate != "" {
		fmt.Fprintf(h, "%s.\n\n", mdText(estimate))
	}
	return nil
}

// fromWords says when a group goes, as the start of a clause: "go now",
// "go from 2026-11-23 14:00 UTC", "never go (…)".
func fromWords(w plan.When) string {
	switch w.Reason {
	case window.ReasonNow:
		return "go now"
	case window.ReasonWindow, window.ReasonNotBefore:
		return "go from " + short(w)
	}
	return "never go: " + short(w)
}

// personalMin is how many batches a plan must have before the comment
// groups them rather than listing them, when each has a body of its own.
const personalMin = 20

// groupBatches is the folded batch list of a plan whose batches each carry
// a body of their own (a personalised campaign: thousands of batches of
// one recipient, which a list would cut from the middle): a table of them
// grouped by when they go and their zones, with counts. ok is false when
// the batches are better listed.
func (v shown) groupBatches() (text string, ok bool, err error) {
	p := v.p
	nb := p.NumBatches()
	if nb < personalMin {
		return "", false, nil
	}
	type row struct {
		when, zones                   string
		batches, recipients, segments int
	}
	var rows []*row
	index := map[string]*row{}
	shared, prev := 0, ""
	err = p.EachBatch(func(i int, b plan.Batch) error {
		if i > 0 && b.Body == prev {
			shared++
		}
		prev = b.Body
		when := "now"
		if p.Schedule != nil {
			when = short(p.Schedule.Batch(i))
		}
		zones := zoneWords(b.Zones)
		key := when + "\x00" + zones
		r, ok := index[key]
		if !ok {
			r = &row{when: when, zones: zones}
			index[key] = r
			rows = append(rows, r)
		}
		r.batches++
		r.recipients += len(b.Recipients)
		r.segments += b.TotalSegments()
		return nil
	})
	// Batches of one body each: no two in a row share theirs (a body is
	// split only by zones or by the batch size).
	if err != nil || shared*10 > nb {
		return "", false, err
	}
	var t strings.Builder
	fmt.Fprintf(&t, "%s\n\n", mdSummary(words.N(nb, "batch", "batches")+" to send, each with a message of its own: by when they go"))
	t.WriteString("| When | Zones | Batches | Recipients | Segments |\n|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		zones := mdText(r.zones)
		if zones == "" {
			zones = "any"
		}
		fmt.Fprintf(&t, "| %s | %s | %s | %s | %s |\n", r.when, zones, words.Count(r.batches), words.Count(r.recipients), words.Count(r.segments))
	}
	t.WriteString("\nEach message is shown whole by `smsform show PLANFILE --recipient NUMBER`; `smsform show PLANFILE` lists every batch.\n\n</details>\n\n")
	return t.String(), true, nil
}
