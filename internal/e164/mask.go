package e164

import (
	"strconv"
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

// Numbers inside text: a template may print a recipient's number in any
// form ({{ .phone }}, {{ slice .phone 1 }}, a list column holding the
// national form "07400 123459", digits grouped by spaces, dashes, dots or
// parentheses), and a provider may echo one in its reason for a refusal.
// Text is read as runs of digits that such separators join; a run is
// masked whole, every digit but its last 3 replaced by the mask rune, its
// separators (and a leading +) kept, so that the form stays visible.

// windowDigits is how many consecutive digits of a recipient's number
// (in E.164, without the +) make a run of text that number: 6, so that a
// body printing the last 4 or 5 digits ("the phone ending 3459") stays
// whole, while any national or international form, and most of a number
// sliced off, are caught.
const windowDigits = 6

// windowMod keeps windowDigits digits of a rolling window.
const windowMod = 1_000_000

// anyDigits is how long a run of digits [MaskAny] takes for a number: 8,
// more than an ISO date's.
const anyDigits = 8

// keepLast is how many of a masked run's last digits stay visible, as in
// [Mask].
const keepLast = 3

// maxSeparators is how many separator characters may come between two
// digits of one run: "+44 (0) 7400" has two.
const maxSeparators = 3

// MaskIn masks, in text (a message body, a provider's reason), every run of
// digits that holds [windowDigits] consecutive digits of one of numbers, which
// are in E.164; digits that are no recipient's (a hotline, a price, an order
// number) stay as they are, so that a reviewer reads the message as it goes.
func MaskIn(text string, numbers ...string) string {
	runs := digitRuns(text, windowDigits)
	if len(runs) == 0 || len(numbers) == 0 {
		return text
	}
	// Each window of windowDigits digits of a run, with the runs that hold
	// it; a run past the 64th is masked whatever it holds.
	var windows windowSet
	for i, r := range runs {
		if i >= 64 {
			runs[i].masked = true
			continue
		}
		eachWindow(r.digits, func(w uint32) { windows.add(w, 1<<i) })
	}
	all := uint64(1)<<min(len(runs), 64) - 1 // every run: 1<<64 is 0
	var hit uint64
	for _, n := range numbers {
		// The number's windows, rolled digit by digit (a batch may have
		// thousands of recipients).
		var w uint32
		k := 0
		for i := 0; i < len(n); i++ {
			if !isDigit(n[i]) {
				continue
			}
			w = (w*10 + uint32(n[i]-'0')) % windowMod
			if k++; k >= windowDigits {
				hit |= windows.runs(w)
			}
		}
		if hit == all {
			break
		}
	}
	found := false
	for i := range runs {
		if i < 64 && hit&(1<<i) != 0 {
			runs[i].masked = true
		}
		found = found || runs[i].masked
	}
	if !found {
		return text
	}
	return maskRuns(text, runs)
}

// MaskAny masks, in text from outside that names no recipient smsform
// knows of (a provider's words in an event), every run of 8 digits or more
// but an ISO date or an IPv4 address: anything that may be a phone number.
func MaskAny(text string) string {
	runs := digitRuns(text, anyDigits)
	found := false
	for i, r := range runs {
		// A date and the time after it ("2026-11-23 14:00") are one
		// run: the date is left out of it.
		if r.end-r.start >= 10 && isDate(text[r.start:r.start+10]) {
			if r = r.from(text, r.start+10); len(r.digits) < anyDigits {
				continue
			}
			runs[i] = r
		}
		if isIPv4(text[r.start:r.end]) {
			continue
		}
		runs[i].masked, found = true, true
	}
	if !found {
		return text
	}
	return maskRuns(text, runs)
}

// MaskInvalid shows a value that is not a valid number (it is nobody's
// number as written) enough to be told from the others and fixed: what is
// not a digit (the +, separators, letters: often the mistake) stays, as do
// the first 4 and last 2 digits; a value of 6 digits or fewer stays whole.
// "447400123459" -> "4474••••••59", "07400 123459" -> "0740• ••••59".
func MaskInvalid(raw string) string {
	n := 0
	for i := 0; i < len(raw); i++ {
		if isDigit(raw[i]) {
			n++
		}
	}
	if n <= 6 {
		return raw
	}
	var b strings.Builder
	k := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !isDigit(c) {
			b.WriteByte(c)
			continue
		}
		if k < 4 || k >= n-2 {
			b.WriteByte(c)
		} else {
			b.WriteRune(maskRune)
		}
		k++
	}
	return b.String()
}

