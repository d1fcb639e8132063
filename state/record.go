package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/rawjson"
)

// RecordIntent durably records that the batch is about to be sent: its
// recipients become InDoubt until an outcome is recorded. A recipient
// already sent or in doubt is refused with [ErrAlreadySent] and nothing is
// recorded; a failed one may be sent again.
func (s *State) RecordIntent(ctx context.Context, in Intent) error {
	if err := checkIntent(in); err != nil {
		return err
	}
	if s.w == nil {
		return ErrClosed
	}
	if err := s.w.do(ctx, func(t *txn) error { return t.intent(in) }); err != nil {
		return fmt.Errorf("record intent of batch %q: %w", in.BatchID, err)
	}
	return nil
}

// RecordOutcome durably records the outcome of the batch's latest intent.
//
// An outcome that is known is always worth keeping (without it the batch
// stays in doubt), so a cancelled ctx does not stop it: pass the context
// you have, even while shutting down.
func (s *State) RecordOutcome(ctx context.Context, batchID string, o Outcome) error {
	if err := checkOutcome(o); err != nil {
		return err
	}
	if s.w == nil {
		return ErrClosed
	}
	if err := s.w.do(context.WithoutCancel(ctx), func(t *txn) error { return t.outcome(batchID, o) }); err != nil {
		return fmt.Errorf("record outcome of batch %q: %w", batchID, err)
	}
	return nil
}

// RecordOutcomeAndIntent records the outcome of prevBatch and the intent of
// next in one transaction, so a sequential apply pays one commit per batch
// instead of two. Either both are recorded or neither is. Like
// [State.RecordIntent] it refuses when ctx is already cancelled: then record
// the outcome alone with [State.RecordOutcome].
func (s *State) RecordOutcomeAndIntent(ctx context.Context, prevBatch string, o Outcome, next Intent) error {
	if err := checkOutcome(o); err != nil {
		return err
	}
	if err := checkIntent(next); err != nil {
		return err
	}
	if s.w == nil {
		return ErrClosed
	}
	err := s.w.do(ctx, func(t *txn) error {
		if err := t.outcome(prevBatch, o); err != nil {
			return fmt.Errorf("record outcome of batch %q: %w", prevBatch, err)
		}
		t.changed = true
		if err := t.intent(next); err != nil {
			return fmt.Errorf("record intent of batch %q: %w", next.BatchID, err)
		}
		return nil
	})
	return err
}

// ForgetIntent removes the batch's latest intent: the API provably did not act
// on it (refused before it was written, 503 or 429 until retries ran out), so
// its recipients may be planned again.
func (s *State) ForgetIntent(ctx context.Context, batchID string) error {
	if s.w == nil {
		return ErrClosed
	}
	err := s.w.do(ctx, func(t *txn) error {
		a, err := t.finish(batchID, AttemptForgotten, Outcome{})
		if err != nil {
			return err
		}
		t.changed = true
		if err := t.releaseClaims(phoneList(a.phones), a.id); err != nil {
			return err
		}
		return t.setAll(a.phones, Unsent)
	})
	if err != nil {
		return fmt.Errorf("forget intent of batch %q: %w", batchID, err)
	}
	return nil
}

// Resolved is what a resolve changed.
type Resolved struct {
	// Moved counts the recipients moved as asked.
	Moved int
	// ByReport counts those asked to be unsent whom a delivery report
	// proves the provider acted on: recorded sent, resolved by that
	// report, rather than sent again (see State.resolve).
	ByReport int
}

// Resolve records the operator's decision on in-doubt recipients: asSent
// marks them sent, otherwise they are forgotten so the next apply sends them
// again, and in a project's state their places in the frequency cap are
// given back. batchID "" means every in-doubt batch.
func (s *State) Resolve(ctx context.Context, batchID string, asSent bool) (Resolved, error) {
	to, attemptState := Unsent, AttemptResolvedUnsent
	if asSent {
		to, attemptState = Sent, AttemptResolvedSent
	}
	// In-doubt recipients belong to attempts still open (no outcome) or
	// recorded as in doubt.
	r, err := s.resolve(ctx, batchID, qResolveInDoubt, qResolveInDoubtBatch, InDoubt, to, attemptState)
	if err != nil {
		return Resolved{}, fmt.Errorf("resolve in-doubt recipients: %w", err)
	}
	return r, nil
}

