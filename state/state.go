// Package state keeps a campaign's delivery record: one SQLite file
// (modernc.org/sqlite) that says, per recipient, whether a message was sent,
// failed or is in doubt, and per batch its intent and outcome. Every change is
// one durable transaction whose cost does not grow with the campaign, so a
// kill -9 at any instant loses no reported outcome and corrupts nothing.
//
// [Open] takes an exclusive lock (a sibling ".lock" file) that the kernel
// releases when the process dies; [OpenReadOnly] neither locks, creates nor
// changes anything, for plan and state list.
//
// # Schema
//
// The unit of writing is the batch attempt. Table attempts holds one row
// per attempt at a batch: its state (intent, sent, failed, in_doubt,
// forgotten, resolved_sent, resolved_unsent), body hash, HTTP status,
// request id, reason, start and finish times, and its recipients as a JSON
// array of E.164 numbers in column phones. An intent inserts the row, an
// outcome, forget or resolve updates it: a batch of 100 costs two row
// writes, not two hundred.
//
// A recipient's record is derived from its latest attempt: intent or
// in_doubt make it [InDoubt], sent or resolved_sent [Sent], failed
// [Failed]; forgotten and resolved_unsent leave it without a record, so the
// next apply sends it again. Its batch, body hash and reason come from that
// attempt, its time is the attempt's finish (or start, while open). The
// view recipients derives exactly that with json_each, one row per
// recipient, for inspecting the file with the sqlite3 shell:
//
//	sqlite3 spring.smsstate "SELECT phone, status, batch_id, at FROM recipients WHERE status = 'in_doubt'"
//
// Tables meta (lineage, campaign, serial), plans_applied and
// schema_migrations complete it. Version 1 kept a row per recipient;
// [Open] migrates such a file in one transaction, [OpenReadOnly] reads it
// as it is.
//
// An [Open] state keeps every recipient's status in memory (about 16 bytes
// each), loaded in one pass at Open, so that an intent naming someone
// already sent or in doubt is refused without reading the file.
//
// # Files
//
// While a [State] from [Open] is open the database runs in WAL mode with
// synchronous=FULL: a commit is one fsync of the "-wal" file, and the
// "-wal" and "-shm" files next to the state are part of it. [State.Close]
// checkpoints and switches the file back to a rollback journal, so a state
// at rest is exactly one self-contained file (safe to copy, upload as a CI
// artifact or commit) that read-only openers can read without creating
// anything. After a crash the "-wal" file holds committed records: copy it
// along with the state, or open the state once (any smsform command that
// writes) to fold it back in.
//
// # Writes
//
// Each recording method returns once its change is durable. Calls made
// concurrently from several goroutines are committed together (group commit):
// one transaction and one fsync for all of them, each in its own savepoint,
// so one refused change never undoes another. Every change bumps the serial.
// A write the database refuses (disk full, read-only file) is an error
// naming the file: "write state PATH: ...".
package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("state is locked by another process (%s)", e.Path)
	}
	host := e.Host
	if host == "" {
		host = "?"
	}
	return fmt.Sprintf("state is locked by pid %d on host %s since %s (%s)",
		e.PID, host, e.Started.UTC().Format(time.RFC3339), e.Path)
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
}

// State is an open state file. Its methods are safe for concurrent use.
type State struct {
	path   string
	db     *sql.DB // nil for the empty view of a missing file
	schema int     // the file's schema version: older ones only for read-only views

	lineage  string
	campaign string
	serial   atomic.Int64

	now func() time.Time

	// Only for a State from Open.
	lock *lockFile
	w    *writer

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if needed) the state at path and locks it.
func Open(ctx context.Context, path string, opts Options) (_ *State, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	dir := filepath.Dir(abs)
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open state %s: folder %s does not exist", path, dir)
		}
		return nil, fmt.Errorf("open state %s: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("open state %s: %s is not a folder", path, dir)
	}

	lk, err := acquireLock(ctx, abs+".lock", opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lk.release()
		}
	}()

	s := &State{path: abs, now: time.Now, lock: lk}
	exists, err := checkFile(abs)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := create(ctx, abs, opts.Campaign, s.now()); err != nil {
			return nil, fmt.Errorf("create state %s: %w", path, err)
		}
	}

	s.db, err = sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			s.db.Close()
		}
	}()
	s.db.SetMaxOpenConns(4)
	if err := migrate(ctx, s.db, abs); err != nil {
		return nil, err
	}
	s.schema = SchemaVersion
	if err := s.loadMeta(ctx); err != nil {
		return nil, err
	}
	// WAL: a commit appends to one file and fsyncs it once, where a
	// rollback journal needs three or four fsyncs; readers are not blocked
	// by the writer. Close switches back so the file at rest stands alone.
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	} else if mode != "wal" {
		return nil, fmt.Errorf("open state %s: cannot use WAL journal (got %q)", path, mode)
	}
	if opts.Campaign != "" && s.campaign != opts.Campaign {
		if s.campaign != "" {
			return nil, fmt.Errorf("open state %s: it records campaign %q, not %q: %w", path, s.campaign, opts.Campaign, ErrLineage)
		}
		// A state created without a name adopts the first one given.
		if _, err := s.db.ExecContext(ctx, `UPDATE meta SET campaign = ?, serial = serial + 1 WHERE id = 1`, opts.Campaign); err != nil {
			return nil, fmt.Errorf("open state %s: %w", path, err)
		}
		s.campaign = opts.Campaign
		s.serial.Add(1)
	}
	if s.w, err = newWriter(ctx, s); err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	return s, nil
}

// OpenReadOnly opens an existing state without locking or changing it. A
// missing file is not an error: it returns an empty view (lineage "", serial 0).
// The caller compares [State.Campaign] with the campaign it expects.
//
// A state at rest (closed cleanly) is read without creating any file next to
// it. While an apply has it open, or after a crash, the reader shares the
// writer's "-wal" and "-shm" files and sees every committed change.
func OpenReadOnly(path string) (_ *State, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	s := &State{path: abs, now: time.Now}
	exists, err := checkFile(abs)
	if err != nil || !exists {
		return s, err
	}
	s.db, err = sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			s.db.Close()
		}
	}()
	s.db.SetMaxOpenConns(4)
	ctx := context.Background()
	// A read-only view cannot migrate: an older schema is read as it is.
	if s.schema, err = schemaVersion(ctx, s.db, abs); err != nil {
		return nil, err
	}
	if err := s.loadMeta(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Close releases the lock and the file. Changes already returned are durable;
// Close waits for changes in flight.
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
			errs = append(errs, s.lock.release())
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("close state %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// Lineage is the random id given at creation; Serial is bumped by every change.
func (s *State) Lineage() string { return s.lineage }
func (s *State) Serial() int64   { return s.serial.Load() }

// Campaign is the name of the campaign the state records ("" for an empty view).
func (s *State) Campaign() string { return s.campaign }

// Path is the absolute path of the state file.
func (s *State) Path() string { return s.path }

// Recipient is the record of one recipient.
type Recipient struct {
	Phone    string
	Status   Status
	BatchID  string
	BodyHash string // hex SHA-256 of the body sent
	At       time.Time
	Reason   string // for Failed
}

// Intent is a batch about to be sent.
type Intent struct {
	BatchID  string
	Phones   []string
	BodyHash string
}

// Outcome is what happened to a batch.
type Outcome struct {
	Status     Status // Sent, Failed or InDoubt
	HTTPStatus int    // 0 when no response arrived
	RequestID  string
	Reason     string
}
