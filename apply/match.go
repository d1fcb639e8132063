package apply

import (
	"slices"

	"github.com/smsform/smsform/internal/e164"
)

// matchNumbers returns a function that tells which of phones (a batch's
// recipients, in E.164) a number as a provider echoed it names, and
// whether one does. Providers echo numbers as they store them:
//
//   - E.164 ("+447700900123"), maybe with spaces, dashes, dots or
//     brackets: matched as is;
//   - without the + ("447700900123") or with the 00 international prefix
//     ("00447700900123"): matched with a + in its place;
//   - in a national form ("07700 900123"): read in the region of each
//     country the batch's numbers belong to, and matched only when exactly
//     one of the batch's numbers is found that way.
//
// A number matched by none of these, or by two of the batch's numbers,
// names nobody: the recipient it may have meant stays unmentioned, which
// holds it in doubt, never sent by a guess.
//
// at is where the number stands in the provider's list: providers mostly
// list recipients in the order they were sent, so phones[at] is tried
// first, and the batch's numbers are indexed only when it is not the one
// (at < 0: no such hint).
func matchNumbers(phones []string) func(at int, raw string) (int, bool) {
	var index map[string]int
	var key []byte
	lookup := func(digits string) (int, bool) {
		key = append(append(key[:0], '+'), digits...)
		i, ok := index[string(key)] // no copy: the compiler sees to it
		return i, ok
	}
	var national []*e164.Normalizer // one per region of the batch, made when first needed
	return func(at int, raw string) (int, bool) {
		d, plus := digitsOf(raw)
		if at >= 0 && at < len(phones) && sameNumber(phones[at], raw, d, plus) {
			return at, true
		}
		if index == nil {
			index = make(map[string]int, len(phones))
			for i, p := range phones {
				index[p] = i
			}
		}
		if d == "" {
			i, ok := index[raw]
			return i, ok
		}
		if i, ok := lookup(d); ok {
			return i, true
		}
		if plus {
			return 0, false
		}
		if rest, ok := e164.CutInternationalPrefix(d); ok {
			if i, ok := lookup(rest); ok {
				return i, true
			}
		}
		if national == nil {
			national = regionsOf(phones)
		}
		found, n := 0, 0
		for _, norm := range national {
			num, err := norm.Normalize(d)
			if err != nil {
				continue
			}
			if i, ok := index[num.E164]; ok && (n == 0 || i != found) {
				found = i
				n++
			}
		}
		return found, n == 1
	}
}

// sameNumber reports whether raw (its digits d, plus: written with a +)
// names phone in one of the forms matched without reading it nationally:
// as is, without the +, or after 00.
func sameNumber(phone, raw, d string, plus bool) bool {
	switch {
	case d == "":
		return raw == phone
	case len(phone) > 1 && phone[1:] == d:
		return true
	}
	rest, ok := e164.CutInternationalPrefix(d)
	return !plus && ok && len(phone) > 1 && phone[1:] == rest
}

// digitsOf is raw's digits, without the separators people and providers
// write, and whether it starts with a +; "" when raw holds anything else
// or more digits than any phone number has.
func digitsOf(raw string) (digits string, plus bool) {
	d, plus, ok := e164.Digits(raw)
	if !ok || len(d) > 20 {
		return "", false
	}
	return d, plus
}

// regionsOf is a national-number reader for each region phones belong to.
func regionsOf(phones []string) []*e164.Normalizer {
	intl := e164.NewNormalizer("")
	var regions []string
	for _, p := range phones {
		if num, err := intl.Normalize(p); err == nil && !slices.Contains(regions, num.Region) {
			regions = append(regions, num.Region)
		}
	}
	out := make([]*e164.Normalizer, 0, len(regions)) // not nil, even when empty: made once
	for _, r := range regions {
		out = append(out, e164.NewNormalizer(r))
	}
	return out
}