// ResolveFailed records the operator's decision to send failed recipients
// again (the cause of the API's refusal was fixed, say): the next apply
// plans them, and their places in the frequency cap are given back.
// batchID "" means every failed batch.
func (s *State) ResolveFailed(ctx context.Context, batchID string) (Resolved, error) {
	r, err := s.resolve(ctx, batchID, qResolveFailed, qResolveFailedBatch, Failed, Unsent, AttemptResolvedUnsent)
	if err != nil {
		return Resolved{}, fmt.Errorf("resolve failed recipients: %w", err)
	}
	return r, nil
}

// resolveAttempt is an attempt a resolve moves.
type resolveAttempt struct {
	id                  int64
	phones              string
	batch, body, planID string
	started             time.Time
}

// resolve moves the recipients whose status is from, in the attempts that
// all (or byBatch, of batchID) reads, to the status to, and finishes those
// attempts as attemptState.
//
// Unsent means the next apply messages them again; a recipient that a
// delivery report recorded in the state proves was messaged (delivered;
// for one in doubt, any report of the attempt's time, which the provider
// could only make of a message it took) is not: it is recorded
// sent, resolved by that report, in an attempt of its own after the one
// resolved, as receive does.
func (s *State) resolve(ctx context.Context, batchID string, all, byBatch stmt, from, to Status, attemptState AttemptState) (Resolved, error) {
	if s.w == nil {
		return Resolved{}, ErrClosed
	}
	var res Resolved
	err := s.w.do(ctx, func(t *txn) error {
		res = Resolved{}
		q, args := all, []any{}
		if batchID != "" {
			if _, ok := t.w.known.batches[batchID]; !ok {
				return refuse("no batch %q in state", batchID)
			}
			q, args = byBatch, []any{batchID}
		}
		rows, err := t.conn.QueryContext(t.ctx, t.w.s.q[q], t.w.s.args(args...)...)
		if err != nil {
			return err
		}
		var attempts []resolveAttempt
		for rows.Next() {
			var a resolveAttempt
			var started string
			if err := rows.Scan(&a.id, &a.phones, &a.batch, &a.body, &a.planID, &started); err != nil {
				rows.Close()
				return err
			}
			a.started = parseTime(started)
			attempts = append(attempts, a)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(attempts) == 0 {
			return nil
		}
		k := t.w.known
		for _, a := range attempts {
			var moved []string
			if err := eachPhone(a.phones, func(p string) {
				if k.get(p) == from {
					moved = append(moved, p)
				}
			}); err != nil {
				return err
			}
			if to == Unsent {
				var proven int
				if moved, proven, err = t.sentByReport(a, moved, from == InDoubt); err != nil {
					return err
				}
				res.ByReport += proven
			}
			for _, p := range moved {
				k.set(p, to)
			}
			res.Moved += len(moved)
			// Resolved as not sent: the operator says nobody was messaged,
			// so their places in the frequency cap go back (as sent, they
			// keep them).
			if to == Unsent {
				if err := t.releaseClaims(moved, a.id); err != nil {
					return err
				}
			}
		}
		// One update per attempt, by its key: resolve is rare, and the
		// attempts need no index on their state.
		for _, a := range attempts {
			if _, err := t.exec(qSetAttempt, string(attemptState), t.now, a.id); err != nil {
				return err
			}
		}
		t.changed = true
		return nil
	})
	return res, err
}

// sentByReport records sent, each resolved by its report, the recipients
// of phones (of attempt a) that a report of the campaign proves were
// messaged, and returns the others and how many it recorded. A delivered
// report proves it whatever attempt it was about: the campaign's message
// reached the phone. A pending one (ENROUTE, ACCEPTED, or a status the
// mapping does not name, a case slip among them) not older than the
// attempt (the ten minutes a provider's clock may run behind ours aside)
// is the provider's word on a message it has, even one it refused (failed);
// for one in doubt (inDoubt) so is an undelivered one, and a report of the
// number that matched no campaign. One about an earlier attempt proves
// nothing of this one. A state without reports has none.
func (t *txn) sentByReport(a resolveAttempt, phones []string, inDoubt bool) ([]string, int, error) {
	s := t.w.s
	if s.unscoped || s.schema < 5 || len(phones) == 0 {
		return phones, 0, nil
	}
	since := a.started.Add(-10 * time.Minute)
	left := phones[:0:0]
	n := 0
	for _, p := range phones {
		proofs, err := readProofs(t.conn.QueryContext(t.ctx, s.q[qProofsOf], s.args(p)...))
		if err != nil {
			return nil, 0, err
		}
		i := slices.IndexFunc(proofs, func(rp Report) bool {
			return rp.Delivery == Delivered || !rp.At.Before(since) && (inDoubt || rp.Delivery == Pending)
		})
		if i < 0 && inDoubt {
			// A report of the number that matched no campaign (another
			// campaign messaged it too) may be about this message: the
			// safe side keeps the recipient sent.
			if proofs, err = readProofs(t.conn.QueryContext(t.ctx, s.q[qUnmatchedProofsOf], p)); err != nil {
				return nil, 0, err
			}
			i = slices.IndexFunc(proofs, func(rp Report) bool { return !rp.At.Before(since) })
		}
		if i < 0 {
			left = append(left, p)
			continue
		}
		if err := t.putByReport(a, proofs[i]); err != nil {
			return nil, 0, err
		}
		n++
	}
	return left, n, nil
}

// putByReport records rp's recipient sent, resolved by rp, in an attempt
// of its own after a (its batch, body and plan), as receive does.
func (t *txn) putByReport(a resolveAttempt, rp Report) error {
	reason, phones, ids := byReport(rp, rp.Phone)
	var id int64
	if err := t.queryRow(qPutAttempt, t.w.s.args(a.batch, string(AttemptResolvedSent), a.body, 1, 0, "", reason, t.now, t.now, a.planID, phones, rp.ProviderStatus, ids)...).Scan(&id); err != nil {
		return err
	}
	t.w.known.set(rp.Phone, Sent)
	return nil
}

func checkIntent(in Intent) error {
	switch {
	case in.BatchID == "":
		return errors.New("record intent: empty batch id")
	case len(in.Phones) == 0:
		return fmt.Errorf("record intent of batch %q: no recipients", in.BatchID)
	case in.BodyHash == "":
		return fmt.Errorf("record intent of batch %q: empty body hash", in.BatchID)
	}
	return nil
}

func checkOutcome(o Outcome) error {
	if len(o.Parts) > 0 {
		return nil // checked against the intent (checkParts)
	}
	switch o.Status {
	case Sent, Failed, InDoubt:
		return nil
	}
	return fmt.Errorf("record outcome: invalid status %q", o.Status)
}

func (t *txn) intent(in Intent) error {
	_, err := t.admit(in, true)
	return err
}

func (t *txn) outcome(batchID string, o Outcome) error {
	if len(o.Parts) > 0 {
		return t.parts(batchID, o)
	}
	a, err := t.finish(batchID, o.Status.attempt(), o)
	if err != nil {
		return err
	}
	t.changed = true
	return t.setAll(a.phones, o.Status)
}

// parts records an outcome per recipient: the intent's attempt becomes
// split, and each part an attempt of its own after it, finished, under the
// same batch, so that each recipient's latest attempt says what became of
// it. The parts must hold the intent's recipients, each once.
func (t *txn) parts(batchID string, o Outcome) error {
	if done, err := t.whole(batchID, o); done || err != nil {
		return err
	}
	a, err := t.finish(batchID, AttemptSplit, o)
	if err != nil {
		return err
	}
	if err := checkParts(a.phones, o.Parts); err != nil {
		return refusal{err}
	}
	for _, p := range o.Parts {
		if len(p.Phones) == 0 {
			continue
		}
		st := p.Status.attempt()
		if p.Status == Unsent {
			st = AttemptForgotten
		}
		t.w.buf = rawjson.AppendStrings(t.w.buf[:0], p.Phones)
		ids := ""
		if p.IDs != nil {
			ids = string(rawjson.AppendStrings(nil, p.IDs))
		}
		var id int64
		if err := t.queryRow(qPutAttempt, t.w.s.args(batchID, string(st), a.bodyHash, len(p.Phones), o.HTTPStatus, o.RequestID, p.Reason,
			t.now, t.now, a.planID, string(t.w.buf), p.ProviderStatus, ids)...).Scan(&id); err != nil {
			return err
		}
		// The part's ids go into the index of message ids when it is next
		// read (ids_pending, see indexMessages), not here.
		t.w.known.setBatch(batchID, id)
		for _, ph := range p.Phones {
			t.w.known.set(ph, p.Status)
		}
		if p.Status == Unsent {
			if err := t.releaseClaims(p.Phones, a.id); err != nil {
				return err
			}
		}
	}
	t.changed = true
	return nil
}

// whole records an outcome of one part that holds the intent's recipients
// in the intent's order on the intent's own attempt, as a plain outcome is,
// with the part's provider status and ids: an answer that gives each
// recipient a message id, every one sent, is the common case, and a part
// of its own would write the batch's phones a second time. It reports
// false, having changed nothing, for any other outcome: parts records it.
func (t *txn) whole(batchID string, o Outcome) (bool, error) {
	if len(o.Parts) != 1 {
		return false, nil
	}
	p := o.Parts[0]
	id, ok := t.w.known.batches[batchID]
	switch p.Status {
	case Sent, Failed, InDoubt:
	default:
		return false, nil // parts refuses it, or splits it
	}
	if !ok || (p.IDs != nil && len(p.IDs) != len(p.Phones)) {
		return false, nil // parts says why, or splits it
	}
	ids := ""
	if p.IDs != nil {
		ids = string(rawjson.AppendStrings(nil, p.IDs))
	}
	t.w.buf = rawjson.AppendStrings(t.w.buf[:0], p.Phones)
	wrote := t.wrote
	// The row is the intent's only if its phones are the part's, in order:
	// what is kept in memory after is the part's, not read back.
	var one int
	err := t.queryRow(qFinishWhole, string(p.Status.attempt()), o.HTTPStatus, o.RequestID, p.Reason, t.now, p.ProviderStatus, ids, id, string(t.w.buf)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		t.wrote = wrote // it changed nothing
		return false, nil
	}
	if err != nil {
		return false, err
	}
	t.changed = true
	for _, ph := range p.Phones {
		t.w.known.set(ph, p.Status)
	}
	return true, nil
}

// checkParts refuses parts that do not hold the intent's recipients
// (phones, a JSON array) each exactly once, or that give a recipient a
// status an outcome cannot have.
func checkParts(phones string, parts []Part) error {
	want := map[string]bool{}
	if err := eachPhone(phones, func(p string) { want[p] = true }); err != nil {
		return err
	}
	n := 0
	for _, part := range parts {
		switch part.Status {
		case Sent, Failed, InDoubt, Unsent:
		default:
			return fmt.Errorf("record outcome: a part with status %s", part.Status)
		}
		if part.IDs != nil && len(part.IDs) != len(part.Phones) {
			return fmt.Errorf("record outcome: a part of %d recipients with %d provider ids", len(part.Phones), len(part.IDs))
		}
		for _, p := range part.Phones {
			if !want[p] {
				return fmt.Errorf("record outcome: %s is not a recipient of the intent, or is in two parts", e164.Mask(p))
			}
			delete(want, p)
			n++
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("record outcome: %d recipients of the intent are in no part", len(want))
	}
	return nil
}

// setAll sets the status of every phone of an attempt's JSON array.
func (t *txn) setAll(phones string, c Status) error {
	k := t.w.known
	return eachPhone(phones, func(p string) { k.set(p, c) })
}

// finished is what finish returns of the attempt it ended.
type finished struct {
	id                       int64
	phones, bodyHash, planID string
}

// finish ends the batch's latest attempt, which must still be an intent
// awaiting its outcome, as st with o's details, and returns its phones:
// one statement, which changes nothing when the attempt is not open.
func (t *txn) finish(batchID string, st AttemptState, o Outcome) (a finished, err error) {
	id, ok := t.w.known.batches[batchID]
	if !ok {
		return a, refusal{fmt.Errorf("no intent recorded: %w", ErrNoIntent)}
	}
	wrote := t.wrote
	a.id = id
	err = t.queryRow(qFinishAttempt, string(st), o.HTTPStatus, o.RequestID, o.Reason, t.now, id).Scan(&a.phones, &a.bodyHash, &a.planID)
	if errors.Is(err, sql.ErrNoRows) {
		t.wrote = wrote // it changed nothing
		var cur, phones string
		if err := t.queryRow(qAttempt, id).Scan(&cur, &phones); err != nil {
			return a, err
		}
		return a, refusal{fmt.Errorf("its latest attempt is already %s: %w", cur, ErrNoIntent)}
	}
	return a, err
}

// phoneList is an attempt's JSON array of phones as a slice.
func phoneList(phones string) []string {
	var ps []string
	eachPhone(phones, func(p string) { ps = append(ps, p) })
	return ps
}
