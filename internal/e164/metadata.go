package e164

import (
	"regexp"
	"strconv"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// This file holds phonenumbers' metadata in the form the fast paths of
// Normalize need: per calling code and region, with the library's regular
// expressions compiled once and anchored exactly as the library anchors them,
// so that every match gives the answer the library's own match would give.

// desc is a phonenumbers.PhoneNumberDesc ready for matching.
type desc struct {
	lengths []int32        // possible lengths; none means any
	re      *regexp.Regexp // "^(?:pattern)$"
}

// matches is phonenumbers' isNumberMatchingDesc: a possible length and the
// national number pattern.
func (d *desc) matches(nsn string) bool {
	if len(d.lengths) > 0 {
		found := false
		for _, l := range d.lengths {
			if int(l) == len(nsn) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return d.re.MatchString(nsn)
}

// region is the metadata of one region ("GB") or non-geographical entity
// ("001" with its calling code). The regular expressions are compiled on
// first use, so that a run only pays for the countries it meets.
type region struct {
	meta *phonenumbers.PhoneMetadata
	id   string
	cc   int

	once    sync.Once
	leading *regexp.Regexp // "^(?:leadingDigits)" or nil
	npp     *regexp.Regexp // "^(?:nationalPrefixForParsing)" or nil
	idd     *regexp.Regexp // internationalPrefix, unanchored as in the library
	general desc
	// premium rate, toll free, shared cost, VoIP, personal number, pager,
	// UAN, voicemail
	others          [8]desc
	fixed, mobile   desc
	sameMobileFixed bool
}

func (r *region) compiled() *region {
	r.once.Do(func() {
		m := r.meta
		if ld := m.GetLeadingDigits(); ld != "" {
			r.leading = regexp.MustCompile("^(?:" + ld + ")")
		}
		if npp := m.GetNationalPrefixForParsing(); npp != "" {
			r.npp = regexp.MustCompile("^(?:" + npp + ")")
		}
		// Unanchored, and empty when the region has none, as the library
		// uses it in maybeStripInternationalPrefixAndNormalize.
		r.idd = regexp.MustCompile(m.GetInternationalPrefix())
		r.general = newDesc(m.GetGeneralDesc())
		descs := [8]*phonenumbers.PhoneNumberDesc{
			m.GetPremiumRate(), m.GetTollFree(), m.GetSharedCost(), m.GetVoip(),
			m.GetPersonalNumber(), m.GetPager(), m.GetUan(), m.GetVoicemail(),
		}
		for i, d := range descs {
			r.others[i] = newDesc(d)
		}
		r.fixed = newDesc(m.GetFixedLine())
		r.mobile = newDesc(m.GetMobile())
		r.sameMobileFixed = m.GetSameMobileAndFixedLinePattern()
	})
	return r
}

func newDesc(d *phonenumbers.PhoneNumberDesc) desc {
	return desc{
		lengths: d.GetPossibleLength(),
		re:      regexp.MustCompile("^(?:" + d.GetNationalNumberPattern() + ")$"),
	}
}

// classify answers what Normalize asks of phonenumbers' getNumberTypeHelper:
// is the type other than UNKNOWN (valid), and is it FIXED_LINE. It tries the
// patterns in the order that settles the common case soonest (a mobile number
// after the general and mobile patterns) rather than the library's order
// (general, the others, fixed line, mobile), with the same answers.
func (r *region) classify(nsn string) (valid, fixedLineOnly bool) {
	if !r.general.matches(nsn) {
		return false, false
	}
	// The library returns MOBILE or FIXED_LINE_OR_MOBILE (if an earlier
	// type matches, that type): valid, and not FIXED_LINE either way.
	if !r.sameMobileFixed && r.mobile.matches(nsn) {
		return true, false
	}
	// From here, the mobile pattern fails or is the fixed-line one.
	other := false
	for i := range r.others {
		if r.others[i].matches(nsn) {
			other = true
			break
		}
	}
	if r.fixed.matches(nsn) {
		return true, !other && !r.sameMobileFixed
	}
	return other, false
}

// testLength is phonenumbers' testNumberLength for type UNKNOWN (the general
// description).
func (r *region) testLength(nsn string) phonenumbers.ValidationResult {
	g := r.meta.GetGeneralDesc()
	possible := g.GetPossibleLength()
	if len(possible) == 0 || possible[0] == -1 {
		return phonenumbers.INVALID_LENGTH
	}
	n := int32(len(nsn))
	for _, l := range g.GetPossibleLengthLocalOnly() {
		if l == n {
			return phonenumbers.IS_POSSIBLE_LOCAL_ONLY
		}
	}
	switch {
	case possible[0] == n:
		return phonenumbers.IS_POSSIBLE
	case possible[0] > n:
		return phonenumbers.TOO_SHORT
	case possible[len(possible)-1] < n:
		return phonenumbers.TOO_LONG
	}
	for _, l := range possible[1:] {
		if l == n {
			return phonenumbers.IS_POSSIBLE
		}
	}
	return phonenumbers.INVALID_LENGTH
}

// stripNationalPrefix is phonenumbers' maybeStripNationalPrefixAndCarrierCode
// without the carrier code, which Normalize does not keep.
func (r *region) stripNationalPrefix(number string) string {
	if len(number) == 0 || r.npp == nil {
		return number
	}
	groups := r.npp.FindStringSubmatchIndex(number)
	if groups == nil {
		return number
	}
	viableOriginal := r.general.re.MatchString(number)
	numGroups := len(groups)/2 - 1
	transform := r.meta.GetNationalPrefixTransformRule()
	if transform == "" || groups[numGroups*2] < 0 {
		if viableOriginal && !r.general.re.MatchString(number[groups[1]:]) {
			return number
		}
		return number[groups[1]:]
	}
	transformed := r.npp.ReplaceAllString(number, transform)
	if viableOriginal && !r.general.re.MatchString(transformed) {
		return number
	}
	return transformed
}

// callingCode is what the library knows of one country calling code.
type callingCode struct {
	cc    int
	ccStr string
	// regions in the library's order (GetRegionCodesForCountryCode), nil
	// where the library has no metadata.
	regions []*region
	// main is the metadata the library parses national numbers of this
	// calling code with: that of GetRegionCodeForCountryCode.
	main *region
}

// judge is phonenumbers' GetRegionCodeForNumber, then IsValidNumber and
// GetNumberType == FIXED_LINE with the rules of that region. region is the
// region the number belongs to when it is valid ("001" for a
// non-geographical entity such as +800).
func (c *callingCode) judge(nsn string) (region string, valid, fixedLineOnly bool) {
	if len(c.regions) == 1 {
		r := c.regions[0]
		if r == nil || (r.id != "001" && r.cc != c.cc) {
			return "", false, false
		}
		valid, fixed := r.compiled().classify(nsn)
		return r.id, valid, fixed
	}
	for _, r := range c.regions {
		if r == nil {
			continue
		}
		r.compiled()
		if r.leading != nil {
			if r.leading.MatchString(nsn) {
				// IsValidNumberForRegion also insists the region's
				// calling code is the number's.
				if r.cc != c.cc {
					return "", false, false
				}
				valid, fixed := r.classify(nsn)
				return r.id, valid, fixed
			}
		} else if valid, fixed := r.classify(nsn); valid {
			// The region was chosen because the number is valid there.
			return r.id, r.cc == c.cc, fixed && r.cc == c.cc
		}
	}
	return "", false, false
}

// metadataTables indexes phonenumbers' metadata.
type metadataTables struct {
	byCode   [1000]*callingCode
	byRegion map[string]*region
}

// tables is built on first use and never changed after: it is a read-only
// view of the library's own (global, read-only) metadata.
var tables = sync.OnceValue(func() *metadataTables {
	t := &metadataTables{byRegion: map[string]*region{}}
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		panic("e164: phonenumbers metadata: " + err.Error()) // cannot happen: the library panics at init first
	}
	nonGeo := map[int]*region{}
	supported := phonenumbers.GetSupportedRegions()
	for _, m := range coll.GetMetadata() {
		r := &region{meta: m, id: m.GetId(), cc: int(m.GetCountryCode())}
		if r.id == "001" {
			nonGeo[r.cc] = r
		} else if supported[r.id] {
			t.byRegion[r.id] = r
		}
	}
	for cc := range phonenumbers.GetSupportedCallingCodes() {
		if cc <= 0 || cc >= len(t.byCode) {
			continue
		}
		c := &callingCode{cc: cc, ccStr: strconv.Itoa(cc)}
		for _, id := range phonenumbers.GetRegionCodesForCountryCode(cc) {
			if id == "001" {
				c.regions = append(c.regions, nonGeo[cc])
			} else {
				c.regions = append(c.regions, t.byRegion[id])
			}
		}
		if main := phonenumbers.GetRegionCodeForCountryCode(cc); main == "001" {
			c.main = nonGeo[cc]
		} else {
			c.main = t.byRegion[main]
		}
		t.byCode[cc] = c
	}
	return t
})

// code returns what the library knows of calling code cc, or nil.
func (t *metadataTables) code(cc int) *callingCode {
	if cc <= 0 || cc >= len(t.byCode) {
		return nil
	}
	return t.byCode[cc]
}
