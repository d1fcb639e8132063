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
// checked at a cost independent of the campaign's size.
//
// E.164 numbers (numKey) live in an open-addressing table of uint64 slots,
// the code in the top two bits: a million of them take 16 MB, and a
// lookup, or a lookup and a change, touches one cache line where a Go map
// touches two (on a large map that is what a check costs). A recipient
// whose record went away keeps its slot with codeNone: tables only grow,
// and mostly with recipients who come back. Other strings fall back to a
// map.
//
// It belongs to the writer goroutine. A change sets codes as it goes and
// logs what it overwrote; a refused change, or a group whose commit fails,
// is undone from the log, so between commits known is exactly what the
// file records.
type known struct {
	slots []uint64 // key | code<<codeShift; 0 is empty; len is a power of two
	used  int
	shift uint // 64 - log2(len(slots))
	other map[string]code
	undo  []undoEntry

	// batches holds each batch's latest attempt, which its outcome or
	// forget finishes: the file keeps no index on batch_id, one B-tree
	// page less to write per intent.
	batches map[string]int64
}

const (
	codeShift = 62
	keyMask   = 1<<codeShift - 1
)

// undoEntry is one overwritten value: a number's code, another string's
// code, or a batch's latest attempt.
type undoEntry struct {
	kind undoKind
	num  uint64 // the number, or the batch's previous attempt (0: none)
	str  string // the string or the batch
	prev code
}

type undoKind uint8

const (
	undoNum undoKind = iota
	undoOther
	undoBatch
)

func newKnown(n int) *known {
	k := &known{other: map[string]code{}, batches: map[string]int64{}}
	k.resize(max(n, 1024))
	return k
}

// resize makes room for n keys at a load of at most a half, and puts the
// present ones back.
func (k *known) resize(n int) {
	size, shift := 1, uint(64)
	for size < 2*n {
		size, shift = size*2, shift-1
	}
	old := k.slots
	k.slots, k.shift, k.used = make([]uint64, size), shift, 0
	for _, v := range old {
		if v != 0 {
			k.slots[k.find(v&keyMask)] = v
			k.used++
		}
	}
}

// home is where key's probe starts.
func (k *known) home(key uint64) int { return int((key * 0x9e3779b97f4a7c15) >> k.shift) }

// find returns the slot of key: where it is, or the empty slot where it
// would go.
func (k *known) find(key uint64) int {
	mask := len(k.slots) - 1
	for i := k.home(key); ; i = (i + 1) & mask {
		if v := k.slots[i]; v == 0 || v&keyMask == key {
			return i
		}
	}
}

func (k *known) get(p string) code {
	if n, ok := numKey(p); ok {
		return code(k.slots[k.find(n)] >> codeShift)
	}
	return k.other[p]
}

// put sets the code of key n and returns the previous one.
func (k *known) put(n uint64, c code) code {
	i := k.find(n)
	v := k.slots[i]
	if v == 0 {
		if c == codeNone {
			return codeNone
		}
		if 4*(k.used+1) > 3*len(k.slots) {
			k.resize(len(k.slots)) // doubles: len/2 keys at a half
			i = k.find(n)
		}
		k.used++
	}
	k.slots[i] = n | uint64(c)<<codeShift
	return code(v >> codeShift)
}

func (k *known) putOther(p string, c code) code {
	prev := k.other[p]
	if c == codeNone {
		delete(k.other, p)
	} else {
		k.other[p] = c
	}
	return prev
}

// load sets p's code with no undo: for building known from the file.
func (k *known) load(p string, c code) {
	if n, ok := numKey(p); ok {
		k.put(n, c)
	} else {
		k.putOther(p, c)
	}
}

// set sets p's code, logging the previous one.
func (k *known) set(p string, c code) {
	if n, ok := numKey(p); ok {
		k.undo = append(k.undo, undoEntry{kind: undoNum, num: n, prev: k.put(n, c)})
	} else {
		k.undo = append(k.undo, undoEntry{kind: undoOther, str: p, prev: k.putOther(p, c)})
	}
}

// check returns p's code and, if it is neither sent nor in doubt, sets it
// to in doubt (logged): an intent's test and change in one lookup.
func (k *known) check(p string) code {
	n, ok := numKey(p)
	if !ok {
		c := k.other[p]
		if c != codeSent && c != codeInDoubt {
			k.set(p, codeInDoubt)
		}
		return c
	}
	i := k.find(n)
	v := k.slots[i]
	c := code(v >> codeShift)
	if c == codeSent || c == codeInDoubt {
		return c
	}
	if v == 0 && 4*(k.used+1) > 3*len(k.slots) {
		k.resize(len(k.slots))
		i = k.find(n)
	}
	if v == 0 {
		k.used++
	}
	k.slots[i] = n | uint64(codeInDoubt)<<codeShift
	k.undo = append(k.undo, undoEntry{kind: undoNum, num: n, prev: c})
	return c
}

// setBatch records id as the batch's latest attempt, logging the previous.
func (k *known) setBatch(batch string, id int64) {
	k.undo = append(k.undo, undoEntry{kind: undoBatch, num: uint64(k.batches[batch]), str: batch})
	k.batches[batch] = id
}

// mark is a point in the undo log to go back to.
func (k *known) mark() int { return len(k.undo) }

// rollback undoes every set since mark m. A key added since keeps its slot
// with codeNone, which is the same as absent.
func (k *known) rollback(m int) {
	for i := len(k.undo) - 1; i >= m; i-- {
		switch e := k.undo[i]; e.kind {
		case undoNum:
			k.put(e.num, e.prev)
		case undoOther:
			k.putOther(e.str, e.prev)
		case undoBatch:
			if e.num == 0 {
				delete(k.batches, e.str)
			} else {
				k.batches[e.str] = int64(e.num)
			}
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
