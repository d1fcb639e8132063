package state

import (
	"context"
	"fmt"
	"time"
)

// Recipients calls fn for every recorded recipient, ordered by phone. It
// streams: memory does not grow with the campaign. fn's error stops the walk
// and is returned as is.
func (s *State) Recipients(ctx context.Context, fn func(Recipient) error) error {
	if s.db == nil {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT phone, status, batch_id, body_hash, at, reason FROM recipients ORDER BY phone`)
	if err != nil {
		return fmt.Errorf("read state %s: %w", s.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Recipient
		var st, at string
		if err := rows.Scan(&r.Phone, &st, &r.BatchID, &r.BodyHash, &at, &r.Reason); err != nil {
			return fmt.Errorf("read state %s: %w", s.path, err)
		}
		r.Status, r.At = Status(st), parseTime(at)
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read state %s: %w", s.path, err)
	}
	return nil
}

// Counts returns how many recipients have each status; every [Status] is a
// key, zero included.
func (s *State) Counts(ctx context.Context) (map[Status]int, error) {
	m := map[Status]int{Sent: 0, Failed: 0, InDoubt: 0}
	if s.db == nil {
		return m, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT status, count(*) FROM recipients GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("read state %s: %w", s.path, err)
		}
		m[Status(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.path, err)
	}
	return m, nil
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
	rows, err := s.db.QueryContext(ctx, `SELECT id, batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at FROM attempts ORDER BY id`)
	if err != nil {
		return fmt.Errorf("read state %s: %w", s.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Attempt
		var st, started, finished string
		if err := rows.Scan(&a.ID, &a.BatchID, &st, &a.BodyHash, &a.Recipients, &a.HTTPStatus, &a.RequestID, &a.Reason, &started, &finished); err != nil {
			return fmt.Errorf("read state %s: %w", s.path, err)
		}
		a.State, a.StartedAt, a.FinishedAt = AttemptState(st), parseTime(started), parseTime(finished)
		if err := fn(a); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read state %s: %w", s.path, err)
	}
	return nil
}

// CreatedAt is when the state was created (zero for an empty view).
func (s *State) CreatedAt() time.Time { return s.createdAt }
