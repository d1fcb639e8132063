// Package state keeps a campaign's delivery record: one SQLite file
// (modernc.org/sqlite) that says, per recipient, whether a message was sent,
// failed or is in doubt, and per batch its intent and outcome. Every change is
// one durable transaction whose cost does not grow with the campaign, so a
// kill -9 at any instant loses no reported outcome and corrupts nothing.
//
// [Open] takes an exclusive lock (a sibling ".lock" file) that the kernel
// releases when the process dies; [OpenReadOnly] neither locks, creates nor
// changes anything, for plan and state list.
package state

import (
	"context"
	"errors"
	"time"
)

// Status is what is known of one recipient.
type Status string

const (
	Sent    Status = "sent"
	Failed  Status = "failed"
	InDoubt Status = "in_doubt" // intent recorded, outcome unknown
)

// ErrLocked is wrapped by the *LockedError Open returns when another process holds the lock.
var ErrLocked = errors.New("state is locked")

// LockedError says who holds the lock.
type LockedError struct {
	Path    string
	Host    string
	PID     int
	Started time.Time
}

func (e *LockedError) Error() string { panic("todo") }
func (e *LockedError) Unwrap() error { return ErrLocked }

// ErrLineage is returned when a state file belongs to another campaign.
var ErrLineage = errors.New("state belongs to another campaign")

// Options tune Open.
type Options struct {
	Campaign    string        // the campaign's name; a state of another name is ErrLineage
	LockTimeout time.Duration // 0: fail at once when locked
}

// State is an open state file.
type State struct{}

// Open opens (creating if needed) the state at path and locks it.
func Open(ctx context.Context, path string, opts Options) (*State, error) { panic("todo") }

// OpenReadOnly opens an existing state without locking or changing it. A
// missing file is not an error: it returns an empty view (lineage "", serial 0).
func OpenReadOnly(path string) (*State, error) { panic("todo") }

// Close releases the lock and the file.
func (s *State) Close() error { panic("todo") }

// Lineage is the random id given at creation; Serial is bumped by every change.
func (s *State) Lineage() string { panic("todo") }
func (s *State) Serial() int64   { panic("todo") }
func (s *State) Campaign() string { panic("todo") }

// Recipient is the record of one recipient.
type Recipient struct {
	Phone    string
	Status   Status
	BatchID  string
	BodyHash string // hex SHA-256 of the body sent
	At       time.Time
	Reason   string // for Failed
}

// Recipients calls fn for every recorded recipient, ordered by phone.
func (s *State) Recipients(ctx context.Context, fn func(Recipient) error) error { panic("todo") }

// Intent is a batch about to be sent.
type Intent struct {
	BatchID  string
	Phones   []string
	BodyHash string
}

// RecordIntent durably records that the batch is about to be sent: its
// recipients become InDoubt until an outcome is recorded.
func (s *State) RecordIntent(ctx context.Context, in Intent) error { panic("todo") }

// Outcome is what happened to a batch.
type Outcome struct {
	Status     Status // Sent, Failed or InDoubt
	HTTPStatus int    // 0 when no response arrived
	RequestID  string
	Reason     string
}

// RecordOutcome durably records the outcome of the batch's latest intent.
func (s *State) RecordOutcome(ctx context.Context, batchID string, o Outcome) error { panic("todo") }

// ForgetIntent removes the batch's latest intent: the API provably did not act
// on it (refused before it was written, 503 or 429 until retries ran out), so
// its recipients may be planned again.
func (s *State) ForgetIntent(ctx context.Context, batchID string) error { panic("todo") }

// Resolve records the operator's decision on in-doubt recipients: asSent
// marks them sent, otherwise they are forgotten so the next apply sends them
// again. batchID "" means every in-doubt batch. It returns how many
// recipients changed.
func (s *State) Resolve(ctx context.Context, batchID string, asSent bool) (int, error) { panic("todo") }

// Counts returns how many recipients have each status.
func (s *State) Counts(ctx context.Context) (map[Status]int, error) { panic("todo") }
