package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/words"
)

// What a campaign's record carries besides its attempts: where it moved,
// whether it is paused, how fast its provider answers, its test sends. None
// of it is a change to whom was messaged, so none of it bumps the serial: a
// saved plan made before a pause, a test send or a measured latency stays
// applicable.

// Moved is the mark state migrate leaves on the record it copied
// elsewhere: no command writes or plans against a moved record.
type Moved struct {
	To     string    `json:"to"` // where it went, a password masked
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Serial int64     `json:"serial"` // the copy's serial
}

// ErrMoved is wrapped by the *MovedError of a record that was moved.
var ErrMoved = errors.New("state was moved")

// MovedError refuses a record marked moved.
type MovedError struct {
	Loc, Campaign string
	Moved
}

func (e *MovedError) Error() string {
	return fmt.Sprintf("the state of campaign %q at %s was moved to %s on %s by %s (serial %d): its record lives there now",
		e.Campaign, e.Loc, e.To, e.At.UTC().Format(time.RFC3339), e.By, e.Serial)
}
func (e *MovedError) Unwrap() error { return ErrMoved }

// Moved is the record's moved mark, nil when it was not moved.
func (s *State) Moved() *Moved { return s.moved }

// checkMoved refuses a moved record (see Options.AllowMoved).
func (s *State) checkMoved() error {
	if s.moved == nil {
		return nil
	}
	return &MovedError{Loc: s.loc, Campaign: s.campaign, Moved: *s.moved}
}

// checkVacated refuses, when Open finds the campaign not recorded yet, a
// state whose every campaign moved away (see Options.AllowMoved): it is
// said before a plan is made, and birth says it again under the lock that
// orders it with a migration's marks.
func (s *State) checkVacated(ctx context.Context, db querier) error {
	err := readVacated(ctx, db, s.q, s.loc)
	if err != nil && !errors.Is(err, ErrMoved) {
		return fmt.Errorf("open state %s: %w", s.loc, err)
	}
	return err
}

// Vacated is [Vacated] of the state s views, read through s: what a
// command that holds a view asks, without opening the state again.
func (s *State) Vacated(ctx context.Context) error {
	if s.db == nil || s.unscoped {
		return nil // no state, or one of a single campaign (see Moved)
	}
	return s.checkVacated(ctx, s.db)
}

