package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/smsform/smsform/internal/e164"
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
		id, err := t.openAttempt(batchID)
		if err != nil {
			return err
		}
		if _, err := t.exec("forgetRecipients", id); err != nil {
			return err
		}
		if _, err := t.exec("finishAttempt", "forgotten", 0, "", "", t.now, id); err != nil {
			return err
		}
		t.changed = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("forget intent of batch %q: %w", batchID, err)
	}
	return nil
}

// Resolve records the operator's decision on in-doubt recipients: asSent
// marks them sent, otherwise they are forgotten so the next apply sends them
// again. batchID "" means every in-doubt batch. It returns how many
// recipients changed.
func (s *State) Resolve(ctx context.Context, batchID string, asSent bool) (int, error) {
	if s.w == nil {
		return 0, ErrClosed
	}
	var n int64
	err := s.w.do(ctx, func(t *txn) error {
		n = 0
		// In-doubt recipients belong to attempts still open (no outcome)
		// or recorded as in doubt; they are found through those attempts.
		open, args := `SELECT id FROM attempts WHERE state IN ('intent', 'in_doubt')`, []any{}
		if batchID != "" {
			var known int
			if err := t.tx.QueryRowContext(t.ctx, `SELECT count(*) FROM attempts WHERE batch_id = ?`, batchID).Scan(&known); err != nil {
				return err
			}
			if known == 0 {
				return refuse("no batch %q in state", batchID)
			}
			open, args = open+" AND batch_id = ?", []any{batchID}
		}
		var res sql.Result
		var err error
		attemptState := "resolved_unsent"
		if asSent {
			attemptState = "resolved_sent"
			res, err = t.tx.ExecContext(t.ctx, `UPDATE recipients SET status = 'sent', reason = 'resolved as sent by the operator', at = ?
				WHERE status = 'in_doubt' AND attempt_id IN (`+open+`)`, append([]any{t.now}, args...)...)
		} else {
			res, err = t.tx.ExecContext(t.ctx, `DELETE FROM recipients WHERE status = 'in_doubt' AND attempt_id IN (`+open+`)`, args...)
		}
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		res, err = t.tx.ExecContext(t.ctx, `UPDATE attempts SET state = ?, finished_at = ? WHERE id IN (`+open+`)`,
			append([]any{attemptState, t.now}, args...)...)
		if err != nil {
			return err
		}
		a, err := res.RowsAffected()
		if err != nil {
			return err
		}
		t.changed = n > 0 || a > 0
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("resolve in-doubt recipients: %w", err)
	}
	return int(n), nil
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
	switch o.Status {
	case Sent, Failed, InDoubt:
		return nil
	}
	return fmt.Errorf("record outcome: invalid status %q", o.Status)
}

func (t *txn) intent(in Intent) error {
	var id int64
	if err := t.queryRow("insertAttempt", in.BatchID, in.BodyHash, len(in.Phones), t.now).Scan(&id); err != nil {
		return err
	}
	for ps := range slices.Chunk(in.Phones, upsertChunk) {
		st, err := t.w.upsert(len(ps))
		if err != nil {
			return err
		}
		args := make([]any, 0, 5*len(ps))
		for _, p := range ps {
			args = append(args, p, in.BatchID, id, in.BodyHash, t.now)
		}
		res, err := t.tx.StmtContext(t.ctx, st).ExecContext(t.ctx, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n < int64(len(ps)) {
			return t.refuseIntent(ps, id)
		}
	}
	t.changed = true
	return nil
}

// refuseIntent names a recipient of ps that the upsert left alone: one
// already sent or in doubt (possibly by an earlier row of this intent).
func (t *txn) refuseIntent(ps []string, id int64) error {
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p] {
			return refusal{fmt.Errorf("%s is listed twice: %w", e164.Mask(p), ErrAlreadySent)}
		}
		seen[p] = true
		var st string
		var attempt int64
		if err := t.tx.QueryRowContext(t.ctx, `SELECT status, attempt_id FROM recipients WHERE phone = ?`, p).Scan(&st, &attempt); err != nil {
			return err
		}
		if attempt != id {
			return refusal{fmt.Errorf("%s is already %s: %w", e164.Mask(p), st, ErrAlreadySent)}
		}
	}
	return refusal{fmt.Errorf("a recipient is already sent or in doubt: %w", ErrAlreadySent)}
}

func (t *txn) outcome(batchID string, o Outcome) error {
	id, err := t.openAttempt(batchID)
	if err != nil {
		return err
	}
	if _, err := t.exec("finishAttempt", string(o.Status), o.HTTPStatus, o.RequestID, o.Reason, t.now, id); err != nil {
		return err
	}
	if _, err := t.exec("setOutcome", string(o.Status), o.Reason, t.now, id); err != nil {
		return err
	}
	t.changed = true
	return nil
}

// openAttempt returns the batch's latest attempt, which must still be an
// intent awaiting its outcome.
func (t *txn) openAttempt(batchID string) (int64, error) {
	var id int64
	var st string
	err := t.queryRow("latestAttempt", batchID).Scan(&id, &st)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, refusal{fmt.Errorf("no intent recorded: %w", ErrNoIntent)}
	}
	if err != nil {
		return 0, err
	}
	if st != "intent" {
		return 0, refusal{fmt.Errorf("its latest attempt is already %s: %w", st, ErrNoIntent)}
	}
	return id, nil
}
