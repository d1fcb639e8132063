// Package state keeps a campaign's delivery record: per recipient, whether
// a message was sent, failed or is in doubt, and per batch its intent and
// outcome. Every change is one durable transaction whose cost does not grow
// with the campaign, so a kill -9 at any instant loses no reported outcome
// and corrupts nothing.
//
// The record lives in one of two backends, picked by [Open] from its
// location: an SQLite file (modernc.org/sqlite, the default, described
// below), or a postgres:// URL, where one schema of a PostgreSQL database
// (pgx) holds any number of campaigns, each keyed by its name. Both are
// one [State]: the same tables, the same in-memory index and group commit;
// only their SQL (a dialect), their lock and their creation differ, and
// the package's tests run against both. [Copy] moves a record between them.
//
// [Open] takes an exclusive lock: for a file, a sibling ".lock" file that
// the kernel releases when the process dies; in PostgreSQL, a session-level
// advisory lock on the connection the writer uses, which the server
// releases when that session ends. A missing state is created only when
// nothing suggests an earlier one ([EarlierStateError]). [OpenReadOnly]
// neither locks, creates nor changes anything, for plan and state list.
//
// The schema, the files beside a state and how a record is derived are
// described in docs/state.md.
//
// # Writes
//
// Each recording method returns once its change is durable. Calls made
// concurrently from several goroutines are committed together (group commit):
// one transaction and one fsync for all of them; one refused change never
// undoes another, nor is half recorded. Every change bumps the serial.
// A write the database refuses (disk full, read-only file, a lost
// connection) is an error naming the state: "write state PATH: ...".
package state

