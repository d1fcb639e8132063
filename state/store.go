package state

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// Store is a state's database as the packages built on the record use it
// (the project's ledger, in package ledger): its connections, its engine,
// how it is shown and its schema's version. The tables are all created and
// migrated here, in one schema per state; what a package built on the
// record does with its own tables is its own.
type Store struct {
	// DB is nil for a view of a state that does not exist yet, or of a file
	// older than the ledger (schema < 3): there is nothing to read.
	DB       *sql.DB
	Postgres bool
	Shown    string // where it is, as it may be shown (no password)
	Schema   int    // a file's schema version; PostgreSQL's this build's
	owned    bool   // Close closes DB
}

// Close releases the store's connections, unless they are a State's.
func (s *Store) Close() error {
	if s == nil || s.DB == nil || !s.owned {
		return nil
	}
	return s.DB.Close()
}

// OpenStore opens the project's state at loc for changes that take no lock
// (opt-outs, replies, pruning), migrated to this build's schema; a missing
// state is created when create says so, else its Store has no DB.
func OpenStore(ctx context.Context, l Location, create bool) (*Store, error) {
	loc := l.Unmasked()
	db, q, err := openControl(ctx, loc, "", true, create)
	if err != nil {
		return nil, err
	}
	return &Store{DB: db, Postgres: q == postgresDialect, Shown: Redact(loc), Schema: SchemaVersion, owned: true}, nil
}

// ViewStore opens the project's state at loc to read, whatever campaigns it
// holds, without creating or changing anything.
func ViewStore(ctx context.Context, l Location) (*Store, error) {
	st, err := openLedger(ctx, l.Unmasked())
	if err != nil {
		if st != nil {
			st.Close()
		}
		return nil, err
	}
	s := &Store{Postgres: st.q == postgresDialect, Shown: st.loc, Schema: st.schema, owned: true}
	if st.db != nil && !st.unscoped && st.schema >= 3 {
		s.DB = st.db
		return s, nil
	}
	st.Close()
	return s, nil
}

// Store is the state's own database, for the packages built on the record;
// closing the State closes it.
func (s *State) Store() *Store {
	st := &Store{Postgres: s.q == postgresDialect, Shown: s.loc, Schema: s.schema}
	if s.db != nil && !s.unscoped && s.schema >= 3 {
		st.DB = s.db
	}
	return st
}

// openLedger opens the project's state at loc to read its ledger, whatever
// campaigns it holds, without creating or changing anything: an empty view
// when there is no state yet.
func openLedger(ctx context.Context, loc string) (*State, error) {
	if err := CheckLocation(loc); err != nil {
		return nil, err
	}
	if IsPostgres(loc) {
		t, err := parsePostgres(loc)
		if err != nil {
			return nil, err
		}
		s := &State{loc: t.shown, q: postgresDialect, now: time.Now, schema: SchemaVersion}
		db := stdlib.OpenDB(*t.cfg)
		if v, err := pgSchemaVersion(ctx, db, t); err != nil || v < PostgresSchemaVersion {
			db.Close()
			if err == nil && v > 0 {
				err = fmt.Errorf("open state %s: schema %s is at version %d, this smsform needs %d: run any command that writes to migrate it", t.shown, t.schema, v, PostgresSchemaVersion)
			}
			return s, explainPostgres(t, err)
		}
		s.db = db
		return s, nil
	}
	return openFileView(ctx, loc)
}
