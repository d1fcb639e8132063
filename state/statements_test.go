package state

import (
	"context"
	"testing"
)

// TestStatements walks every statement name: each engine has a text for
// it, and the text prepares against that engine's schema, so that a
// statement forgotten or misspelt for one engine fails here rather than
// when a run first needs it.
func TestStatements(t *testing.T) { eachBackend(t, testStatements) }

func testStatements(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	recordOne(t, s) // a file state is created by its first change
	for q := range numStmts {
		text := s.q[q]
		if text == "" {
			t.Errorf("statement %d has no text in %s", q, b.name)
			continue
		}
		if q == qBegin || q == qCommit || q == qRollback {
			continue // they take no part in a prepared plan
		}
		st, err := s.db.PrepareContext(ctx, text)
		if err != nil {
			t.Errorf("statement %d does not prepare in %s: %v\n%s", q, b.name, err, text)
			continue
		}
		st.Close()
	}
	// The read-only views of version 2 files have the reads they make.
	for _, q := range []stmt{qEachRecord, qAttempts, qPlanApplied, qMeta, qCopyPlans} {
		if sqliteV2Dialect[q] == "" {
			t.Errorf("statement %d has no text for version 2 files", q)
		}
	}
}

// TestPostgresCapsFillfactor: the cap index keeps room in its pages (see
// pgMigrations), which a reformat of the schema's text must not drop.
func TestPostgresCapsFillfactor(t *testing.T) {
	s := openTest(t, pg.Database(t))
	recordOne(t, s)
	var opts string
	if err := s.db.QueryRowContext(context.Background(),
		`SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = to_regclass('caps')`).Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if opts != "fillfactor=70" {
		t.Errorf("caps has options %q, want fillfactor=70", opts)
	}
}