import (
	"crypto/sha256"
	"encoding/hex"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Status is what is known of one recipient: the one vocabulary of
// delivery. The state records it, a plan counts it, and apply decides it
// from what the API said of a batch or of each of its recipients.
type Status uint8

const (
	// Unsent: nothing recorded. The recipient was never tried, the API
	// provably did not act on its batch (the intent is forgotten), or an
	// operator resolved it as unsent: the next apply sends it.
	Unsent Status = iota
	Sent
	Failed  // the API refused it for good
	InDoubt // intent recorded, outcome unknown: never sent again until resolved
	// Suppressed: not sent because the number opted out after the plan was
	// made. Not owed: a later plan subtracts it while it stays opted out.
	Suppressed
)

// String is the status as the state's files and every output write it:
// "sent", "failed", "in_doubt" ("unsent" for no record).
func (s Status) String() string {
	switch s {
	case Unsent:
		return "unsent"
	case Sent:
		return string(AttemptSent)
	case Failed:
		return string(AttemptFailed)
	case InDoubt:
		return string(AttemptInDoubt)
	case Suppressed:
		return string(AttemptSuppressed)
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// MarshalText writes the status as [Status.String] does, in JSON too.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what [Status.MarshalText] writes.
func (s *Status) UnmarshalText(b []byte) error {
	for _, st := range []Status{Unsent, Sent, Failed, InDoubt, Suppressed} {
		if string(b) == st.String() {
			*s = st
			return nil
		}
	}
	return fmt.Errorf("unknown recipient status %q", b)
}

// attempt is the attempt state that an outcome of status s records.
func (s Status) attempt() AttemptState { return AttemptState(s.String()) }

// parseStatus reads a status as a version 1 file stores it; anything else
// is no record.
func parseStatus(s string) Status {
	switch AttemptState(s) {
	case AttemptSent:
		return Sent
	case AttemptFailed:
		return Failed
	case AttemptInDoubt:
		return InDoubt
	}
	return Unsent
}

// ErrLocked is wrapped by the *LockedError Open returns when another process holds the lock.
var ErrLocked = errors.New("state is locked")

// LockedError says who holds the lock.
type LockedError struct {
	Path    string // the lock file, or the state's URL (password masked)
	Host    string
	PID     int
	Started time.Time
	RunURL  string // the holder's CI run, when it said
}

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("state is locked by another process (%s)", e.Path)
	}
	host := e.Host
	if host == "" {
		host = "?"
	}
	run := ""
	if e.RunURL != "" {
		run = ", run " + e.RunURL
	}
	return fmt.Sprintf("state is locked by pid %d on host %s since %s%s (%s)",
		e.PID, host, e.Started.UTC().Format(time.RFC3339), run, e.Path)
}
func (e *LockedError) Unwrap() error { return ErrLocked }

// ErrLineage is returned when a state file belongs to another campaign.
var ErrLineage = errors.New("state belongs to another campaign")

// Errors for changes the state refuses; the state is left as it was.
var (
	// ErrAlreadySent: an intent named a recipient already sent or in doubt.
	ErrAlreadySent = errors.New("recipient already sent or in doubt")
	// ErrNoIntent: an outcome or forget named a batch without an open intent.
	ErrNoIntent = errors.New("batch has no open intent")
	// ErrClosed: the State was closed, or is a read-only view.
	ErrClosed = errors.New("state is closed or read-only")
)

// Options tune Open.
type Options struct {
	Campaign    string        // the campaign's name; a state of another name is ErrLineage
	LockTimeout time.Duration // 0: fail at once when locked
	RunURL      string        // the CI run taking the lock, shown to whoever finds it locked
	// LockWait, when set, is called once if the lock is held and Open is
	// to wait for it (LockTimeout), so that the wait can be said.
	LockWait func(timeout time.Duration)

	// NewState lets Open start a new state even when it finds signs of an
	// earlier one (see [EarlierStateError]): a person decided.
	NewState bool
	// Signs are signs of an earlier state the caller found itself (a saved
	// plan made against a state, say); Open adds those of its backend.
	Signs []string

	// Shared says the state is a project's, which holds every campaign of
	// the project. A file that is not shared holds one campaign: one that
	// records another is refused (ErrLineage), so that a campaign renamed
	// in its file never starts a second record beside the first.
	// PostgreSQL always holds many, each campaign's own.
	Shared bool

	// AllowMoved opens a record marked moved (see [Moved]), which Open
	// otherwise refuses with a *MovedError: only for copying a record back.
	AllowMoved bool

	// Gate, for a project's state, is the project's ledger, which every
	// intent consults (opt-outs, frequency caps); nil: none.
	Gate Gate
	// Now is the clock the cap is judged by; nil is the system clock.
	Now func() time.Time
}

// State is an open state: a file, or a campaign's record in PostgreSQL.
// Its methods are safe for concurrent use.
type State struct {
	loc string  // the file's absolute path, or the URL with its password masked
	db  *sql.DB // nil for the empty view of a missing state
	q   *dialect
	// id is the campaign's record, 0 until its first change creates it
	// (Open creates nothing: an apply that records nothing leaves no state
	// behind). It is the leading argument of every scoped query, except in
	// a read-only view of an older file (unscoped), which holds one
	// campaign.
	id       atomic.Int64
	unscoped bool
	shared   bool // a project's file: it holds many campaigns
	// guardVacated refuses to create the campaign's record in a state
	// whose every campaign moved away (a project's, not copying back):
	// the project's ledger moved with them.
	guardVacated bool
	schema       int // the schema version: older ones only for read-only views

	metaMu   sync.Mutex // guards lineage, set by the first change
	lineage  string
	campaign string
	serial   atomic.Int64
	moved    *Moved
	pause    *Pause
	latency  time.Duration

	withoutPlan string // a view that leaves out this saved plan's attempts (WithoutPlan)
	gate        Gate   // the project's ledger intents consult (Options.Gate)

	now func() time.Time

	// Only for a State from Open.
	lock    interface{ release(remove bool) error }
	w       *writer
	atClose func(*sql.Conn) // tidies the writer's connection before it closes
	// mkConn gives the writer its connection when Open had none to give (a
	// state file still missing); born is called once the campaign's record
	// exists.
	mkConn func(context.Context) (*sql.Conn, error)
	born   func()
	// onBirth runs in the transaction that creates the campaign's record
	// (PostgreSQL: the lock holder's row).
	onBirth func(context.Context) error

	closeOnce sync.Once
	closeErr  error
}

// args is the scope followed by a query's own arguments.
func (s *State) args(a ...any) []any {
	if s.unscoped {
		return a
	}
	return append([]any{s.id.Load()}, a...)
}

// recorded reports whether the campaign has a record in the state yet.
func (s *State) recorded() bool { return s.id.Load() != 0 || s.unscoped }

// Open opens the state at loc, a file path or a postgres:// URL, creating
// it if needed, and locks it: no other Open of the same state succeeds
// until Close. A missing state is created only when nothing suggests an
// earlier one existed, or opts.NewState says to.
func Open(ctx context.Context, l Location, opts Options) (*State, error) {
	loc := l.Unmasked()
	if err := CheckLocation(loc); err != nil {
		return nil, err
	}
	if IsPostgres(loc) {
		return openPostgres(ctx, loc, opts)
	}
	return openFile(ctx, loc, opts)
}

// OpenReadOnly opens an existing state without locking or changing it. A
// missing state is not an error: it returns an empty view (lineage "",
// serial 0). campaign picks the record ("" when the state holds just one);
// a file that is not a project's holds one campaign, and one of another name
// is ErrLineage.
func OpenReadOnly(ctx context.Context, l Location, campaign string) (*State, error) {
	return openReadOnly(ctx, l.Unmasked(), campaign, false)
}

// OpenSharedReadOnly is [OpenReadOnly] for a project's state (see
// Options.Shared): a file that records other campaigns is read as an empty
// view of this one, not refused.
func OpenSharedReadOnly(ctx context.Context, l Location, campaign string) (*State, error) {
	return openReadOnly(ctx, l.Unmasked(), campaign, true)
}

func openReadOnly(ctx context.Context, loc, campaign string, shared bool) (*State, error) {
	if err := CheckLocation(loc); err != nil {
		return nil, err
	}
	if IsPostgres(loc) {
		return openPostgresReadOnly(ctx, loc, campaign)
	}
	return openFileReadOnly(ctx, loc, campaign, shared)
}

// Close releases the lock and the state. Changes already returned are
// durable; Close waits for changes in flight.
func (s *State) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.w != nil {
			errs = append(errs, s.w.close())
		}
		if s.db != nil {
			errs = append(errs, s.db.Close())
		}
		if s.lock != nil {
			// A campaign that recorded nothing leaves no lock file either.
			errs = append(errs, s.lock.release(!s.recorded()))
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("close state %s: %w", s.loc, err)
		}
	})
	return s.closeErr
}

