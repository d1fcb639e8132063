package e164

import (
	"strings"
	"unicode/utf8"
)

// IsSeparator reports whether r is a character people and providers write
// between a number's digits: space, "-", ".", "(", ")", "/", and their
// typographic kin (no-break and thin spaces, hyphens and dashes). Reading a
// number ([Normalizer]), finding one in a text ([MaskIn]) and matching a
// provider's answer to a recipient all skip the same set.
func IsSeparator(r rune) bool {
	switch r {
	case ' ', '-', '.', '(', ')', '/', '\u00a0', '\u2009', '\u202f', '\u2010', '\u2011', '\u2012', '\u2013':
		return true
	}
	return false
}

// Digits is raw's digits without separators (see [IsSeparator]) and
// surrounding space, and whether it starts with "+"; ok is false when raw
// holds anything else (a letter, an extension) or no digit.
func Digits(raw string) (digits string, plus, ok bool) {
	raw, plus = strings.CutPrefix(strings.TrimSpace(raw), "+")
	if onlyASCIIDigits(raw) {
		return raw, plus, raw != "" // the common case: nothing to take out
	}
	var b strings.Builder
	for _, r := range raw {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case IsSeparator(r):
		default:
			return "", false, false
		}
	}
	return b.String(), plus, b.Len() > 0
}

// CutInternationalPrefix is digits without the "00" that dials out of most
// countries, written where "+" would be ("0044…" for "+44…"), and whether
// it had one.
func CutInternationalPrefix(digits string) (string, bool) {
	return strings.CutPrefix(digits, "00")
}

func onlyASCIIDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isASCIISeparator is IsSeparator for one byte of ASCII text.
func isASCIISeparator(c byte) bool { return c < utf8.RuneSelf && IsSeparator(rune(c)) }