// windowSet holds windows of digits and, for each, the runs (a bit each)
// that hold it: a slice searched in order while it is small (a body holds
// a few numbers), a map past that.
type windowSet struct {
	list []windowRuns
	big  map[uint32]uint64
}

type windowRuns struct {
	w    uint32
	runs uint64
}

// smallSet is how many windows a windowSet searches in order.
const smallSet = 32

func (s *windowSet) add(w uint32, runs uint64) {
	if s.big != nil {
		s.big[w] |= runs
		return
	}
	for i := range s.list {
		if s.list[i].w == w {
			s.list[i].runs |= runs
			return
		}
	}
	s.list = append(s.list, windowRuns{w, runs})
	if len(s.list) > smallSet {
		s.big = make(map[uint32]uint64, 2*len(s.list))
		for _, x := range s.list {
			s.big[x.w] |= x.runs
		}
		s.list = nil
	}
}

func (s *windowSet) runs(w uint32) uint64 {
	if s.big != nil {
		return s.big[w]
	}
	for _, x := range s.list {
		if x.w == w {
			return x.runs
		}
	}
	return 0
}

// digitRun is a run of digits in a text: bytes [start, end) from its first
// digit to its last, and the digits alone.
type digitRun struct {
	start, end int
	digits     []byte
	masked     bool
}

// from is what is left of r from its first digit at or after byte at.
func (r digitRun) from(text string, at int) digitRun {
	for at < r.end && !isDigit(text[at]) {
		at++
	}
	return digitRun{start: at, end: r.end, digits: appendDigits(nil, text[at:r.end])}
}

// digitRuns finds the runs of at least least digits in text.
func digitRuns(text string, least int) []digitRun {
	var runs []digitRun
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		r := digitRun{start: i}
		for {
			r.digits = append(r.digits, text[i])
			i++
			r.end = i
			j := skipSeparators(text, i)
			if j == len(text) || !isDigit(text[j]) {
				break
			}
			i = j
		}
		if len(r.digits) >= least {
			runs = append(runs, r)
		}
	}
	return runs
}

// skipSeparators returns where the separators that start at i end, if
// there are at most maxSeparators of them.
func skipSeparators(text string, i int) int {
	j := i
	for n := 0; j < len(text); n++ {
		r, size := utf8.DecodeRuneInString(text[j:])
		if !IsSeparator(r) {
			break
		}
		if n == maxSeparators {
			return i
		}
		j += size
	}
	return j
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// eachWindow calls fn with each windowDigits consecutive digits of digits,
// as a number.
func eachWindow(digits []byte, fn func(uint32)) {
	for i := 0; i+windowDigits <= len(digits); i++ {
		var w uint32
		for _, c := range digits[i : i+windowDigits] {
			w = w*10 + uint32(c-'0')
		}
		fn(w)
	}
}

func appendDigits(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			dst = append(dst, s[i])
		}
	}
	return dst
}

// maskRuns writes text with the digits of its masked runs masked, all but
// each run's last keepLast.
func maskRuns(text string, runs []digitRun) string {
	var b strings.Builder
	b.Grow(len(text) + 2*len(text)/3)
	at := 0
	for _, r := range runs {
		if !r.masked {
			continue
		}
		b.WriteString(text[at:r.start])
		k := 0
		for i := r.start; i < r.end; i++ {
			c := text[i]
			if isDigit(c) {
				if k < len(r.digits)-keepLast {
					b.WriteRune(maskRune)
				} else {
					b.WriteByte(c)
				}
				k++
				continue
			}
			b.WriteByte(c)
		}
		at = r.end
	}
	b.WriteString(text[at:])
	return b.String()
}

