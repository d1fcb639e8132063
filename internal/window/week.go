package window

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// This file holds hours that differ by day of the week: what a law allows
// (Texas: 9:00 to 21:00 from Monday to Saturday, from noon on Sunday), to be
// met together with a campaign's own send window.

// Span is a part of a local day in minutes after midnight, From before To
// (To at most 24:00). The zero Span is a day without any open time.
type Span struct{ From, To int16 }

// Closed reports whether the span holds no open time.
func (s Span) Closed() bool { return s.From >= s.To }

// Week is an open span for each day of the week, indexed by time.Weekday.
type Week [7]Span

// AllDay is a week open at every hour of every day: what a campaign without
// a send window allows.
func AllDay() Week {
	var w Week
	for d := range w {
		w[d] = Span{0, 24 * 60}
	}
	return w
}

// Week returns the spec's send window as a Week; a spec without one is
// open all day, every day. The spec must have compiled.
func (s Spec) Week() Week {
	if !s.HasWindow() {
		return AllDay()
	}
	from, _ := ParseClock(s.From, false)
	to, _ := ParseClock(s.To, true)
	var w Week
	days, all := s.Days, DayNames()
	if len(days) == 0 {
		days = all[:]
	}
	for _, d := range days {
		if wd, ok := ParseDay(d); ok {
			w[wd] = Span{int16(from), int16(to)}
		}
	}
	return w
}

// Intersect returns the hours open in both w and o.
func (w Week) Intersect(o Week) Week {
	var out Week
	for d := range w {
		s := Span{max(w[d].From, o[d].From), min(w[d].To, o[d].To)}
		if !s.Closed() {
			out[d] = s
		}
	}
	return out
}

// Narrower reports whether o takes away any open time of w.
func (w Week) Narrower(o Week) bool { return w.Intersect(o) != w }

// Closed reports whether the week has no open time at all.
func (w Week) Closed() bool { return w == Week{} }

// String writes the week the way ParseWeek reads it, days in week order from
// Monday, runs of days with the same hours joined: "mon-sat 09:00-21:00,
// sun 12:00-21:00"; "closed" for a week without open time.
func (w Week) String() string {
	var b strings.Builder
	names := DayNames()
	for i := 0; i < 7; {
		s := w[dayAt(i)]
		j := i + 1
		for j < 7 && w[dayAt(j)] == s {
			j++
		}
		if !s.Closed() {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(names[i])
			if j-1 > i {
				b.WriteString("-" + names[j-1])
			}
			fmt.Fprintf(&b, " %s-%s", clockWords(int(s.From)), clockWords(int(s.To)))
		}
		i = j
	}
	if b.Len() == 0 {
		return "closed"
	}
	return b.String()
}

// dayAt is the weekday of position i of DayNames (Monday first).
func dayAt(i int) time.Weekday { return time.Weekday((i + 1) % 7) }

func clockWords(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// ParseWeek reads hours written as String writes them: items separated by
// commas, each a day or a range of days in week order from Monday ("mon",
// "mon-fri") and a span "HH:MM-HH:MM" (the end may be 24:00). Days not
// named are closed; a day named twice is an error. "closed" is a week
// without open time.
func ParseWeek(s string) (Week, error) {
	var w Week
	if strings.TrimSpace(s) == "closed" {
		return w, nil
	}
	seen := [7]bool{}
	for item := range strings.SplitSeq(s, ",") {
		days, span, ok := strings.Cut(strings.TrimSpace(item), " ")
		if !ok {
			return Week{}, fmt.Errorf("%q: write days and hours, e.g. \"mon-fri 09:00-20:00\"", strings.TrimSpace(item))
		}
		lo, hi, err := dayRange(days)
		if err != nil {
			return Week{}, err
		}
		sp, err := parseSpan(strings.TrimSpace(span))
		if err != nil {
			return Week{}, fmt.Errorf("%q: %w", strings.TrimSpace(item), err)
		}
		for i := lo; i <= hi; i++ {
			if seen[i] {
				return Week{}, fmt.Errorf("%s is named twice", DayNames()[i])
			}
			seen[i] = true
			w[dayAt(i)] = sp
		}
	}
	return w, nil
}

// dayRange reads "mon" or "mon-fri" as positions in DayNames.
func dayRange(s string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if !isRange {
		b = a
	}
	names := DayNames()
	lo, hi = -1, -1
	for i, n := range names {
		if n == a {
			lo = i
		}
		if n == b {
			hi = i
		}
	}
	switch {
	case lo < 0 || hi < 0:
		return 0, 0, fmt.Errorf("%q is not a day or a range of days (mon … sun, e.g. mon-fri)", s)
	case hi < lo:
		return 0, 0, fmt.Errorf("%q: a range of days runs forward from Monday to Sunday", s)
	}
	return lo, hi, nil
}

func parseSpan(s string) (Span, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return Span{}, errors.New(`write the hours as "HH:MM-HH:MM"`)
	}
	from, err := ParseClock(a, false)
	if err != nil {
		return Span{}, err
	}
	to, err := ParseClock(b, true)
	if err != nil {
		return Span{}, err
	}
	if from >= to {
		return Span{}, errors.New("the hours must start before they end (spans do not cross midnight)")
	}
	return Span{int16(from), int16(to)}, nil
}
