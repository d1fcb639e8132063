package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxGroup bounds how many changes one commit carries.
const maxGroup = 256

// maxTries bounds how often a group the database aborted to break a
// deadlock (or a serialization failure) is run again.
const maxTries = 10

// retryable reports whether the database aborted the transaction only to
// break a deadlock or a serialization conflict: running it again is safe.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// writer owns the one connection that changes the state. A change joins
// the queue; whoever holds the leader slot takes everything queued, runs it
// in one transaction (see commit for a change refused half-way), commits
// once and answers every caller. While one commit waits
// for the disk, the next group gathers, and one of its callers leads it:
// that is group commit, and it is what lets concurrent batches share an
// fsync. A lone caller commits its own change, with no goroutine to wake.
type writer struct {
	s     *State
	conn  *sql.Conn
	stmts map[stmt]*sql.Stmt

	// Only the leader touches these.
	known *known // what the file records of each recipient and batch
	buf   []byte // an intent's or a part's phones, or a part's id pairs, as JSON

	leader chan struct{} // a slot of one: held while committing

	mu     sync.Mutex // guards queue and closed
	queue  []*op
	closed bool
}

type op struct {
	run func(*txn) error
	err chan error
}

// txn is one change's view of the transaction. A change sets changed when
// it modified something, which bumps the serial; wrote is set by every
// statement that writes (see commit).
type txn struct {
	ctx     context.Context
	conn    *sql.Conn // in a transaction
	w       *writer
	now     string
	changed bool
	wrote   bool
}

// refusal marks an error the change itself decided on (the state is
// consistent and the transaction usable), as opposed to a database error.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

func refuse(format string, args ...any) error { return refusal{fmt.Errorf(format, args...)} }

// writerStmts are the statements the writer prepares on its connection.
//
// The transaction is driven by hand rather than with database/sql's Tx,
// whose StmtContext prepares every statement again (parsing SQL was a
// fifth of the cost of a batch).
var writerStmts = []stmt{qBegin, qCommit, qRollback, qInsertAttempt, qSetPhones, qDropAttempt, qAttempt, qFinishAttempt, qFinishWhole, qBumpSerial, qSetAttempt,
	qPlanApplied, qInsertPlan, qPutAttempt, qPausedNow}

// newWriter makes the writer of s, which changes the state only through
// conn: in PostgreSQL the connection that holds the lock, so that a writer
// whose lock went with its connection cannot write either.
//
// conn is nil for a state file that does not exist yet: the first change
// gets it from the state (mkConn), which creates the file.
func newWriter(ctx context.Context, s *State, conn *sql.Conn) (*writer, error) {
	w := &writer{s: s, stmts: map[stmt]*sql.Stmt{}, known: newKnown(0), leader: make(chan struct{}, 1)}
	if conn == nil {
		return w, nil
	}
	return w, w.attach(ctx, conn)
}

// attach makes conn the writer's: what the state records of the campaign
// is loaded, the statements prepared.
func (w *writer) attach(ctx context.Context, conn *sql.Conn) error {
	k, err := w.s.loadKnown(ctx)
	if err != nil {
		return err
	}
	for _, q := range writerStmts {
		st, err := conn.PrepareContext(ctx, w.s.q[q])
		if err != nil {
			return fmt.Errorf("prepare %q: %w", w.s.q[q], err)
		}
		w.stmts[q] = st
	}
	w.conn, w.known = conn, k
	return nil
}

