package state

import (
	"github.com/smsform/smsform/internal/e164"

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
	}
	return Unsent
}

// known is the status of every recorded recipient, so that an intent is
// checked at a cost independent of the campaign's size: numbers live in an
// e164.Map, where a lookup, or a lookup and a change, touches one slot. A
// recipient whose record went away keeps its entry with Unsent, which is
// the same as absent: maps only grow, and mostly with recipients who come
// back.
//
// It belongs to the writer goroutine. A change sets statuses as it goes and
// logs what it overwrote; a refused change, or a group whose commit fails,
// is undone from the log, so between commits known is exactly what the
// file records.
type known struct {
	statuses *e164.Map[Status]
	undo     []undoEntry

	// batches holds each batch's latest attempt, which its outcome or
	// forget finishes: the file keeps no index on batch_id, one B-tree
	// page less to write per intent.
	batches map[string]int64
}

// undoEntry is one overwritten value: a number's status, or a batch's latest
// attempt (0: none).
type undoEntry struct {
	batch   bool
	str     string // the number or the batch
	prev    Status
	attempt int64
}

func newKnown(n int) *known {
	return &known{statuses: e164.NewMap[Status](n), batches: map[string]int64{}}
}

func (k *known) get(p string) Status {
	c, _ := k.statuses.Get(p)
	return c
}

// put sets p's status and returns the previous one.
func (k *known) put(p string, c Status) Status {
	if c == Unsent {
		if _, ok := k.statuses.Get(p); !ok {
			return Unsent // nothing to clear: no entry for it
		}
	}
	v, _ := k.statuses.Ref(p)
	prev := *v
	*v = c
	return prev
}

// load sets p's status with no undo: for building known from the file.
func (k *known) load(p string, c Status) { k.put(p, c) }

// set sets p's status, logging the previous one.
func (k *known) set(p string, c Status) {
	k.undo = append(k.undo, undoEntry{str: p, prev: k.put(p, c)})
}

// check returns p's status and, if it is neither sent nor in doubt, sets it
// to in doubt (logged): an intent's test and change in one lookup.
func (k *known) check(p string) Status {
	v, _ := k.statuses.Ref(p)
	c := *v
	if c == Sent || c == InDoubt {
		return c
	}
	*v = InDoubt
	k.undo = append(k.undo, undoEntry{str: p, prev: c})
	return c
}

// setBatch records id as the batch's latest attempt, logging the previous.
func (k *known) setBatch(batch string, id int64) {
	k.undo = append(k.undo, undoEntry{batch: true, str: batch, attempt: k.batches[batch]})
	k.batches[batch] = id
}

// mark is a point in the undo log to go back to.
func (k *known) mark() int { return len(k.undo) }

// rollback undoes every set since mark m. A number added since keeps its
// entry with Unsent, which is the same as absent.
func (k *known) rollback(m int) {
	for i := len(k.undo) - 1; i >= m; i-- {
		switch e := k.undo[i]; {
		case !e.batch:
			k.put(e.str, e.prev)
		case e.attempt == 0:
			delete(k.batches, e.str)
		default:
			k.batches[e.str] = e.attempt
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
