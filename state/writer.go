package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// maxGroup bounds how many changes one commit carries.
const maxGroup = 256

// writer owns the one connection that changes the state. A change joins
// the queue; whoever holds the leader slot takes everything queued, runs it
// in one transaction (each change in its own savepoint when there are
// several), commits once and answers every caller. While one commit waits
// for the disk, the next group gathers, and one of its callers leads it:
// that is group commit, and it is what lets concurrent batches share an
// fsync. A lone caller commits its own change, with no goroutine to wake.
type writer struct {
	s     *State
	conn  *sql.Conn
	stmts map[string]*sql.Stmt

	// Only the leader touches these.
	known *known // what the file records of each recipient and batch
	buf   []byte // an intent's phones as JSON

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
// it modified something, which bumps the serial.
type txn struct {
	ctx     context.Context
	conn    *sql.Conn // in a transaction
	w       *writer
	now     string
	changed bool
}

// refusal marks an error the change itself decided on (the state is
// consistent and the transaction usable), as opposed to a database error.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

func refuse(format string, args ...any) error { return refusal{fmt.Errorf(format, args...)} }

// statements are the writer's prepared statements, from its dialect.
//
// The transaction is driven by hand rather than with database/sql's Tx,
// whose StmtContext prepares every statement again (parsing SQL was a
// fifth of the cost of a batch).
func statements(q *dialect) map[string]string {
	return map[string]string{
		"insertAttempt": q.insertAttempt,
		"attempt":       q.attempt,
		"finishAttempt": q.finishAttempt,
		"bumpSerial":    q.bumpSerial,
		"setAttempt":    q.setAttempt,
		"planApplied":   q.planApplied,
		"insertPlan":    q.insertPlan,

		"begin":      q.begin,
		"commit":     `COMMIT`,
		"rollback":   `ROLLBACK`,
		"savepoint":  `SAVEPOINT change`,
		"rollbackTo": `ROLLBACK TO SAVEPOINT change`,
		"release":    `RELEASE SAVEPOINT change`,
	}
}

// newWriter makes the writer of s, which changes the state only through
// conn: in PostgreSQL the connection that holds the lock, so that a writer
// whose lock went with its connection cannot write either.
func newWriter(ctx context.Context, s *State, conn *sql.Conn) (*writer, error) {
	k, err := s.loadKnown(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{s: s, conn: conn, stmts: map[string]*sql.Stmt{}, known: k, leader: make(chan struct{}, 1)}
	for name, q := range statements(s.q) {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("prepare %s: %w", name, err)
		}
		w.stmts[name] = st
	}
	return w, nil
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

func (w *writer) commit(group []*op) {
	ctx := context.Background()
	errs := make([]error, len(group))
	k := w.known
	fail := func(err error) {
		if err != nil {
			// Nothing of the group is in the file: known goes back too.
			k.rollback(0)
			err = fmt.Errorf("write state %s: %w", w.s.loc, err)
		}
		for i, o := range group {
			if errs[i] == nil {
				errs[i] = err
			}
			o.err <- errs[i]
		}
	}
	// abort ends the transaction; SQLite may have ended it already after
	// an I/O error, so the rollback's own error says nothing.
	abort := func(err error) {
		w.stmts["rollback"].ExecContext(ctx)
		fail(err)
	}
	if _, err := w.stmts["begin"].ExecContext(ctx); err != nil {
		fail(err)
		return
	}
	t := &txn{ctx: ctx, conn: w.conn, w: w, now: formatTime(w.s.now())}
	bumps := 0
	single := len(group) == 1
	for i, o := range group {
		if !single {
			if _, err := t.exec("savepoint"); err != nil {
				abort(err)
				return
			}
		}
		mark := k.mark()
		t.changed = false
		err := o.run(t)
		if err == nil && t.changed {
			_, err = t.exec("bumpSerial", w.s.args()...)
		}
		var r refusal
		if errors.As(err, &r) {
			errs[i] = err
			k.rollback(mark)
			if single {
				abort(nil)
				return
			}
			if _, err := t.exec("rollbackTo"); err != nil {
				abort(err)
				return
			}
		} else if err != nil {
			// A database error (disk full, I/O) may have ended the
			// transaction inside SQLite already: nothing after it can be
			// trusted to be atomic, so the whole group fails.
			abort(err)
			return
		} else if t.changed {
			bumps++
		}
		if !single {
			if _, err := t.exec("release"); err != nil {
				abort(err)
				return
			}
		}
	}
	if _, err := t.exec("commit"); err != nil {
		abort(err)
		return
	}
	k.commit()
	w.s.serial.Add(int64(bumps))
	fail(nil)
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
	// Idle pooled readers keep an SQLite WAL open; let them go first.
	w.s.db.SetMaxIdleConns(0)
	if w.s.atClose != nil {
		w.s.atClose(w.conn)
	}
	return w.conn.Close()
}

func (t *txn) stmt(name string) *sql.Stmt { return t.w.stmts[name] }

func (t *txn) exec(name string, args ...any) (sql.Result, error) {
	return t.stmt(name).ExecContext(t.ctx, args...)
}

func (t *txn) queryRow(name string, args ...any) *sql.Row {
	return t.stmt(name).QueryRowContext(t.ctx, args...)
}
