package e164

import (
	"strings"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

const maskRune = '•'

// Mask hides the middle of an E.164 number for shared output:
// "+447700900123" -> "+44 77•• •••123".
//
// For a number in E.164 form with a known country calling code, the country
// code is kept, followed by a space and the national number. A national number
// of 6 digits or more keeps its first 2 and last 3 digits and is written as
// its first 4 characters, a space, and the rest; a shorter one keeps only its
// last 2 digits and is not grouped. Anything else keeps only its last 2
// characters.
func Mask(e164 string) string {
	cc, national, ok := splitE164(e164)
	if !ok {
		return maskAllBut(e164, 2)
	}
	var b strings.Builder
	b.Grow(len(e164) + 2*len(national) + 2)
	b.WriteByte('+')
	b.WriteString(cc)
	b.WriteByte(' ')
	if len(national) < 6 {
		writeMasked(&b, national, 0, 2)
		return b.String()
	}
	for i := 0; i < len(national); i++ {
		if i == 4 {
			b.WriteByte(' ')
		}
		if i < 2 || i >= len(national)-3 {
			b.WriteByte(national[i])
		} else {
			b.WriteRune(maskRune)
		}
	}
	return b.String()
}

// writeMasked writes s with all but the first keepHead and last keepTail
// bytes (all digits) replaced by the mask rune.
func writeMasked(b *strings.Builder, s string, keepHead, keepTail int) {
	for i := 0; i < len(s); i++ {
		if i < keepHead || i >= len(s)-keepTail {
			b.WriteByte(s[i])
		} else {
			b.WriteRune(maskRune)
		}
	}
}

func maskAllBut(s string, keep int) string {
	n := utf8.RuneCountInString(s)
	var b strings.Builder
	i := 0
	for _, r := range s {
		if i < n-keep {
			b.WriteRune(maskRune)
		} else {
			b.WriteRune(r)
		}
		i++
	}
	return b.String()
}

// splitE164 splits "+" digits into a country calling code phonenumbers knows
// and the national number. Calling codes are prefix-free, so at most one of
// the 1-3 digit prefixes is known.
func splitE164(s string) (cc, national string, ok bool) {
	if len(s) < 3 || len(s) > 16 || s[0] != '+' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", "", false
		}
	}
	code := 0
	for l := 1; l <= 3 && l < len(s)-1; l++ {
		code = code*10 + int(s[l]-'0')
		if phonenumbers.GetRegionCodeForCountryCode(code) != phonenumbers.UNKNOWN_REGION {
			return s[1 : l+1], s[l+1:], true
		}
	}
	return "", "", false
}