// isDate reports whether s is an ISO date, 2026-11-23.
func isDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i != 4 && i != 7 && !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// isIPv4 reports whether s is four groups of 1 to 3 digits joined by dots,
// 192.168.100.200: an address a connection error names.
func isIPv4(s string) bool {
	groups := strings.Split(s, ".")
	if len(groups) != 4 {
		return false
	}
	for _, g := range groups {
		if len(g) == 0 || len(g) > 3 || strings.Trim(g, "0123456789") != "" {
			return false
		}
	}
	return true
}

// Masker masks the numbers of one output so that two different numbers
// never read the same: the first number shown with a mask is written as
// [Mask] writes it, each other number with that mask gets a short tag in
// the order it first appears ("+1 20•• •••001 #2"), and one number is
// always written the same way. A tag tells numbers apart within the output
// and reveals nothing of them: it depends on the order they are shown in,
// not on their hidden digits (more digits, or a hash of the number, would
// give away what the mask hides to anyone who tries the candidates).
//
// A Masker is for one output, by one goroutine. [NewSortedMasker] is for an
// output that shows its numbers sorted (a state's or the opt-outs' list):
// it keeps only a few values per mask, so that ten million lines stream
// through in constant memory.
type Masker struct {
	sorted bool
	prefix string             // sorted: the shown prefix of the numbers in seen
	seen   map[string]*maskOf // by mask
}

// maskOf is what a Masker knows of one mask: how many numbers it has
// shown with it, the first (unsorted) or the last (sorted), and the tags
// of the others (unsorted).
type maskOf struct {
	n           int
	first       string
	last, shown string
	tags        map[string]string
}

// NewMasker is a Masker for an output that shows numbers in any order.
func NewMasker() *Masker { return &Masker{seen: map[string]*maskOf{}} }

// NewSortedMasker is a Masker for an output that shows numbers in sorted
// order (each number's repeats next to each other).
func NewSortedMasker() *Masker { return &Masker{sorted: true, seen: map[string]*maskOf{}} }

// Mask writes a valid number as [Mask] does, tagged when another number
// of this output has the same mask. A nil Masker writes [Mask]'s alone.
func (m *Masker) Mask(e164 string) string {
	if m == nil {
		return Mask(e164)
	}
	return m.tag(e164, Mask(e164))
}

// Invalid writes a value that is not a number as [MaskInvalid] does,
// tagged likewise.
func (m *Masker) Invalid(raw string) string {
	if m == nil {
		return MaskInvalid(raw)
	}
	return m.tag("\x00"+raw, MaskInvalid(raw))
}

// tag is masked, the mask of key, with the tag that tells key from the
// other keys of the same mask.
func (m *Masker) tag(key, masked string) string {
	if m.sorted {
		// Sorted, two numbers with one mask share its shown start: once
		// that changes, no number seen so far can collide again.
		if p := shownPrefix(masked); p != m.prefix {
			m.prefix = p
			clear(m.seen)
		}
	}
	s, ok := m.seen[masked]
	if !ok {
		s = &maskOf{}
		m.seen[masked] = s
	}
	switch {
	case m.sorted && s.n > 0 && s.last == key:
		return s.shown
	case !m.sorted && s.n > 0 && s.first == key:
		return masked
	case !m.sorted && s.tags[key] != "":
		return s.tags[key]
	}
	s.n++
	shown := masked
	if s.n > 1 {
		shown = masked + " #" + strconv.Itoa(s.n)
	}
	switch {
	case m.sorted:
		s.last, s.shown = key, shown
	case s.n == 1:
		s.first = key
	default:
		if s.tags == nil {
			s.tags = map[string]string{}
		}
		s.tags[key] = shown
	}
	return shown
}

// shownPrefix is a mask up to its first hidden digit.
func shownPrefix(masked string) string {
	for i, r := range masked {
		if r == maskRune {
			return masked[:i]
		}
	}
	return masked
}
