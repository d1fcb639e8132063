package ledger

import (
	"context"
	"database/sql"

	"github.com/smsform/smsform/state"
)

// View reads a project's ledger: the opt-outs (as of a number of their
// log), the numbers the caps hold back, how much of a ledger there is.
type View struct {
	store *state.Store
	db    *sql.DB // nil: no ledger there (no state yet, or a file older than it)
	q     *dialect
	shown string
}

// ViewOf is the ledger of an open state, read on its connections: what a
// plan and an apply read. Closing the state closes it.
func ViewOf(st *state.State) *View { return newView(st.Store()) }

// Open opens the ledger of the project's state at loc to read, without
// creating or changing anything: an empty ledger when there is no state
// yet. Close releases it.
func Open(ctx context.Context, loc state.Location) (*View, error) {
	s, err := state.ViewStore(ctx, loc)
	if err != nil {
		return nil, err
	}
	return newView(s), nil
}

func newView(s *state.Store) *View {
	return &View{store: s, db: s.DB, q: of(s.Postgres), shown: s.Shown}
}

// Close releases what Open opened.
func (v *View) Close() error { return v.store.Close() }

// closeRows closes rows, returning the error that ended them if any.
func closeRows(rows *sql.Rows) error {
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}
