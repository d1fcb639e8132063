package state

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// This file grants a PostgreSQL role the right to read a state and nothing
// more, for plan jobs: plan only reads, so its credentials need not be able
// to write who was messaged.

// ReadOnlyGrants is the SQL that lets role read the state at loc (a
// PostgreSQL location): the schema (the location's schema parameter,
// DefaultSchema by default) created if it is missing, owned by the
// location's user; USAGE on it; SELECT on its tables; and default
// privileges so that the tables a later smsform's migrations create, which
// the location's user creates when it applies, are readable too. Run as
// that user (or a superuser).
func ReadOnlyGrants(l Location, role string) ([]string, error) {
	loc := l.Unmasked()
	if !IsPostgres(loc) {
		return nil, fmt.Errorf("state %s is a file: a read-only role is for a PostgreSQL state (a file is read by whoever may read the file)", Redact(loc))
	}
	if strings.TrimSpace(role) == "" {
		return nil, errors.New("name the role to grant reading to")
	}
	t, err := parsePostgres(loc)
	if err != nil {
		return nil, err
	}
	if t.cfg.User == "" {
		return nil, fmt.Errorf("state %s names no user: name the role that applies (postgres://USER@HOST/DB), which owns smsform's tables", t.shown)
	}
	// The SQL is printed for psql: a line break in a name would end a
	// comment line and start a statement nobody meant.
	for _, name := range []string{role, t.cfg.User} {
		if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return nil, fmt.Errorf("role %q holds a control character: not a role smsform will grant anything to or for", name)
		}
	}
	schema, owner, reader := pgx.Identifier{t.schema}.Sanitize(), pgx.Identifier{t.cfg.User}.Sanitize(), pgx.Identifier{role}.Sanitize()
	return []string{
		"CREATE SCHEMA IF NOT EXISTS " + schema + " AUTHORIZATION " + owner,
		"GRANT USAGE ON SCHEMA " + schema + " TO " + reader,
		"GRANT SELECT ON ALL TABLES IN SCHEMA " + schema + " TO " + reader,
		"ALTER DEFAULT PRIVILEGES FOR ROLE " + owner + " IN SCHEMA " + schema + " GRANT SELECT ON TABLES TO " + reader,
	}, nil
}

// Grant creates or migrates the state's schema at loc, as apply would, and
// then runs [ReadOnlyGrants] in one transaction: role can read every table
// of this smsform's schema and of the later ones.
func Grant(ctx context.Context, l Location, role string) error {
	loc := l.Unmasked()
	stmts, err := ReadOnlyGrants(l, role)
	if err != nil {
		return err
	}
	t, err := parsePostgres(loc)
	if err != nil {
		return err
	}
	db := stdlib.OpenDB(*t.cfg)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("open state %s: %w", t.shown, explainPostgres(t, err))
	}
	defer conn.Close()
	if err := migratePostgres(ctx, conn, t); err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("grant %s reading state %s: %w", role, t.shown, err)
	}
	defer tx.Rollback()
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("grant %s reading state %s: %w", role, t.shown, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("grant %s reading state %s: %w", role, t.shown, err)
	}
	return nil
}

// IsPermissionDenied reports whether err is PostgreSQL refusing the role
// something it was not granted (SQLSTATE 42501): a plan job's role that
// may not read the state's schema yet.
func IsPermissionDenied(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}

// Role is the role a PostgreSQL location connects as (its user, else
// PGUSER's or the system user's, as libpq picks); "" for a file or a
// location that does not parse.
func Role(l Location) string {
	loc := l.Unmasked()
	if !IsPostgres(loc) {
		return ""
	}
	t, err := parsePostgres(loc)
	if err != nil {
		return ""
	}
	return t.cfg.User
}
