package plan

import (
	"context"
	"crypto/sha256"
	"sync"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/state"
)

// heldStatus is what the state records of one of the campaign's recipients.
type heldStatus uint8

const (
	notHeld       heldStatus = iota
	heldSent                 // sent the body it would get now
	heldSentOther            // sent another body: the body changed since
	heldInDoubt
	heldFailed
)

type heldMore struct{ batch, reason string }

// heldSet is what the state records of the campaign's recipients: a byte
// each, and the batch and reason of those in doubt or failed.
type heldSet struct {
	status []heldStatus // per recipient of builder.phones; nil when the state records none
	more   map[int32]heldMore
}

func (h *heldSet) of(i int) heldStatus {
	if h.status == nil {
		return notHeld
	}
	return h.status[i]
}

// heldRecord is a state record as read ahead: what matching it needs, in
// 16 bytes.
type heldRecord struct {
	key    e164.Packed // 0 when the phone does not pack (see heldChunk.odd)
	ref    int32       // sent: index in heldChunk.sums, -1 for a hash that is no body's; else in heldChunk.more
	status heldStatus
}

// heldChunk is a run of state records in the order the state gave them.
type heldChunk struct {
	recs []heldRecord
	sums []bodySum // one per run of records that share a body hash
	more []heldMore
	odd  []string // the phones that do not pack, in order
}

const (
	heldChunkLen = 4096
	// readAhead is how many chunks are read while the lists still are: at
	// most 32 MB (16 bytes a record, and 16 more where each has a body
	// of its own), enough for a million records to be read in the scan's
	// shadow, while the state of ten million waits rather than add much
	// to what the plan holds.
	readAhead = 32 << 20 / (heldChunkLen * 32)
)

// readRecorded reads what rec records on another goroutine, up to
// readAhead chunks ahead of matchRecorded, which takes them in order; wait
// returns the reader's error once the chunks are all taken, or after the
// context is cancelled.
func readRecorded(ctx context.Context, rec Recorded) (chunks <-chan *heldChunk, wait func() error) {
	out := make(chan *heldChunk, readAhead)
	done := make(chan error, 1)
	go func() {
		defer close(out)
		var (
			cur      = &heldChunk{}
			lastHash string // of the chunk's last sent record, whose sum is at lastRef
			lastRef  int32
			haveLast bool
		)
		send := func() error {
			select {
			case out <- cur:
				cur, haveLast = &heldChunk{recs: make([]heldRecord, 0, heldChunkLen)}, false
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := rec.EachRecipient(ctx, func(r state.Recipient) error {
			var hr heldRecord
			switch r.Status {
			case state.Sent:
				hr.status = heldSent
				// The records of one attempt share a body hash, and those
				// of a shared body all do: it is decoded and kept once.
				if !haveLast || r.BodyHash != lastHash {
					lastHash, lastRef, haveLast = r.BodyHash, -1, true
					var sum bodySum
					if decodeSum(r.BodyHash, &sum) {
						lastRef = int32(len(cur.sums))
						cur.sums = append(cur.sums, sum)
					}
				}
				hr.ref = lastRef
			case state.InDoubt, state.Failed:
				hr.status = heldInDoubt
				if r.Status == state.Failed {
					hr.status = heldFailed
				}
				hr.ref = int32(len(cur.more))
				cur.more = append(cur.more, heldMore{batch: r.BatchID, reason: r.Reason})
			default:
				return nil // unsent: the same as no record
			}
			var ok bool
			if hr.key, ok = e164.Pack(r.Phone); !ok {
				cur.odd = append(cur.odd, r.Phone)
			}
			cur.recs = append(cur.recs, hr)
			if len(cur.recs) == heldChunkLen {
				return send()
			}
			return nil
		})
		if err == nil && len(cur.recs) > 0 {
			err = send()
		}
		done <- err
	}()
	return out, sync.OnceValue(func() error {
		for range out { // what is left after a cancel
		}
		return <-done
	})
}

// matchRecorded matches the state's records to the campaign's recipients,
// keeping a status per recipient. A number the campaign no longer has
// (excluded ones are still the campaign's) is listed as removed; of two
// records of one number, which a real state never gives, the later counts.
func (b *builder) matchRecorded(chunks <-chan *heldChunk) {
	h := &b.held
	for ch := range chunks {
		odd := ch.odd
		for _, r := range ch.recs {
			if r.key == 0 {
				b.p.Removed = append(b.p.Removed, odd[0])
				odd = odd[1:]
				continue
			}
			v, found := b.recipient(r.key)
			if !found {
				if !b.excludedSeen(r.key) {
					b.p.Removed = append(b.p.Removed, r.key.String())
				}
				continue
			}
			if h.status == nil {
				h.status = make([]heldStatus, b.phones.len())
				h.more = map[int32]heldMore{}
			}
			st := r.status
			switch {
			case st != heldSent:
				h.more[v] = ch.more[r.ref]
			case r.ref < 0 || ch.sums[r.ref] != b.sumOf(v):
				st = heldSentOther
			}
			h.status[v] = st
		}
	}
}

// sumOf is the sum of the body of recipient i.
func (b *builder) sumOf(i int32) bodySum {
	if b.shared {
		return b.bodies.sums.at(0)
	}
	return b.bodies.sums.at(int(b.bodyOf.at(int(i))))
}

// decodeSum reads the first half of a hash written as state.BodyHash
// writes it: 64 lower-case hex digits. Anything else is no body's.
func decodeSum(s string, dst *bodySum) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	var full [sha256.Size]byte
	for i := range full {
		hi, ok1 := lowerHex(s[2*i])
		lo, ok2 := lowerHex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		full[i] = hi<<4 | lo
	}
	*dst = bodySum(full[:16])
	return true
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// hold accounts for a recipient the state already records: whatever the
// campaign says now, it is not planned again.
func (b *builder) hold(phone e164.Packed, i int32, st heldStatus, key costKey) {
	s := &b.p.Summary
	switch st {
	case heldSent, heldSentOther:
		s.AlreadySent++
		// The state keeps the hash of a body, not the body: one sent
		// another body is priced as today's (Cost.AlreadySpentEstimated).
		b.spent[key]++
		if b.undelivered != nil && b.undeliveredSet[phone.String()] {
			b.undelivered[key]++
		}
		if st == heldSentOther {
			b.p.BodyChanged++
		}
	case heldInDoubt:
		s.InDoubt++
		b.p.InDoubt = append(b.p.InDoubt, Held{Phone: phone.String(), BatchID: b.held.more[i].batch})
	case heldFailed:
		s.Failed++
		m := b.held.more[i]
		b.p.Failed = append(b.p.Failed, Held{Phone: phone.String(), BatchID: m.batch, Reason: m.reason})
	}
}
