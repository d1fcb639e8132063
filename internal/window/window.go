// Package window decides when a campaign may send to a recipient: a send
// window (days of the week and a daily span, in the recipient's local time)
// and the campaign's not_before / not_after bounds.
//
// A [Spec] is the schedule as the campaign file writes it; it is also what
// a saved plan carries, so that apply checks the windows at send time.
// [Compile] turns it into a [Schedule], which answers for a set of time
// zones ([Zones]) whether sending is allowed at an instant ([Schedule.Open])
// and when it next will be ([Schedule.Next]). A recipient whose number spans
// several zones may be sent only when the window is open in every one of
// them. [Finder] gives a number's zones from its prefix.
//
// A [Week] is open hours that differ by day, such as a law's ("mon-sat
// 09:00-21:00, sun 12:00-21:00"); [Schedule.Narrow] meets a campaign's
// schedule with one, per recipient, and answers the same questions.
//
// Go's time zone database is embedded (time/tzdata), so that the answers do
// not depend on the machine's copy.
package window

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // the answers must not depend on the machine's zoneinfo
)

// Spec is a campaign's schedule as written. The zero Spec allows anything
// at any time.
type Spec struct {
	// Days lists the days of the week the window is open ("mon" … "sun"),
	// in week order; empty with From set means every day.
	Days []string `json:"days,omitempty"`
	// From and To bound the window in local time, "HH:MM"; To may be
	// "24:00". From is before To: windows do not cross midnight. Both are
	// empty when the campaign has no send window.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Fallback is the IANA zone of numbers whose zone is not known; empty
	// holds such numbers back.
	Fallback  string    `json:"fallback_timezone,omitempty"`
	NotBefore time.Time `json:"not_before,omitzero"`
	NotAfter  time.Time `json:"not_after,omitzero"`
}

// HasWindow reports whether the spec has a send window, and so needs each
// recipient's time zones.
func (s Spec) HasWindow() bool { return s.From != "" }

// Active reports whether the spec restricts sending at all.
func (s Spec) Active() bool {
	return s.HasWindow() || !s.NotBefore.IsZero() || !s.NotAfter.IsZero()
}

// DayNames returns the day names a spec uses, in week order from Monday.
func DayNames() [7]string { return [7]string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} }

// ParseDay returns the time.Weekday of a day name of DayNames.
func ParseDay(s string) (time.Weekday, bool) {
	names := DayNames()
	i := slices.Index(names[:], s)
	if i < 0 {
		return 0, false
	}
	return time.Weekday((i + 1) % 7), true
}

// ParseClock reads "HH:MM" (24-hour, two digits each) into minutes after
// midnight; "24:00" is accepted when end is true (the end of the day).
func ParseClock(s string, end bool) (int, error) {
	if len(s) != 5 || s[2] != ':' {
		return 0, errors.New("not a time of day written HH:MM")
	}
	h, err1 := strconv.Atoi(s[:2])
	m, err2 := strconv.Atoi(s[3:])
	switch {
	case err1 != nil || err2 != nil || s[0] == '+' || s[0] == '-' || s[3] == '+' || s[3] == '-':
		return 0, errors.New("not a time of day written HH:MM")
	case end && h == 24 && m == 0:
		return 24 * 60, nil
	case h > 23 || m > 59:
		return 0, errors.New("not a time of day: hours go from 00 to 23, minutes from 00 to 59")
	}
	return h*60 + m, nil
}

// LoadZone loads an IANA zone by name from the embedded database. "Local"
// and "" are refused: they would depend on the machine.
func LoadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("%q is not an IANA time zone name", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%q is not a known IANA time zone", name)
	}
	return loc, nil
}

// Schedule is a compiled Spec. It is safe for concurrent use.
type Schedule struct {
	spec      Spec
	day       Week // the open hours of each day, in local time
	window    bool
	notBefore time.Time
	notAfter  time.Time

	cache *cache // shared with the schedules Narrow makes of it
}

// cache is what a schedule and those Narrow makes of it load once.
type cache struct {
	mu     sync.Mutex
	zones  map[string]*Zones // by the names joined with ","
	locs   map[string]*time.Location
	clocks map[string]bool    // by "a,b": whether zones a and b keep the same clock (see sameClock)
	narrow map[Week]*Schedule // by the hours they are open
}