// markMoved marks the record moved, by whom, to the state at to, where c
// is its copy (nil: the copy's read-back differed because the source
// changed meanwhile). The record may have changed since the copy read it
// (a receiver's report, a recipient in doubt it settled, a pause): then
// recopy copies it again, under the lock that keeps receivers out until
// the mark commits, so that nothing written here is left behind. It
// returns the copy marked.
func (s *State) markMoved(ctx context.Context, to, by string, c *copiedAt, recopy func() (*copiedAt, error)) (*copiedAt, error) {
	m := Moved{To: WithoutPassword(to), At: s.now().UTC(), By: by}
	switch real, err := ResolveFile(to); {
	case !IsPostgres(to) && err == nil:
		m.To = real
	case m.To == "":
		m.To = Redact(to)
	}
	err := s.w.do(ctx, func(t *txn) error {
		if s.q == postgresDialect {
			// Waits for the receivers' transactions under way, and theirs
			// for this one (see Receiver.refuseMoved). A file's writing
			// transaction holds its write lock already.
			if _, err := t.conn.ExecContext(t.ctx, `SELECT pg_advisory_xact_lock($1)`, movesLock); err != nil {
				return err
			}
		}
		changed := c == nil
		if !changed {
			var err error
			if changed, err = s.changedSince(t.ctx, t.conn, c.readAt); err != nil {
				return err
			}
		}
		if changed {
			again, err := recopy()
			if err != nil {
				return refusal{fmt.Errorf("copy again (the record changed while it was copied): %w", err)}
			}
			c = again
		}
		m.Serial = c.Serial
		t.wrote = true
		_, err := t.conn.ExecContext(t.ctx, s.q[qSetMoved], s.args(m.To, formatTime(m.At), m.By, m.Serial)...)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.moved = &m
	return c, nil
}

// Pause is a campaign's pause: while it is set no intent is recorded.
type Pause struct {
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Reason string    `json:"reason"`
}

// ErrPaused is wrapped by the *PausedError of a paused campaign.
var ErrPaused = errors.New("campaign is paused")

// PausedError refuses an intent, or an apply, of a paused campaign.
type PausedError struct {
	Campaign string
	Pause
}

func (e *PausedError) Error() string {
	// Who and why are a person's words, maybe from an older smsform that
	// kept a line break: shown, never obeyed.
	msg := fmt.Sprintf("campaign %q is paused by %s at %s", e.Campaign, words.Visible(e.By), e.At.UTC().Format(time.RFC3339))
	if e.Reason != "" {
		msg += ": " + words.Visible(e.Reason)
	}
	return msg
}
func (e *PausedError) Unwrap() error { return ErrPaused }

// Paused is the campaign's pause as read when the state was opened, nil
// when it was not paused. A running apply learns of a later pause from the
// intent it refuses.
func (s *State) Paused() *Pause { return s.pause }

// PausedNow reads whether the campaign is paused now, as a *PausedError,
// nil when it is not (or has no record yet). A running apply learns of a
// pause from the next intent it records; a batch waiting to be tried again
// (429, 503) records none, so it asks before each retry.
func (s *State) PausedNow(ctx context.Context) error {
	if !s.recorded() || s.unscoped {
		return nil
	}
	var at, by, reason sql.NullString
	if err := s.db.QueryRowContext(ctx, s.q[qPausedNow], s.args()...).Scan(&at, &by, &reason); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return fmt.Errorf("read whether campaign %q is paused: %w", s.campaign, err)
	}
	if at.String == "" {
		return nil
	}
	return &PausedError{Campaign: s.campaign, Pause: Pause{At: parseTime(at.String), By: by.String, Reason: reason.String}}
}

// SetPause pauses the campaign in the state at loc (p set) or lifts its
// pause (p nil). It takes no lock: it works while an apply runs, which sees
// the pause right before its next intent. A campaign without a record gets
// one, holding only the pause. shared is Options.Shared.
func SetPause(ctx context.Context, l Location, campaign string, shared bool, p *Pause) error {
	db, q, err := openControl(ctx, l.Unmasked(), campaign, shared, p != nil)
	if err != nil || db == nil {
		return err
	}
	defer db.Close()
	if p != nil {
		// No apply would read a pause in a state every campaign left, and
		// the record it makes would have the state look in use again.
		if err := readVacated(ctx, db, q, l.String()); errors.Is(err, ErrMoved) {
			return err
		} else if err != nil {
			return fmt.Errorf("read state %s: %w", l, err)
		}
	}
	if p == nil {
		_, err = db.ExecContext(ctx, q[qResume], campaign)
	} else {
		_, err = db.ExecContext(ctx, q[qPause], campaign, newLineage(), formatTime(time.Now()), formatTime(p.At), p.By, p.Reason)
	}
	if err != nil {
		return fmt.Errorf("write state %s: %w", l, err)
	}
	return nil
}

// openControl opens the state at loc for a change that needs no lock,
// migrated to this build's schema: for a file, the database (created when
// it is missing and mk says to; nil, nil when it is missing and mk does
// not say to).
func openControl(ctx context.Context, loc, campaign string, shared, mk bool) (*sql.DB, *dialect, error) {
	if err := CheckLocation(loc); err != nil {
		return nil, nil, err
	}
	if IsPostgres(loc) {
		t, err := parsePostgres(loc)
		if err != nil {
			return nil, nil, err
		}
		db := stdlib.OpenDB(*t.cfg)
		conn, err := db.Conn(ctx)
		if err != nil {
			db.Close()
			return nil, nil, explainPostgres(t, fmt.Errorf("open state %s: %w", t.shown, err))
		}
		defer conn.Close()
		if err := migratePostgres(ctx, conn, t); err != nil {
			db.Close()
			return nil, nil, explainPostgres(t, err)
		}
		return db, postgresDialect, nil
	}
	real, err := ResolveFile(loc)
	if err != nil {
		if abs, aerr := filepath.Abs(loc); aerr == nil && !mk {
			if _, serr := os.Stat(filepath.Dir(abs)); errors.Is(serr, os.ErrNotExist) {
				return nil, nil, nil // not even its folder: no state, nothing to read
			}
		}
		return nil, nil, fmt.Errorf("open state %s: %w", loc, err)
	}
	exists, err := checkFile(real)
	switch {
	case err != nil:
		return nil, nil, err
	case !exists && !mk:
		return nil, nil, nil
	case !exists:
		if err := create(ctx, real, time.Now()); err != nil {
			return nil, nil, fmt.Errorf("create state %s: %w", real, err)
		}
	}
	db, err := sql.Open("sqlite", dsn(real, false))
	if err != nil {
		return nil, nil, fmt.Errorf("open state %s: %w", real, err)
	}
	s := &State{loc: real, campaign: campaign, q: sqliteDialect}
	if err := migrate(ctx, db, real); err != nil {
		db.Close()
		return nil, nil, err
	}
	if !shared {
		if err := s.onlyOwn(ctx, db); err != nil {
			db.Close()
			return nil, nil, err
		}
	}
	return db, sqliteDialect, nil
}

// RecordLatency keeps the median time the provider took to answer a send,
// for later plans' estimates.
func (s *State) RecordLatency(ctx context.Context, d time.Duration) error {
	if s.w == nil {
		return ErrClosed
	}
	err := s.w.do(ctx, func(t *txn) error {
		t.wrote = true
		_, err := t.conn.ExecContext(t.ctx, s.q[qSetLatency], s.args(d.Milliseconds())...)
		return err
	})
	if err != nil {
		return fmt.Errorf("record latency: %w", err)
	}
	s.latency = d
	return nil
}

// Latency is the provider's median answer time as last recorded, 0 when
// none was.
func (s *State) Latency() time.Duration { return s.latency }

// Owed counts the campaign's recipients the state records as failed or in
// doubt: what a run leaves owed. Only for a State from Open: it counts
// from memory, at no cost.
func (s *State) Owed() (failed, inDoubt int) {
	if s.w == nil {
		return 0, 0
	}
	s.w.leader <- struct{}{} // the index is the leader's
	defer func() { <-s.w.leader }()
	s.w.known.statuses.Each(func(st Status) {
		switch st {
		case Failed:
			failed++
		case InDoubt:
			inDoubt++
		}
	})
	return failed, inDoubt
}

// TestSend is a message sent to numbers a person named, to look at it on a
// phone: recorded with the campaign, never one of its recipients.
type TestSend struct {
	At         time.Time
	By         string
	BodyHash   string
	Phones     []string
	Outcome    Status // Sent, Failed or InDoubt
	HTTPStatus int
	RequestID  string
	Reason     string
}

// RecordTestSend records a test send. It creates the campaign's record if
// need be, and changes nothing of its recipients or serial.
func (s *State) RecordTestSend(ctx context.Context, ts TestSend) error {
	if s.w == nil {
		return ErrClosed
	}
	phones := string(rawjson.AppendStrings(nil, ts.Phones))
	err := s.w.do(context.WithoutCancel(ctx), func(t *txn) error {
		t.wrote = true
		_, err := t.conn.ExecContext(t.ctx, s.q[qInsertTestSend], s.args(formatTime(ts.At), ts.By, ts.BodyHash, ts.Outcome.String(), ts.HTTPStatus,
			ts.RequestID, ts.Reason, phones)...)
		return err
	})
	if err != nil {
		return fmt.Errorf("record test send: %w", err)
	}
	return nil
}

// LastTestSend is the campaign's latest test send, nil when there was none.
func (s *State) LastTestSend(ctx context.Context) (*TestSend, error) {
	if s.db == nil || !s.recorded() || s.unscoped {
		return nil, nil
	}
	var ts TestSend
	var at, outcome, phones string
	err := s.db.QueryRowContext(ctx, s.q[qLastTestSend], s.args()...).Scan(&at, &ts.By, &ts.BodyHash, &outcome, &ts.HTTPStatus, &ts.RequestID, &ts.Reason, &phones)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	ts.At = parseTime(at)
	if err := ts.Outcome.UnmarshalText([]byte(outcome)); err != nil {
		return nil, err
	}
	if err := eachPhone(phones, func(p string) { ts.Phones = append(ts.Phones, p) }); err != nil {
		return nil, err
	}
	return &ts, nil
}
