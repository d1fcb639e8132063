package state

import (
	"context"
	"database/sql"
	"time"
)

// Gate is what a project's ledger (package ledger) checks where an intent
// is recorded, in the intent's transaction, so that two applies of
// different campaigns, on two machines, can never together send past it: in
// a file the transaction holds the file's write lock; in PostgreSQL the
// gate locks what it reads. State calls it; it never imports the ledger.
type Gate interface {
	// Claim sorts phones, the recipients of the intent of attempt, into
	// those to send now (their claims recorded), those opted out
	// (Suppressed) and those the caps hold back (Held, and when the last
	// of them may go).
	Claim(tx *Tx, phones []string, attempt int64) (Admission, error)
	// Release gives back attempt's claims of phones: the provider did not
	// act on them, or the operator resolved them as not sent.
	Release(tx *Tx, phones []string, attempt int64) error
}

// Tx is an intent's transaction as a Gate sees it.
type Tx struct {
	t   *txn
	now time.Time
}

// Postgres reports whether the state is a PostgreSQL database.
func (x *Tx) Postgres() bool { return x.t.w.s.q == postgresDialect }

// Now is the moment of the intent: the run's clock.
func (x *Tx) Now() time.Time { return x.now }

// Context is the transaction's context.
func (x *Tx) Context() context.Context { return x.t.ctx }

// Query runs a statement that returns rows; it may write (in PostgreSQL
// a lock is a write).
func (x *Tx) Query(q string, args ...any) (*sql.Rows, error) {
	x.t.wrote = true
	return x.t.conn.QueryContext(x.t.ctx, q, args...)
}

// Exec runs a statement that writes.
func (x *Tx) Exec(q string, args ...any) (sql.Result, error) {
	x.t.wrote = true
	return x.t.conn.ExecContext(x.t.ctx, q, args...)
}