// birth creates the campaign's record in the transaction of its first
// change, so that the record exists exactly when something was recorded.
// The caller undoes it (unbirth) should the transaction not commit.
func (w *writer) birth(t *txn) (lineage string, err error) {
	s := w.s
	if w.conn == nil {
		conn, err := s.mkConn(t.ctx)
		if err != nil {
			return "", err
		}
		if err := w.attach(t.ctx, conn); err != nil {
			conn.Close()
			return "", err
		}
		t.conn = conn
	}
	if _, err := w.stmts[qBegin].ExecContext(t.ctx); err != nil {
		return "", err
	}
	if s.recorded() {
		return "", nil // the file appeared meanwhile, recording the campaign (an older smsform's)
	}
	// A project file naming the state a migration left (its ledger moved
	// with the last campaign) must not start a second ledger here.
	if s.guardVacated {
		if err := refuseVacated(t.ctx, w.conn, s.q, s.loc); err != nil {
			w.stmts[qRollback].ExecContext(t.ctx)
			return "", err
		}
	}
	// The record may have been made meanwhile by a pause (SetPause takes
	// no lock), which leaves it without any change: take it over.
	var id, serial int64
	if _, err := w.conn.ExecContext(t.ctx, s.q[qInsertCampaign], s.campaign, newLineage(), t.now); err != nil {
		w.stmts[qRollback].ExecContext(t.ctx)
		return "", fmt.Errorf("create the record of campaign %q: %w", s.campaign, err)
	}
	err = w.conn.QueryRowContext(t.ctx, s.q[qCampaignByName], s.campaign).Scan(&id, &lineage, &serial)
	if err == nil && serial != 0 {
		err = fmt.Errorf("it was created meanwhile by another run (serial %d): run again", serial)
	}
	if err != nil {
		w.stmts[qRollback].ExecContext(t.ctx)
		return "", fmt.Errorf("create the record of campaign %q: %w", s.campaign, err)
	}
	if s.onBirth != nil {
		if err := s.onBirth(t.ctx); err != nil {
			w.stmts[qRollback].ExecContext(t.ctx)
			return "", err
		}
	}
	s.id.Store(id)
	return lineage, nil
}

