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
// few dozen zone loads. A number of the +1 plan whose area code is not
// split by exchange costs an array read once its area code is known.
type Finder struct {
	s        *Schedule
	fallback *Zones
	key      []byte
	seen     map[string]*Zones // by the names joined with ","; nil for an unknown zone
	// byList finds the Zones of a list phonenumbers keeps for a prefix by
	// the list's first element: the library returns the slice it holds,
	// so the same prefix entry is the same pointer, found without joining
	// the names (half the time of a lookup). A fresh list (the library's
	// "unknown") is never added, so the map holds one entry per list the
	// library keeps, and the pointers it holds keep those lists alive.
	byList map[*string]*Zones
	// areas are the zones of the +1 area codes whose numbers all share
	// theirs (see areacodes.go), once one of their numbers was looked up:
	// most US and Canadian numbers are answered by an array read.
	areas [1000]*Zones
}

// Finder returns a new Finder for numbers of this schedule's campaign.
func (s *Schedule) Finder() *Finder {
	f := &Finder{s: s, seen: map[string]*Zones{}, byList: map[*string]*Zones{}}
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
	area, plus1 := areaOf(e164)
	whole := plus1 && wholeArea[area]
	if whole && f.areas[area] != nil {
		return f.areas[area], false
	}
	z, fallback = f.lookUp(e164)
	if whole && !fallback && z != nil {
		f.areas[area] = z
	}
	return z, fallback
}

// lookUp asks phonenumbers for the zones of e164.
func (f *Finder) lookUp(e164 string) (z *Zones, fallback bool) {
	names, err := phonenumbers.GetTimezonesForPrefix(e164)
	if err != nil || len(names) == 0 {
		return f.fallback, f.fallback != nil
	}
	// A list the library keeps belongs to one prefix entry, and so to one
	// calling code: what it was made into is the same for every number.
	if z, ok := f.byList[&names[0]]; ok {
		return z, false // never nil: only loaded lists are added
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
	f.byList[&names[0]] = z
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
