package state

import (
	"encoding/json"
	"fmt"
	"strings"
)

// An attempt's recipients are kept as a JSON array of strings, so that the
// sqlite3 shell (json_each) and PostgreSQL (jsonb) can expand them. Phones
// are E.164 numbers, which need no escaping: those are written and read
// here without encoding/json, anything else goes through it.

// appendPhones appends the JSON array of phones to b.
func appendPhones(b []byte, phones []string) []byte {
	for _, p := range phones {
		if !plainJSON(p) {
			j, _ := json.Marshal(phones) // []string always marshals
			return append(b, j...)
		}
	}
	b = append(b, '[')
	for i, p := range phones {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, p...)
		b = append(b, '"')
	}
	return append(b, ']')
}

// plainJSON reports whether s is printable ASCII that needs no escaping in
// a JSON string.
func plainJSON(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// eachPhone calls fn with every phone of the JSON array a; for an array
// as appendPhones or SQLite's json_group_array write E.164 numbers, without
// copying them. It reads what encoding/json reads, and a malformed array
// is an error before fn is called at all.
func eachPhone(a string, fn func(phone string)) error {
	if !plainArray(a) {
		return eachPhoneSlow(a, fn)
	}
	rest := a[1 : len(a)-1]
	for len(rest) > 0 {
		end := 1 + strings.IndexByte(rest[1:], '"')
		fn(rest[1:end])
		rest = rest[min(end+2, len(rest)):]
	}
	return nil
}

// plainArray reports whether a is a JSON array of strings of printable
// ASCII with no escapes, and no space between them.
func plainArray(a string) bool {
	if len(a) < 2 || a[0] != '[' || a[len(a)-1] != ']' {
		return false
	}
	in := a[1 : len(a)-1]
	if len(in) == 0 {
		return true
	}
	for i := 0; ; i++ {
		if i >= len(in) || in[i] != '"' {
			return false
		}
		for i++; i < len(in) && in[i] != '"'; i++ {
			if c := in[i]; c < 0x20 || c > 0x7e || c == '\\' {
				return false
			}
		}
		if i++; i == len(in) {
			return true
		}
		if i > len(in) || in[i] != ',' {
			return false
		}
	}
}

// eachPhoneSlow is eachPhone for any JSON. It parses everything before
// calling fn, so a malformed array calls fn for nothing.
func eachPhoneSlow(a string, fn func(phone string)) error {
	var ps []string
	if err := json.Unmarshal([]byte(a), &ps); err != nil {
		return fmt.Errorf("phones of an attempt: %w", err)
	}
	for _, p := range ps {
		fn(p)
	}
	return nil
}

// attemptStatus is what an attempt in state st makes of its recipients, if
// it is their latest: forgotten and resolved_unsent leave no record.
func attemptStatus(st string) Status {
	switch AttemptState(st) {
	case AttemptSent, AttemptResolvedSent:
		return Sent
	case AttemptFailed:
		return Failed
	case AttemptIntent, AttemptInDoubt:
		return InDoubt
	case AttemptSuppressed:
		return Suppressed
	}
	return Unsent
}