// Compile checks s and prepares it for answering. Its errors name the key
// that is wrong; campaign files are checked with file and line before.
func Compile(s Spec) (*Schedule, error) {
	sc := &Schedule{spec: s, notBefore: s.NotBefore, notAfter: s.NotAfter,
		cache: &cache{zones: map[string]*Zones{}, locs: map[string]*time.Location{}, clocks: map[string]bool{}, narrow: map[Week]*Schedule{}}}
	if !s.NotBefore.IsZero() && !s.NotAfter.IsZero() && !s.NotBefore.Before(s.NotAfter) {
		return nil, errors.New("not_before must be before not_after")
	}
	if !s.HasWindow() {
		if len(s.Days) > 0 || s.To != "" || s.Fallback != "" {
			return nil, errors.New("send_window: days, to and fallback_timezone need from")
		}
		return sc, nil
	}
	sc.window = true
	from, err := ParseClock(s.From, false)
	if err != nil {
		return nil, fmt.Errorf("send_window.from: %w", err)
	}
	to, err := ParseClock(s.To, true)
	if err != nil {
		return nil, fmt.Errorf("send_window.to: %w", err)
	}
	if from >= to {
		return nil, errors.New("send_window: from must be before to (windows do not cross midnight)")
	}
	for _, d := range s.Days {
		if _, ok := ParseDay(d); !ok {
			return nil, fmt.Errorf("send_window.days: unknown day %q", d)
		}
	}
	sc.day = s.Week()
	if s.Fallback != "" {
		if _, err := LoadZone(s.Fallback); err != nil {
			return nil, fmt.Errorf("fallback_timezone: %w", err)
		}
	}
	return sc, nil
}

// Spec returns the spec the schedule was compiled from.
func (s *Schedule) Spec() Spec { return s.spec }

// HasWindow reports whether the schedule has a send window.
func (s *Schedule) HasWindow() bool { return s.window }

// Narrow returns the schedule open only when both s and the hours w are:
// a campaign's send window met with what a law allows its recipient. The
// result has a window even when s has none (w is then the window), keeps
// s's not_before and not_after, and takes the [Zones] of s. The same w
// gives the same *Schedule.
func (s *Schedule) Narrow(w Week) *Schedule {
	day := s.Week().Intersect(w)
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.narrow[day]; ok {
		return n
	}
	n := &Schedule{spec: s.spec, day: day, window: true, notBefore: s.notBefore, notAfter: s.notAfter, cache: c}
	c.narrow[day] = n
	return n
}

// Week returns the hours the schedule is open in each local day: every hour
// of every day for a schedule without a window.
func (s *Schedule) Week() Week {
	if !s.window {
		return AllDay()
	}
	return s.day
}

// Zones is a set of time zones one recipient may be in, as an IANA name
// each, sorted. The zero Zones (no names) is what a campaign without a send
// window gives every recipient.
type Zones struct {
	names []string
	locs  []*time.Location
}

// Names returns the zones' names; do not change the slice.
func (z *Zones) Names() []string {
	if z == nil {
		return nil
	}
	return z.names
}

// Zones returns the set of zones named, loaded once per schedule. Names
// that are not known zones are an error (a damaged saved plan).
func (s *Schedule) Zones(names []string) (*Zones, error) {
	if len(names) == 0 {
		return &Zones{}, nil
	}
	key := strings.Join(names, ",")
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if z, ok := c.zones[key]; ok {
		return z, nil
	}
	z := &Zones{names: slices.Clone(names), locs: make([]*time.Location, len(names))}
	slices.Sort(z.names)
	for i, n := range z.names {
		loc, ok := c.locs[n]
		if !ok {
			var err error
			if loc, err = LoadZone(n); err != nil {
				return nil, err
			}
			c.locs[n] = loc
		}
		z.locs[i] = loc
	}
	c.zones[key] = z
	return z, nil
}

// Open reports whether a recipient in zones may be sent to at t: inside the
// campaign's bounds, and, with a send window, inside it in every zone.
func (s *Schedule) Open(z *Zones, t time.Time) bool {
	if !s.notBefore.IsZero() && t.Before(s.notBefore) || !s.notAfter.IsZero() && !t.Before(s.notAfter) {
		return false
	}
	if !s.window {
		return true
	}
	if len(z.locs) == 0 {
		return false // a window and no zone: never (Finder holds such numbers back)
	}
	for _, loc := range z.locs {
		if !s.openIn(loc, t) {
			return false
		}
	}
	return true
}

// openIn reports whether the window is open at t in loc: t's local day is
// one of the days and its local clock reads from or later, and before to.
func (s *Schedule) openIn(loc *time.Location, t time.Time) bool {
	l := t.In(loc)
	sp := s.day[l.Weekday()]
	m := int16(l.Hour()*60 + l.Minute())
	return sp.From <= m && m < sp.To
}

// Reason says what decides when a closed recipient may be sent.
type Reason string