// Lineage is the random id given at creation; Serial is bumped by every change.
func (s *State) Lineage() string {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	return s.lineage
}
func (s *State) Serial() int64 { return s.serial.Load() }

// Campaign is the name of the campaign the state records ("" for an empty view).
func (s *State) Campaign() string { return s.campaign }

// Path is where the state is: the file's absolute path, or the URL with
// its password masked.
func (s *State) Path() string { return s.loc }

// Recipient is the record of one recipient.
type Recipient struct {
	Phone    string
	Status   Status
	BatchID  string
	BodyHash string // hex SHA-256 of the body sent
	At       time.Time
	Reason   string // for Failed
	// What the provider said of it: the status it gave when that was not
	// plainly "sent", the id of its message, and the id of the request.
	ProviderStatus, ProviderID, ProviderBatchID string
}

// Intent is a batch about to be sent: all of a plan's batch, or the part
// of it still to send (a retry of some of its recipients), under the
// batch's id.
type Intent struct {
	BatchID  string
	Phones   []string
	BodyHash string
	PlanID   string // the saved plan being applied, "" for a campaign planned at apply time
}

// Outcome is what happened to a batch.
type Outcome struct {
	Status     Status // Sent, Failed or InDoubt; ignored when Parts is set
	HTTPStatus int    // 0 when no response arrived
	RequestID  string
	Reason     string
	// Parts, when set, gives the recipients of the batch outcomes of their
	// own (the provider answered each one): every recipient of the intent
	// is in exactly one part.
	Parts []Part
}

// Part is the outcome of some recipients of a batch.
type Part struct {
	// Status is Sent, Failed, InDoubt or Unsent: not acted on, so the
	// recipient's record goes, as a forgotten intent's does, and a later
	// run sends it.
	Status Status
	Phones []string
	Reason string // the provider's words
	// ProviderStatus is the status the provider gave these recipients
	// when it is not plainly "sent" (a refusal's, a throttle's, or one the
	// mapping does not name), as the provider wrote it.
	ProviderStatus string
	// IDs are the provider's ids of the messages to Phones, in order; nil
	// when the answer gave none.
	IDs []string
}

// ErrEarlierState is wrapped by the *EarlierStateError Open returns when
// it finds no state but signs that there was one.
var ErrEarlierState = errors.New("no state, but signs of an earlier one")

// EarlierStateError refuses to start a new state where one seems to have
// existed: a new state treats nobody as already messaged, so starting one
// by mistake would send every message again. Options.NewState overrides it.
type EarlierStateError struct {
	Loc      string
	Campaign string
	Signs    []string
}

func (e *EarlierStateError) Error() string {
	return fmt.Sprintf("no state at %s, but signs of an earlier state of campaign %q: %s; a new state would send every message again",
		e.Loc, e.Campaign, strings.Join(e.Signs, "; "))
}
func (e *EarlierStateError) Unwrap() error { return ErrEarlierState }

// BodyHash is the hex SHA-256 of a body: what an attempt records of the
// message it sent, so that a later plan can tell whom a changed body has
// not reached. It fixes the stored format, hence its place here.
func BodyHash(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// clock is the time a State from Open judges by.
func clock(opts Options) func() time.Time {
	if opts.Now != nil {
		return opts.Now
	}
	return time.Now
}
