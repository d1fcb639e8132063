package window

import (
	"strconv"

	"github.com/nyaruka/phonenumbers"
)

// Finder gives the time zones of phone numbers. It is not safe for
// concurrent use: each goroutine takes its own from [Schedule.Finder].
//
// phonenumbers finds a number's zones by its longest known prefix, without
// allocating; the Finder turns the list it returns into a [Zones] once per
// distinct list, so a million numbers cost a million prefix lookups and a
// few dozen zone loads.
type Finder struct {
	s        *Schedule
	fallback *Zones
	key      []byte
	seen     map[string]*Zones // by the names joined with ","; nil for an unknown zone
}

// Finder returns a new Finder for numbers of this schedule's campaign.
func (s *Schedule) Finder() *Finder {
	f := &Finder{s: s, seen: map[string]*Zones{}}
	if s.spec.Fallback != "" {
		// Compile checked the name.
		f.fallback, _ = s.Zones([]string{s.spec.Fallback})
	}
	return f
}

// Zones returns the zones of e164, a number in E.164 form. A number whose
// zone is not known gets the fallback zone (fallback is then true), or nil
// when the campaign names none.
func (f *Finder) Zones(e164 string) (z *Zones, fallback bool) {
	names, err := phonenumbers.GetTimezonesForPrefix(e164)
	if err != nil || len(names) == 0 {
		return f.fallback, f.fallback != nil
	}
	// The zones are named after the country of the calling code (see
	// principalZones): it is part of the key.
	code, country := callingCountry(e164)
	f.key = strconv.AppendInt(f.key[:0], int64(code), 10)
	for _, n := range names {
		f.key = append(f.key, ',')
		f.key = append(f.key, n...)
	}
	z, ok := f.seen[string(f.key)] // no allocation for the lookup
	if !ok {
		z = f.load(country, names)
		f.seen[string(f.key)] = z
	}
	if z == nil {
		return f.fallback, f.fallback != nil
	}
	return z, false
}

// load makes the Zones of a list phonenumbers gave for a number of
// country, named as people know them ([Schedule.principalZones]), or nil
// when the list says the zone is not known or names a zone Go's database
// lacks.
func (f *Finder) load(country string, names []string) *Zones {
	for _, n := range names {
		if n == phonenumbers.UNKNOWN_TIMEZONE {
			return nil
		}
	}
	z, err := f.s.Zones(f.s.principalZones(country, names))
	if err != nil {
		return nil
	}
	return z
}