const (
	ReasonNow       Reason = "now"        // open now
	ReasonWindow    Reason = "window"     // the send window opens at Opening.At
	ReasonNotBefore Reason = "not_before" // the campaign starts at Opening.At
	ReasonEnded     Reason = "ended"      // not_after has passed, or passes before the window opens
	ReasonNever     Reason = "never"      // the window is not open in every zone at once within Horizon
)

// Horizon is how far ahead Next looks for an instant when the window is
// open in every zone of a set: a week and a day covers every weekday.
const Horizon = 8 * 24 * time.Hour

// Opening is when a recipient may next be sent.
type Opening struct {
	Reason Reason
	At     time.Time // when it opens; zero for ReasonNow, ReasonEnded, ReasonNever
	// Zone is the zone whose window opens last, deciding At (ReasonWindow);
	// Local is At on its clock, "09:00".
	Zone  string
	Local string
}

// Sendable reports whether the opening is, or will be, reached.
func (o Opening) Sendable() bool { return o.Reason != ReasonEnded && o.Reason != ReasonNever }

// Next is when a recipient in zones may next be sent, as seen at t.
func (s *Schedule) Next(z *Zones, t time.Time) Opening {
	switch {
	case s.Open(z, t):
		return Opening{Reason: ReasonNow}
	case !s.notAfter.IsZero() && !t.Before(s.notAfter):
		return Opening{Reason: ReasonEnded}
	}
	start, reason := t, ReasonWindow
	if !s.notBefore.IsZero() && t.Before(s.notBefore) {
		start, reason = s.notBefore, ReasonNotBefore
		if s.Open(z, start) {
			return Opening{Reason: reason, At: start}
		}
	}
	if !s.window || len(z.locs) == 0 {
		return Opening{Reason: ReasonNever}
	}
	at, zone, ok := s.nextAll(z, start)
	switch {
	case !ok:
		return Opening{Reason: ReasonNever}
	case !s.notAfter.IsZero() && !at.Before(s.notAfter):
		return Opening{Reason: ReasonEnded}
	}
	return Opening{Reason: ReasonWindow, At: at, Zone: zone.String(), Local: at.In(zone).Format("15:04")}
}

// nextAll is the first instant from t at which the window is open in every
// zone, and the zone that opened last; false when there is none within
// Horizon. Any such instant comes no earlier than the latest of each zone's
// own next opening, so the search jumps there and checks again; each step
// moves strictly forward, since a zone closed at the candidate opens later.
func (s *Schedule) nextAll(z *Zones, t time.Time) (time.Time, *time.Location, bool) {
	limit := t.Add(Horizon)
	cur, decider := t, z.locs[0]
	for !cur.After(limit) {
		latest, last := cur, (*time.Location)(nil)
		for _, loc := range z.locs {
			n, ok := s.nextIn(loc, cur)
			if !ok {
				return time.Time{}, nil, false
			}
			if n.After(latest) {
				latest, last = n, loc
			}
		}
		if last == nil {
			return cur, decider, true
		}
		cur, decider = latest, last
	}
	return time.Time{}, nil, false
}

// nextIn is the first instant from t at which the window is open in loc.
// Within one period of a zone's offset (between two transitions) the local
// clock runs evenly, so the next local opening is found by walking days; at
// a transition (daylight saving) the walk starts again from it, which also
// finds a window that opens inside a skipped hour: it is open from the
// first instant whose clock reads past from.
func (s *Schedule) nextIn(loc *time.Location, t time.Time) (time.Time, bool) {
	limit := t.Add(Horizon + 48*time.Hour)
	cur := t
	for !cur.After(limit) {
		if s.openIn(loc, cur) {
			return cur, true
		}
		l := cur.In(loc)
		_, periodEnd := l.ZoneBounds()
		// The next local opening on this offset: from on the first open
		// day whose from is after now.
		y, mo, d := l.Date()
		mins := l.Hour()*60 + l.Minute()
		var cand time.Time
		found := false
		for k := 0; k <= 7; k++ {
			sp := s.day[(int(l.Weekday())+k)%7]
			if sp.Closed() || k == 0 && mins >= int(sp.From) {
				continue
			}
			// Naive local arithmetic on this period's offset.
			_, off := l.Zone()
			naive := time.Date(y, mo, d+k, int(sp.From)/60, int(sp.From)%60, 0, 0, time.UTC)
			cand = naive.Add(-time.Duration(off) * time.Second)
			found = true
			break
		}
		if found && (periodEnd.IsZero() || cand.Before(periodEnd)) {
			return cand, true
		}
		if periodEnd.IsZero() || !periodEnd.After(cur) {
			return time.Time{}, false
		}
		cur = periodEnd
	}
	return time.Time{}, false
}
