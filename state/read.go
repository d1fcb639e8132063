package state

import (
	"github.com/smsform/smsform/internal/e164"

	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Recipients calls fn for every recorded recipient, ordered by phone. To
// sort, it holds every record in memory (about 32 bytes a recipient, and
// the attempts' phones);
// [State.EachRecipient] is faster and streams. fn's error stops the walk
// and is returned as is.
func (s *State) Recipients(ctx context.Context, fn func(Recipient) error) error {
	if s.db == nil {
		return nil
	}
	if s.schema < 2 {
		return s.recipientsV1(ctx, "ORDER BY phone", fn)
	}
	// Gathered in chunks, then copied once to a slice of the right size:
	// growing one slice by appending would copy and allocate several times
	// its final size.
	const chunk = 1 << 16
	var chunks [][]sortEntry
	n, packed := 0, true
	if err := s.eachRecord(ctx, func(phone string, a *derived, at int) error {
		if n%chunk == 0 {
			chunks = append(chunks, make([]sortEntry, 0, chunk))
		}
		k, ok := e164.Pack(phone)
		packed = packed && ok
		c := &chunks[len(chunks)-1]
		*c = append(*c, sortEntry{k, phone, a, int32(at)})
		n++
		return nil
	}); err != nil {
		return err
	}
	all := make([]sortEntry, 0, n)
	for i, c := range chunks {
		all = append(all, c...)
		chunks[i] = nil
	}
	if packed {
		all = radixSort(all)
	} else {
		slices.SortFunc(all, func(x, y sortEntry) int { return strings.Compare(x.phone, y.phone) })
	}
	for _, e := range all {
		if err := fn(e.a.recipient(e.phone, int(e.at))); err != nil {
			return err
		}
	}
	return nil
}

type sortEntry struct {
	key   e164.Packed // the phone packed (which sorts as the string does), when every phone packs
	phone string
	a     *derived
	at    int32 // the phone's place in its attempt
}

// radixSort sorts es by key, least significant 16 bits first, skipping
// the digits all keys share (numbers end in zero nibbles, and share their
// first digits): a few linear passes instead of n log n comparisons.
func radixSort(es []sortEntry) []sortEntry {
	if len(es) < 2 {
		return es
	}
	var counts [4][1 << 16]int
	for _, e := range es {
		for d := range 4 {
			counts[d][uint16(e.key>>(16*d))]++
		}
	}
	tmp := make([]sortEntry, len(es))
	for d := range 4 {
		c := &counts[d]
		if c[uint16(es[0].key>>(16*d))] == len(es) {
			continue // one value for all: nothing to do
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, e := range es {
			b := uint16(e.key >> (16 * d))
			tmp[c[b]] = e
			c[b]++
		}
		es, tmp = tmp, es
	}
	return es
}

// EachRecipient calls fn for every recorded recipient once, in no
// particular order: the fastest way to read them all. It streams, except
// that recipients of failed attempts are held until the end, since a later
// attempt may have sent them again. fn's error stops the walk and is
// returned as is.
func (s *State) EachRecipient(ctx context.Context, fn func(Recipient) error) error {
	if s.db == nil {
		return nil
	}
	if s.schema < 2 {
		return s.recipientsV1(ctx, "", fn)
	}
	return s.eachRecord(ctx, func(phone string, a *derived, at int) error { return fn(a.recipient(phone, at)) })
}

// Counts returns how many recipients have each status: Sent, Failed and
// InDoubt are keys, zero included; Suppressed is when anyone was.
func (s *State) Counts(ctx context.Context) (map[Status]int, error) {
	m := map[Status]int{Sent: 0, Failed: 0, InDoubt: 0}
	if s.db == nil {
		return m, nil
	}
	if s.schema < 2 {
		return s.countsV1(ctx, m)
	}
	err := s.eachRecord(ctx, func(_ string, a *derived, _ int) error {
		m[a.status]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// derived is what a recipient's record takes from its latest attempt.
type derived struct {
	status                    Status
	batchID, bodyHash, reason string
	at                        time.Time
	requestID, providerStatus string
	ids                       []string // the provider's message ids, by the phone's place in the attempt; nil: none
}

// recipient is the record of phone, at place at of its attempt.
func (a *derived) recipient(phone string, at int) Recipient {
	r := Recipient{Phone: phone, Status: a.status, BatchID: a.batchID, BodyHash: a.bodyHash, At: a.at, Reason: a.reason,
		ProviderStatus: a.providerStatus, ProviderBatchID: a.requestID}
	if at < len(a.ids) {
		r.ProviderID = a.ids[at]
	}
	return r
}

// eachRecord calls fn for every recipient with a record, once each, in no
// particular order, in one pass over the attempts, oldest first.
//
// A recipient's record is its latest attempt's, and none when that attempt
// was forgotten or resolved as unsent. A recipient is in more than one
// attempt only when an earlier one let it go (failed, forgotten or
// resolved as unsent: an intent refuses anyone sent or in doubt), or when
// a delivery report resolved it while in doubt. So the recipients of a
// sent attempt are final when it is read, and only those of failed,
// suppressed and in-doubt attempts wait, in a map, for a later attempt
// that may take them over.
func (s *State) eachRecord(ctx context.Context, fn func(phone string, a *derived, at int) error) error {
	rows, err := s.db.QueryContext(ctx, s.q[qEachRecord], s.args()...)
	if err != nil {
		return fmt.Errorf("read state %s: %w", s.loc, err)
	}
	defer rows.Close()
	type held struct {
		a  *derived
		at int
	}
	var failed map[string]held
	var fnErr error
	for rows.Next() {
		var batchID, st, bodyHash, phones, reason, started, finished, planID, requestID, providerStatus, ids string
		if err := rows.Scan(&batchID, &st, &bodyHash, &phones, &reason, &started, &finished, &planID, &requestID, &providerStatus, &ids); err != nil {
			return fmt.Errorf("read state %s: %w", s.loc, err)
		}
		if s.withoutPlan != "" && planID == s.withoutPlan {
			continue
		}
		c := attemptStatus(st)
		var a *derived
		if c != Unsent {
			at := finished
			if at == "" {
				at = started
			}
			if AttemptState(st) == AttemptResolvedSent && !strings.HasPrefix(reason, reportResolvedPrefix) {
				reason = resolvedSentReason
			}
			a = &derived{status: c, batchID: batchID, bodyHash: bodyHash, reason: reason, at: parseTime(at),
				requestID: requestID, providerStatus: providerStatus}
			if ids != "" {
				a.ids = phoneList(ids)
			}
		}
		i := 0
		err := eachPhone(phones, func(p string) {
			at := i
			i++
			if fnErr != nil {
				return
			}
			if len(failed) > 0 {
				delete(failed, p)
			}
			switch c {
			case Unsent:
			case Failed, Suppressed, InDoubt:
				if failed == nil {
					failed = map[string]held{}
				}
				failed[p] = held{a, at} // until a later attempt takes it over
			default:
				fnErr = fn(p, a, at)
			}
		})
		if fnErr != nil {
			return fnErr
		}
		if err != nil {
			return fmt.Errorf("read state %s: %w", s.loc, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read state %s: %w", s.loc, err)
	}
	rows.Close()
	for p, h := range failed {
		if err := fn(p, h.a, h.at); err != nil {
			return err
		}
	}
	return nil
}

// recipientsV1 reads a version 1 state's recipients table, for a read-only
// view of a state no writer has migrated yet.
func (s *State) recipientsV1(ctx context.Context, order string, fn func(Recipient) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT phone, status, batch_id, body_hash, at, reason FROM recipients `+order)
	if err != nil {
		return fmt.Errorf("read state %s: %w", s.loc, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Recipient
		var st, at string
		if err := rows.Scan(&r.Phone, &st, &r.BatchID, &r.BodyHash, &at, &r.Reason); err != nil {
			return fmt.Errorf("read state %s: %w", s.loc, err)
		}
		r.Status, r.At = parseStatus(st), parseTime(at)
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return nil
}

func (s *State) countsV1(ctx context.Context, m map[Status]int) (map[Status]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT status, count(*) FROM recipients GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("read state %s: %w", s.loc, err)
		}
		m[parseStatus(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return m, nil
}

// loadKnown reads what the file records of each recipient and batch, for
// a writer: one pass over the attempts, the latest one winning.
func (s *State) loadKnown(ctx context.Context) (*known, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, s.q[qKnownSize], s.args()...).Scan(&n); err != nil {
		return nil, err
	}
	k := newKnown(int(n))
	rows, err := s.db.QueryContext(ctx, s.q[qKnownRows], s.args()...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var batchID, st, phones string
		if err := rows.Scan(&id, &batchID, &st, &phones); err != nil {
			return nil, err
		}
		// The batch's latest attempt is the one its outcome finishes: a
		// suppressed one, recorded after the intent it was trimmed from,
		// is never finished.
		if _, ok := k.batches[batchID]; !ok || AttemptState(st) != AttemptSuppressed {
			k.batches[batchID] = id
		}
		c := attemptStatus(st)
		if err := eachPhone(phones, func(p string) { k.load(p, c) }); err != nil {
			return nil, err
		}
	}
	return k, rows.Err()
}

// AttemptState is where one attempt at a batch stands.
type AttemptState string

const (
	AttemptIntent         AttemptState = "intent" // no outcome recorded: in doubt if no apply is running
	AttemptSent           AttemptState = "sent"
	AttemptFailed         AttemptState = "failed"
	AttemptInDoubt        AttemptState = "in_doubt"
	AttemptForgotten      AttemptState = "forgotten"
	AttemptResolvedSent   AttemptState = "resolved_sent"
	AttemptResolvedUnsent AttemptState = "resolved_unsent"
	// AttemptSplit: the provider answered per recipient, and the attempt's
	// parts, recorded after it, say what became of each.
	AttemptSplit      AttemptState = "split"
	AttemptSuppressed AttemptState = "suppressed" // opted out after the plan: not sent
)

// Attempt is the record of one attempt at sending a batch: its intent and,
// once known, its outcome.
type Attempt struct {
	ID         int64
	BatchID    string
	State      AttemptState
	BodyHash   string
	Recipients int
	HTTPStatus int
	RequestID  string
	Reason     string
	StartedAt  time.Time
	FinishedAt time.Time // zero while State is AttemptIntent
}

// Attempts calls fn for every attempt, oldest first.
func (s *State) Attempts(ctx context.Context, fn func(Attempt) error) error {
	if s.db == nil {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, s.q[qAttempts], s.args()...)
	if err != nil {
		return fmt.Errorf("read state %s: %w", s.loc, err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Attempt
		var st, started, finished string
		if err := rows.Scan(&a.ID, &a.BatchID, &st, &a.BodyHash, &a.Recipients, &a.HTTPStatus, &a.RequestID, &a.Reason, &started, &finished); err != nil {
			return fmt.Errorf("read state %s: %w", s.loc, err)
		}
		a.State, a.StartedAt, a.FinishedAt = AttemptState(st), parseTime(started), parseTime(finished)
		if err := fn(a); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return nil
}