// do runs one change and returns once it is durable or refused. ctx is
// checked before the change is queued; once queued it is carried through,
// so a caller never returns while its change may still land.
func (w *writer) do(ctx context.Context, run func(*txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &op{run: run, err: make(chan error, 1)}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.queue = append(w.queue, o)
	w.mu.Unlock()
	select {
	case err := <-o.err: // a leader committed it
		return err
	case w.leader <- struct{}{}:
	}
	w.lead(o)
	<-w.leader
	return <-o.err
}

// lead commits groups from the queue until o's is done (a leader that
// took over just after o's was committed commits nothing). It holds the
// leader slot.
func (w *writer) lead(o *op) {
	for len(o.err) == 0 {
		w.mu.Lock()
		n := min(len(w.queue), maxGroup)
		group := w.queue[:n:n]
		w.queue = w.queue[n:]
		if len(w.queue) == 0 {
			w.queue = nil // let the backing array go
		}
		w.mu.Unlock()
		if n == 0 {
			return // o was answered between the check and the lock
		}
		w.commit(group)
	}
}

// commit runs the group in one transaction and answers every caller.
//
// A change refused before it wrote anything (the usual case: an intent
// naming someone already sent is refused from memory) simply leaves the
// group, and the others go on. A change refused after it wrote (an
// outcome recorded, then the next intent refused) cannot be undone alone
// without a savepoint, and a savepoint per change costs two statements
// each; so then the transaction is rolled back and the group run again
// without it. That is rare, and keeps the common commit short.
func (w *writer) commit(group []*op) {
	errs := make([]error, len(group))
	out := make([]bool, len(group)) // refused: out of the group
	for aborted := 0; ; {
		again, err := w.try(group, errs, out)
		if err != nil {
			// Nothing of the group is in the state: known goes back too,
			// and so do the refusals decided in it (one may have rested
			// on another change of the group that is not there now).
			w.known.rollback(0)
			clear(errs)
			clear(out)
			if aborted++; retryable(err) && aborted < maxTries {
				// Two applies of a project's campaigns lock the same
				// numbers' rows of the cap index, each group in the order
				// of its changes: the server broke a deadlock by aborting
				// this transaction, and it is run again whole.
				continue
			}
			err = fmt.Errorf("write state %s: %w", w.s.loc, err)
		}
		if again && err == nil {
			continue
		}
		for i, o := range group {
			if errs[i] == nil {
				errs[i] = err
			}
			o.err <- errs[i]
		}
		return
	}
}

// try runs the changes of group not yet out in one transaction. again
// says that one was refused after writing, the transaction was rolled
// back, and the rest must run again; err is a database error, which fails
// the whole group.
func (w *writer) try(group []*op, errs []error, out []bool) (again bool, err error) {
	ctx := context.Background()
	t := &txn{ctx: ctx, conn: w.conn, w: w, now: formatTime(w.s.now())}
	// The campaign's first change creates its record in the same
	// transaction; it is undone with it.
	var lineage string // set when this transaction creates the record
	if !w.s.recorded() {
		if lineage, err = w.birth(t); err != nil {
			return false, err
		}
	} else if _, err := w.stmts[qBegin].ExecContext(ctx); err != nil {
		return false, err
	}
	k := w.known
	// abort ends the transaction; SQLite may have ended it already after
	// an I/O error, so the rollback's own error says nothing. A record
	// created in it is gone with it.
	abort := func() {
		w.stmts[qRollback].ExecContext(ctx)
		if lineage != "" {
			w.s.id.Store(0)
		}
	}
	bumps, left := 0, 0
	for i, o := range group {
		if out[i] {
			continue
		}
		mark := k.mark()
		t.changed, t.wrote = false, false
		err := o.run(t)
		var r refusal
		switch {
		case errors.As(err, &r) && !t.wrote:
			errs[i], out[i] = err, true
			k.rollback(mark)
		case errors.As(err, &r):
			errs[i], out[i] = err, true
			abort()
			k.rollback(0)
			for j := range group {
				if !out[j] {
					return true, nil
				}
			}
			return false, nil
		case err != nil:
			// A database error (disk full, I/O, a lost connection) may
			// have ended the transaction already: nothing after it can be
			// trusted to be atomic, so the whole group fails.
			abort()
			return false, err
		default:
			left++
			if t.changed {
				bumps++
			}
		}
	}
	if left == 0 {
		abort() // every change was refused before writing: nothing to commit
		return false, nil
	}
	// Every change bumps the serial: all of them in one statement.
	if bumps > 0 {
		if _, err := t.exec(qBumpSerial, w.s.args(bumps)...); err != nil {
			abort()
			return false, err
		}
	}
	if _, err := t.exec(qCommit); err != nil {
		abort()
		return false, err
	}
	k.commit()
	w.s.serial.Add(int64(bumps))
	if lineage != "" {
		w.s.metaMu.Lock()
		w.s.lineage = lineage
		w.s.metaMu.Unlock()
		if w.s.born != nil {
			w.s.born()
		}
	}
	return false, nil
}

// close stops taking changes, waits for those queued, and lets the
// backend tidy the connection (atClose) before closing it.
func (w *writer) close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	// Take the leader slot for good, committing whatever is still queued:
	// its callers may be waiting for a leader.
	w.leader <- struct{}{}
	for {
		w.mu.Lock()
		group := w.queue
		w.queue = nil
		w.mu.Unlock()
		if len(group) == 0 {
			break
		}
		for len(group) > 0 {
			n := min(len(group), maxGroup)
			w.commit(group[:n])
			group = group[n:]
		}
	}
	for _, st := range w.stmts {
		st.Close()
	}
	if w.conn == nil {
		return nil // nothing was ever written: no file, no connection
	}
	// Idle pooled readers keep an SQLite WAL open; let them go first.
	w.s.db.SetMaxIdleConns(0)
	if w.s.atClose != nil {
		w.s.atClose(w.conn)
	}
	return w.conn.Close()
}

func (t *txn) stmt(q stmt) *sql.Stmt { return t.w.stmts[q] }

// exec runs a statement that writes.
func (t *txn) exec(q stmt, args ...any) (sql.Result, error) {
	t.wrote = true
	return t.stmt(q).ExecContext(t.ctx, args...)
}

// queryRow runs a statement that returns a row; insertAttempt,
// finishAttempt, finishWhole and putAttempt also write.
func (t *txn) queryRow(q stmt, args ...any) *sql.Row {
	if q == qInsertAttempt || q == qFinishAttempt || q == qFinishWhole || q == qPutAttempt {
		t.wrote = true
	}
	return t.stmt(q).QueryRowContext(t.ctx, args...)
}
