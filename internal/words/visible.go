package words

import (
	"strings"
	"unicode/utf8"
)

// Visible returns s with every character that could act on a terminal or
// a reader instead of being read written as a visible escape, the way
// [strconv.Quote] writes it: C0 and C1 controls (newline, tab, ESC, BEL,
// NEL…) and DEL, the bidirectional controls (U+202A–U+202E, U+2066–U+2069,
// U+200E, U+200F, U+061C), the line and paragraph separators (U+2028,
// U+2029), and bytes that are not UTF-8. Everything else, quotes and
// backslashes included, is left as it is.
//
// It is the one door user text (campaign and list names, variables,
// reasons, paths, what a provider said) goes through on its way to a
// person: an ESC could retitle or recolour the terminal, a newline could
// start a line that looks like smsform's own, a right-to-left override
// could reverse a link a reviewer reads (Trojan Source, CVE-2021-42574).
// JSON output does not use it: JSON escapes controls itself and stays data.
//
// Text that needs nothing is returned as it is, without allocating.
func Visible(s string) string {
	i := firstHidden(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		case hidden(r):
			escape(&b, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

const hex = "0123456789abcdef"

// firstHidden is the index of the first byte of s that [Visible] escapes,
// or -1. ASCII is checked a byte at a time; only the rest is decoded.
func firstHidden(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || hidden(r) {
			return i
		}
		i += size
	}
	return -1
}

// hidden says whether r is a control [Visible] escapes.
func hidden(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f: // C0, DEL, C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // embeddings, overrides, isolates
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c: // LRM, RLM, ALM
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

// escape writes r as [strconv.Quote] does: \n, \t…, \x1b, \u202e.
func escape(b *strings.Builder, r rune) {
	if i := strings.IndexRune("\a\b\f\n\r\t\v", r); i >= 0 {
		b.WriteByte('\\')
		b.WriteByte("abfnrtv"[i])
		return
	}
	if r < utf8.RuneSelf {
		b.WriteString(`\x`)
		b.WriteByte(hex[r>>4])
		b.WriteByte(hex[r&0xf])
		return
	}
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hex[r>>shift&0xf])
	}
}
