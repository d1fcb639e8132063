// Package sms knows the rules of the short message itself: which encoding a
// body needs (GSM-7 or UCS-2), how many segments it costs, and which sender
// names an operator accepts.
//
// [Analyze] follows 3GPP TS 23.038 (GSM 03.38): a body whose every character
// is in the GSM-7 default alphabet or its extension table is sent in GSM-7,
// anything else in UCS-2. A body that fits one message (160 septets or 70
// UTF-16 code units) is one segment; a longer one is split into parts of 153
// septets or 67 code units, and a character is never split across two parts
// (an extension-table escape pair or a UTF-16 surrogate pair moves whole to
// the next part). The empty body is one segment of 0 units, as it costs one
// message to send.
package sms

import "unicode/utf8"

// Encoding is the character set a message is sent in.
type Encoding string

const (
	GSM7 Encoding = "GSM-7"
	UCS2 Encoding = "UCS-2"
)

// Analysis describes what a body costs to send.
type Analysis struct {
	Encoding Encoding
	// Units is the length in the encoding's units: septets for GSM-7
	// (extension-table characters count twice), UTF-16 code units for UCS-2.
	Units int
	// Segments is how many SMS parts the body is sent as (160/153 septets for
	// GSM-7, 70/67 code units for UCS-2).
	Segments int
	// Forcing lists, in order of first appearance and without repeats, the
	// characters that are not in GSM-7 and so force UCS-2. Empty for GSM-7.
	Forcing []rune
	// SegmentsIfGSM7 is what the body would cost if the forcing characters
	// were replaced by GSM-7 ones (one septet each); equal to Segments for GSM-7.
	SegmentsIfGSM7 int
}

// Limits of one message and of one part of a concatenated message (the rest
// of a part is taken by the user data header).
const (
	gsm7Single = 160
	gsm7Part   = 153
	ucs2Single = 70
	ucs2Part   = 67
)

// Analyze returns the encoding and segment count of body. It does not
// allocate when the body is GSM-7.
func Analyze(body string) Analysis {
	// One pass counts septets (a non-GSM character as one, which is the
	// GSM-7 answer when there is none) and UTF-16 units. Only a long body
	// with a two-unit character needs the second, part by part, pass.
	var septets, units int
	var escapes, pairs bool
	var forcing runeSet
	for i := 0; i < len(body); {
		if c := body[i]; c < utf8.RuneSelf {
			i++
			w := int(asciiSeptets[c])
			if w == 0 {
				forcing.add(rune(c))
				w = 1
			}
			escapes = escapes || w == 2
			septets += w
			units++
			continue
		}
		r, size := utf8.DecodeRuneInString(body[i:]) // an invalid byte is U+FFFD, as it would be sent
		i += size
		w := nonASCIISeptets(r)
		if w == 0 {
			forcing.add(r)
			w = 1
		}
		escapes = escapes || w == 2
		septets += w
		units++
		if r >= 0x10000 {
			units++
			pairs = true
		}
	}
	ifGSM7 := segments(septets, gsm7Single, gsm7Part, escapes, body, gsmUnits)
	if len(forcing.list) == 0 {
		return Analysis{Encoding: GSM7, Units: septets, Segments: ifGSM7, SegmentsIfGSM7: ifGSM7}
	}
	return Analysis{
		Encoding:       UCS2,
		Units:          units,
		Segments:       segments(units, ucs2Single, ucs2Part, pairs, body, utf16Units),
		Forcing:        forcing.list,
		SegmentsIfGSM7: ifGSM7,
	}
}

// segments is how many parts total units take. When some characters take
// two units (pack), a character that does not fit in what is left of a part
// moves whole to the next, so the parts are counted one by one.
func segments(total, single, part int, pack bool, body string, width func(rune) int) int {
	if total <= single {
		return 1
	}
	if !pack {
		return (total + part - 1) / part
	}
	parts, room := 0, 0
	for _, r := range body {
		w := width(r)
		if w > room {
			parts++
			room = part
		}
		room -= w
	}
	return parts
}

// gsmUnits is the septets of r, counting a character outside GSM-7 as one.
func gsmUnits(r rune) int {
	if r < utf8.RuneSelf {
		return max(int(asciiSeptets[r]), 1)
	}
	return max(nonASCIISeptets(r), 1)
}

func utf16Units(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// runeSet keeps distinct runes in order of first appearance; the map is only
// made when the list grows past what a linear scan handles well.
type runeSet struct {
	list []rune
	seen map[rune]struct{}
}

func (s *runeSet) add(r rune) {
	if s.seen != nil {
		if _, ok := s.seen[r]; ok {
			return
		}
		s.seen[r] = struct{}{}
		s.list = append(s.list, r)
		return
	}
	for _, x := range s.list {
		if x == r {
			return
		}
	}
	s.list = append(s.list, r)
	if len(s.list) > 32 {
		s.seen = make(map[rune]struct{}, 2*len(s.list))
		for _, x := range s.list {
			s.seen[x] = struct{}{}
		}
	}
}
