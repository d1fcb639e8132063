package window

import (
	"slices"
	"strconv"
	"time"

	"github.com/nyaruka/phonenumbers"
)

// The zones a number is in are named as a reviewer knows them. The phone
// number data names some zones by the time zone database's old names
// (Asia/Calcutta), and lists for some prefixes every zone the prefix is
// used in (+44 7400: Europe/Guernsey, Europe/Isle_of_Man, Europe/London).
// Two rules, both from the time zone database's own tables (zonedata.go):
//
//   - an old name is written as the name it became (Asia/Calcutta is
//     Asia/Kolkata), unless zone.tab still lists it for a country of its
//     own (Europe/Bratislava stays);
//   - among a number's candidates, the zones that zone.tab lists for the
//     country of its calling code (GB for +44, IN for +91) are its
//     principal ones, and a candidate that keeps the same clock as one of
//     them is dropped as the same place: +44 7400 is in Europe/London.
//
// A candidate whose clock differs is never dropped (+61 8 keeps Perth and
// Christmas Island apart): which zones a window must be open in does not
// change, only how the same ones are named.

// currentName is the name zone.tab or the database's links give the zone
// called name today.
func currentName(name string) string {
	if to, ok := renamed[name]; ok {
		return to
	}
	return name
}

// callingCountry is the main country of the calling code e164 starts with
// ("GB" for +44…, "US" for +1…), "" when there is none.
func callingCountry(e164 string) (code int, country string) {
	for n := 2; n <= 4 && n <= len(e164); n++ {
		c, err := strconv.Atoi(e164[1:n])
		if err != nil {
			return 0, ""
		}
		if r := phonenumbers.GetRegionCodeForCountryCode(c); r != "" && r != phonenumbers.UNKNOWN_REGION {
			return c, r
		}
	}
	return 0, ""
}

// principalZones names the candidate zones of a number of country as
// [currentName] does, and drops each one that keeps the same clock as one
// of the country's own zones among them. The result is sorted, without
// repeats.
func (s *Schedule) principalZones(country string, candidates []string) []string {
	names := make([]string, 0, len(candidates))
	for _, c := range candidates {
		if n := currentName(c); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	own := countryZones[country]
	var principal []string
	for _, n := range names {
		if slices.Contains(own, n) {
			principal = append(principal, n)
		}
	}
	if len(principal) == 0 || len(principal) == len(names) {
		slices.Sort(names)
		return names
	}
	kept := principal
	for _, n := range names {
		if slices.Contains(principal, n) || slices.ContainsFunc(principal, func(p string) bool { return s.sameClock(n, p) }) {
			continue
		}
		kept = append(kept, n)
	}
	slices.Sort(kept)
	return kept
}

// clockSpan is the years two zones must agree on to be the same place for
// a send window: every year a campaign may be planned in.
var clockSpan = [2]time.Time{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2050, 1, 1, 0, 0, 0, 0, time.UTC)}

// sameClock reports whether zones a and b show the same time at every
// instant of clockSpan: the same offsets, changing at the same instants.
// A zone that does not load is the same as nothing. Answers are kept by
// the schedule: a plan asks about the same few pairs again and again.
func (s *Schedule) sameClock(a, b string) bool {
	key := a + "," + b
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	same, ok := s.cache.clocks[key]
	if !ok {
		same = compareClocks(a, b)
		s.cache.clocks[key] = same
	}
	return same
}

func compareClocks(a, b string) bool {
	la, errA := LoadZone(a)
	lb, errB := LoadZone(b)
	if errA != nil || errB != nil {
		return false
	}
	for t := clockSpan[0]; t.Before(clockSpan[1]); {
		_, offA := t.In(la).Zone()
		_, offB := t.In(lb).Zone()
		if offA != offB {
			return false
		}
		_, endA := t.In(la).ZoneBounds()
		_, endB := t.In(lb).ZoneBounds()
		if endA.IsZero() && endB.IsZero() {
			return true // neither changes again
		}
		// The next instant either clock may change. ZoneBounds can name
		// an end that is not after t where a zone's rule for future years
		// takes over from its table (seen at the end of 2040): a day on.
		var next time.Time
		for _, end := range []time.Time{endA, endB} {
			if end.After(t) && (next.IsZero() || end.Before(next)) {
				next = end
			}
		}
		if next.IsZero() {
			next = t.Add(24 * time.Hour)
		}
		t = next
	}
	return true
}
