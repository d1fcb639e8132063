package state

import "github.com/smsform/smsform/internal/e164"

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
