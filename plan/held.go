package plan

import (
	"context"
	"crypto/sha256"

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

// loadRecorded reads what rec records, matching each record to the
// campaign's recipients as it comes: nothing of the state is kept but a
// status per recipient. A number the campaign no longer has (excluded ones
// are still the campaign's) is listed as removed; of two records of one
// number, which a real state never gives, the later counts.
func (b *builder) loadRecorded(ctx context.Context, rec Recorded) error {
	var (
		lastHash string
		lastSum  bodySum
		lastOK   bool
	)
	return rec.EachRecipient(ctx, func(r state.Recipient) error {
		var st heldStatus
		switch r.Status {
		case state.Sent:
			st = heldSent
		case state.InDoubt:
			st = heldInDoubt
		case state.Failed:
			st = heldFailed
		default:
			return nil // unsent: the same as no record
		}
		k, ok := e164.Pack(r.Phone)
		v, found := int32(0), false
		if ok {
			v, found = b.recipient(k)
		}
		if !found {
			if !ok || !b.excludedSeen(k) {
				b.p.Removed = append(b.p.Removed, r.Phone)
			}
			return nil
		}
		h := &b.held
		if h.status == nil {
			h.status = make([]heldStatus, b.phones.len())
			h.more = map[int32]heldMore{}
		}
		switch st {
		case heldSent:
			// The records of one attempt share a body hash, and those of a
			// shared body all do: it is decoded once.
			if r.BodyHash != lastHash || lastHash == "" {
				lastHash, lastOK = r.BodyHash, decodeSum(r.BodyHash, &lastSum)
			}
			if !lastOK || lastSum != b.sumOf(v) {
				st = heldSentOther
			}
		default:
			h.more[v] = heldMore{batch: r.BatchID, reason: r.Reason}
		}
		h.status[v] = st
		return nil
	})
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
