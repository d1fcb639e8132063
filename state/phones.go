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

// eachPhone calls fn with every phone of the JSON array a, as substrings of
// a (no copies) when the array is as appendPhones or SQLite's
// json_group_array writes it.
func eachPhone(a string, fn func(phone string)) error {
	if len(a) < 2 || a[0] != '[' || a[len(a)-1] != ']' || strings.IndexByte(a, '\\') >= 0 {
		return eachPhoneSlow(a, fn)
	}
	rest := a[1 : len(a)-1]
	for len(rest) > 0 {
		if rest[0] != '"' {
			return eachPhoneSlow(a, fn)
		}
		end := strings.IndexByte(rest[1:], '"')
		if end < 0 {
			return eachPhoneSlow(a, fn)
		}
		p := rest[1 : 1+end]
		rest = rest[2+end:]
		if len(rest) > 0 {
			if rest[0] != ',' {
				return eachPhoneSlow(a, fn)
			}
			rest = rest[1:]
			if len(rest) == 0 { // a trailing comma is not JSON
				return eachPhoneSlow(a, fn)
			}
		}
		fn(p)
	}
	return nil
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

// code is a recipient's status in one byte; 0 is no record.
type code uint8

const (
	codeNone code = iota
	codeSent
	codeFailed
	codeInDoubt
)

func (c code) status() Status {
	switch c {
	case codeSent:
		return Sent
	case codeFailed:
		return Failed
	case codeInDoubt:
		return InDoubt
	}
	return ""
}

func outcomeCode(st Status) code {
	switch st {
	case Sent:
		return codeSent
	case Failed:
		return codeFailed
	case InDoubt:
		return codeInDoubt
	}
	return codeNone
}

// attemptCode is what an attempt in state st makes of its recipients, if
// it is their latest: forgotten and resolved_unsent leave no record.
func attemptCode(st string) code {
	switch AttemptState(st) {
	case AttemptSent, AttemptResolvedSent:
		return codeSent
	case AttemptFailed:
		return codeFailed
	case AttemptIntent, AttemptInDoubt:
		return codeInDoubt
	}
	return codeNone
}

// numKey packs "+" and up to 18 digits into a uint64: a leading 1, then
// the digits, so that leading zeros stay distinct.
func numKey(p string) (uint64, bool) {
	if len(p) < 2 || len(p) > 19 || p[0] != '+' {
		return 0, false
	}
	k := uint64(1)
	for i := 1; i < len(p); i++ {
		d := p[i] - '0'
		if d > 9 {
			return 0, false
		}
		k = k*10 + uint64(d)
	}
	return k, true
}

// known is the status of every recorded recipient, so that an intent is
// checked at a cost independent of the campaign's size. A million E.164
// numbers take a few tens of MB; other strings fall back to a string map.
//
// It belongs to the writer goroutine. A change sets codes as it goes and
// logs what it overwrote; a refused change, or a group whose commit fails,
// is undone from the log, so between commits known is exactly what the
// file records.
type known struct {
	nums  map[uint64]code
	other map[string]code
	undo  []undoEntry
}

type undoEntry struct {
	num     uint64
	other   string
	isOther bool // the key is other, not num
	prev    code
}

func newKnown(n int) *known {
	return &known{nums: make(map[uint64]code, n), other: map[string]code{}}
}

func (k *known) get(p string) code {
	if n, ok := numKey(p); ok {
		return k.nums[n]
	}
	return k.other[p]
}

// load sets p's code with no undo: for building known from the file.
func (k *known) load(p string, c code) {
	if n, ok := numKey(p); ok {
		if c == codeNone {
			delete(k.nums, n)
		} else {
			k.nums[n] = c
		}
		return
	}
	if c == codeNone {
		delete(k.other, p)
	} else {
		k.other[p] = c
	}
}

// set sets p's code, logging the previous one.
func (k *known) set(p string, c code) {
	if n, ok := numKey(p); ok {
		prev := k.nums[n]
		k.undo = append(k.undo, undoEntry{num: n, prev: prev})
		if c == codeNone {
			delete(k.nums, n)
		} else {
			k.nums[n] = c
		}
		return
	}
	prev := k.other[p]
	k.undo = append(k.undo, undoEntry{other: p, isOther: true, prev: prev})
	if c == codeNone {
		delete(k.other, p)
	} else {
		k.other[p] = c
	}
}

// mark is a point in the undo log to go back to.
func (k *known) mark() int { return len(k.undo) }

// rollback undoes every set since mark m.
func (k *known) rollback(m int) {
	for i := len(k.undo) - 1; i >= m; i-- {
		e := k.undo[i]
		if !e.isOther {
			if e.prev == codeNone {
				delete(k.nums, e.num)
			} else {
				k.nums[e.num] = e.prev
			}
		} else if e.prev == codeNone {
			delete(k.other, e.other)
		} else {
			k.other[e.other] = e.prev
		}
	}
	k.undo = k.undo[:m]
}

// commit forgets the undo log: everything set is now in the file.
func (k *known) commit() {
	if cap(k.undo) > 1<<16 {
		k.undo = nil // after a huge resolve, let the memory go
	}
	k.undo = k.undo[:0]
}
