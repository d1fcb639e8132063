package campaign

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/smsform/smsform/internal/window"
)

// This file reads when a campaign may send: send_window, fallback_timezone,
// not_before and not_after (see internal/window for what they mean).

// rawWindow is the schedule keys as written; the spec is filled as each key
// is read and checked.
type rawWindow struct {
	spec       window.Spec
	present    bool // send_window: is written
	hasFrom    bool
	hasTo      bool
	line       int  // of send_window:
	bad        bool // send_window is not a mapping
	fromLine   int
	toLine     int
	fallbackAt int // line of fallback_timezone:, 0 when absent
}

var windowKeys = []string{"days", "from", "to"}

const (
	dayHint    = "write days as mon, tue, wed, thu, fri, sat or sun, e.g. days: [mon, tue, wed, thu, fri]"
	clockHint  = `write a 24-hour local time in quotes, e.g. from: "09:00", to: "20:00" (to may be "24:00")`
	instHint   = "write an RFC 3339 time with its offset, e.g. 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z"
	crossHint  = `windows that cross midnight are not allowed (a send window is the recipients' daytime): use from before to, e.g. from: "09:00", to: "20:00"`
	zoneHint   = "use an IANA time zone name such as Europe/Paris or America/New_York"
	orphanHint = `add send_window: {days: [mon, tue, wed, thu, fri], from: "09:00", to: "20:00"}, or remove fallback_timezone`
)

// sendWindow reads send_window: {days, from, to}.
func (l *loader) sendWindow(v *yaml.Node, path string, w *rawWindow) {
	w.present, w.line = true, l.lines[path]
	w.bad = v.Kind != yaml.MappingNode // mapping says so; from and to are then not missing
	l.mapping(v, path, windowKeys, func(key, path string, v *yaml.Node) bool {
		switch key {
		case "days":
			w.spec.Days = l.days(v, path)
		case "from":
			w.hasFrom, w.fromLine = true, v.Line
			l.clock(v, path, false, &w.spec.From)
		case "to":
			w.hasTo, w.toLine = true, v.Line
			l.clock(v, path, true, &w.spec.To)
		}
		return true
	})
}

// days reads a list of day names, returning them in week order.
func (l *loader) days(v *yaml.Node, path string) []string {
	if v.Kind != yaml.SequenceNode {
		l.add(v.Line, path, dayHint, "must be a list of days, not %s", kindWords(v))
		return nil
	}
	if len(v.Content) == 0 {
		l.add(v.Line, path, dayHint+"; leave days out for every day", "list is empty")
		return nil
	}
	seen := map[string]int{}
	for i, item := range v.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		var s string
		if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" {
			l.add(item.Line, p, dayHint, "must be a day name, not %s", kindWords(item))
			continue
		}
		s = item.Value
		if _, ok := window.ParseDay(s); !ok {
			hint := dayHint
			if low := strings.ToLower(s); len(low) >= 3 {
				if _, ok := window.ParseDay(low[:3]); ok && strings.HasPrefix(fullDay(low[:3]), low) {
					hint = fmt.Sprintf("write %s", low[:3])
				}
			}
			l.add(item.Line, p, hint, "unknown day %s", Quote(s))
			continue
		}
		if line, dup := seen[s]; dup {
			l.add(item.Line, p, "remove one of them", "day %s is repeated (first on line %d)", s, line)
			continue
		}
		seen[s] = item.Line
	}
	var out []string
	for _, d := range window.DayNames() {
		if _, ok := seen[d]; ok {
			out = append(out, d)
		}
	}
	return out
}

func fullDay(short string) string {
	names := window.DayNames()
	i := slices.Index(names[:], short)
	return strings.ToLower(time.Weekday((i + 1) % 7).String())
}

// clock reads a local time of day, "HH:MM".
func (l *loader) clock(v *yaml.Node, path string, end bool, dst *string) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		l.add(v.Line, path, clockHint, "must be a time of day in quotes, not %s", kindWords(v))
		return
	}
	if _, err := window.ParseClock(v.Value, end); err != nil {
		hint := clockHint
		if !end && v.Value == "24:00" {
			hint = `a window starts at "00:00" at the earliest`
		}
		l.add(v.Line, path, hint, "%s is %s", Quote(v.Value), err)
		return
	}
	*dst = v.Value
}

// zone reads fallback_timezone: an IANA zone name.
func (l *loader) zone(v *yaml.Node, path string, w *rawWindow) {
	w.fallbackAt = l.lines[path]
	var s string
	if !l.str(v, path, &s) {
		return
	}
	if _, err := window.LoadZone(s); err != nil {
		l.add(v.Line, path, zoneHint, "%s", err)
		return
	}
	w.spec.Fallback = s
}

// instant reads not_before or not_after: an RFC 3339 time, which YAML may
// have taken for a timestamp.
func (l *loader) instant(v *yaml.Node, path string, dst *time.Time) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" && v.ShortTag() != "!!timestamp" {
		l.add(v.Line, path, instHint, "must be a time, not %s", kindWords(v))
		return
	}
	t, err := time.Parse(time.RFC3339, v.Value)
	if err != nil {
		l.add(v.Line, path, instHint, "%s is not an RFC 3339 time with a date, a time of day and an offset", Quote(v.Value))
		return
	}
	*dst = t
}

// checkWindow checks what ties the schedule keys together.
func (l *loader) checkWindow(w *rawWindow) {
	s := &w.spec
	switch {
	case w.present && !w.bad && !w.hasFrom:
		l.add(w.line, "send_window.from", clockHint, "required key is missing")
	case w.present && !w.bad && !w.hasTo:
		l.add(w.line, "send_window.to", clockHint, "required key is missing")
	case s.From != "" && s.To != "":
		from, _ := window.ParseClock(s.From, false)
		to, _ := window.ParseClock(s.To, true)
		if from >= to {
			l.add(w.toLine, "send_window.to", crossHint, "%s is not after from (%s)", s.To, s.From)
		}
	}
	if w.fallbackAt > 0 && !w.present {
		l.add(w.fallbackAt, "fallback_timezone", orphanHint, "a fallback time zone needs a send_window")
	}
	if !s.NotBefore.IsZero() && !s.NotAfter.IsZero() && !s.NotBefore.Before(s.NotAfter) {
		l.add(l.lines["not_after"], "not_after", "not_after ends the campaign: make it later than not_before",
			"%s is not after not_before (%s)", s.NotAfter.Format(time.RFC3339), s.NotBefore.Format(time.RFC3339))
	}
}
