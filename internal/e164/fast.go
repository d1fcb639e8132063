package e164

import (
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// This file parses the common shapes of input without phonenumbers.Parse,
// whose general string handling (extension, RFC 3966 and alpha-number
// detection, all by regular expression) costs most of its time. Each step
// below mirrors a step of the library's parseHelper for those shapes; any
// input that would take a branch not mirrored here goes to the library.
// TestDifferential holds the two to the same verdicts.

const (
	minNSN   = 2   // phonenumbers.MIN_LENGTH_FOR_NSN
	maxNSN   = 17  // phonenumbers.MAX_LENGTH_FOR_NSN
	maxInput = 250 // phonenumbers.MAX_INPUT_STRING_LENGTH
	// minFastDigits keeps the fast paths away from inputs too short for
	// the library's isViablePhoneNumber, which such inputs fail.
	minFastDigits = 4
)

// simpleDigits reports whether raw is ASCII digits with an optional leading
// "+" and the ASCII separators people write ([IsSeparator]), and
// returns its digits. For such input the library's extraction, viability
// check and normalisation come down to keeping the digits: none of these
// characters starts an extension, an RFC 3966 parameter or an alpha number.
// buf is scratch space for the digits.
func simpleDigits(raw string, buf *[maxInput]byte) (digits []byte, plus, ok bool) {
	if len(raw) > maxInput || raw == "" {
		return nil, false, false
	}
	i := 0
	if raw[0] == '+' {
		plus = true
		i = 1
	}
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		switch {
		case '0' <= c && c <= '9':
			buf[n] = c
			n++
		case isASCIISeparator(c):
		default:
			return nil, false, false
		}
	}
	if n < minFastDigits {
		return nil, false, false
	}
	return buf[:n], plus, true
}

// parsed is a number as phonenumbers.Parse returns it: a calling code and
// the national significant number (GetNationalSignificantNumber, which for a
// parsed number is the normalised national number with its leading zeros).
type parsed struct {
	code *callingCode
	nsn  string
}

// parseInternational parses the digits after a leading "+". It returns
// ok false where the library would take a branch not mirrored here (no known
// calling code at the start, which sends the library to retry the number
// without its "+").
func parseInternational(t *metadataTables, d []byte) (p parsed, perr error, ok bool) {
	// maybeExtractCountryCode: calling codes never start with 0, and are
	// prefix-free, so the first 1-3 digit prefix that is known is the code.
	if d[0] == '0' {
		return parsed{}, nil, false
	}
	cc := 0
	var code *callingCode
	for l := 1; l <= 3 && l <= len(d); l++ {
		cc = cc*10 + int(d[l-1]-'0')
		if c := t.byCode[cc]; c != nil {
			code, d = c, d[l:]
			break
		}
	}
	if code == nil {
		return parsed{}, nil, false
	}
	// Parse then reads the national number with the rules of the calling
	// code's main region, whatever the default region.
	nsn, err := finishNational(string(d), code.main)
	return parsed{code: code, nsn: nsn}, err, true
}

// parseNational parses digits written without "+" for default region r. It
// returns ok false where the library would strip an international dialling
// prefix (such as 00), a branch not mirrored here.
func parseNational(t *metadataTables, r *region, d []byte) (p parsed, perr error, ok bool) {
	r.compiled()
	s := string(d)
	// maybeStripInternationalPrefixAndNormalize: is there an IDD at the
	// start, not followed by a 0?
	if loc := r.idd.FindStringIndex(s); loc != nil && loc[0] == 0 {
		if loc[1] >= len(s) || s[loc[1]] != '0' {
			return parsed{}, nil, false
		}
	}
	meta := r
	code := t.byCode[r.cc]
	if code == nil {
		return parsed{}, nil, false
	}
	national := s
	// maybeExtractCountryCode: a number that starts with the region's own
	// calling code may be written without "+".
	if strings.HasPrefix(s, code.ccStr) {
		potential := r.stripNationalPrefix(s[len(code.ccStr):])
		fullValid := r.general.re.MatchString(s)
		nationalValid := r.general.re.MatchString(potential)
		if (!fullValid && nationalValid) || r.testLength(s) == phonenumbers.TOO_LONG {
			national = potential
			// parseHelper: the calling code's main region's rules from here
			// on when it is not the default region.
			if code.main != r {
				meta = code.main
			}
		}
	}
	nsn, err := finishNational(national, meta)
	return parsed{code: code, nsn: nsn}, err, true
}

// finishNational is the end of parseHelper: strip a national prefix where
// what is left still has a possible length, and check the length.
func finishNational(national string, r *region) (string, error) {
	if len(national) < minNSN {
		return "", phonenumbers.ErrTooShortNSN
	}
	if r != nil {
		r.compiled()
		potential := r.stripNationalPrefix(national)
		switch r.testLength(potential) {
		case phonenumbers.TOO_SHORT, phonenumbers.IS_POSSIBLE_LOCAL_ONLY, phonenumbers.INVALID_LENGTH:
		default:
			national = potential
		}
	}
	if len(national) < minNSN {
		return "", phonenumbers.ErrTooShortNSN
	}
	if len(national) > maxNSN {
		return "", phonenumbers.ErrNumTooLong
	}
	return national, nil
}

// possible is phonenumbers' IsPossibleNumberWithReason for a parsed number,
// used only to explain a refusal.
func (p parsed) possible() phonenumbers.ValidationResult {
	if p.code == nil || p.code.main == nil {
		return phonenumbers.INVALID_COUNTRY_CODE
	}
	m := p.code.main
	if m.meta.GetGeneralDesc().GetNationalNumberPattern() == "" {
		switch {
		case len(p.nsn) < minNSN:
			return phonenumbers.TOO_SHORT
		case len(p.nsn) > maxNSN:
			return phonenumbers.TOO_LONG
		}
		return phonenumbers.IS_POSSIBLE
	}
	return m.testLength(p.nsn)
}
