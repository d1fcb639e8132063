package state

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestPostgresErrors: the common failures of a team's first PostgreSQL
// state each get smsform's own cause and a hint naming what to set, the
// driver's words kept after it. Against a real server where the failure
// can be made here (an unknown database or role, nothing listening, a role
// that may only read), by the driver's error otherwise (a wrong password,
// a server that wants TLS).
func TestPostgresErrors(t *testing.T) {
	ctx := context.Background()
	base := pg.Database(t)
	owner := openTest(t, base)
	recordOne(t, owner)
	owner.Close()
	must(t, pg.Admin(ctx, `DO $$ BEGIN CREATE ROLE smsform_reader LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`))
	must(t, Grant(ctx, MustParseLocation(base), "smsform_reader"))
	with := func(f func(u *url.URL)) string {
		u, err := url.Parse(base)
		must(t, err)
		f(u)
		return u.String()
	}
	for _, tc := range []struct {
		name, loc, cause, hint string
	}{
		{"unknown database", with(func(u *url.URL) { u.Path = "/no_such_db_here" }), "PostgreSQL has no database no_such_db_here", "createdb no_such_db_here"},
		{"unknown role", with(func(u *url.URL) { u.User = url.User("no_such_role") }), "PostgreSQL has no role no_such_role", "PGUSER"},
		{"nothing listening", "postgres://sms@127.0.0.1:1/x?connect_timeout=5", "nothing answers at 127.0.0.1:1", "start PostgreSQL there"},
		{"read-only role", with(func(u *url.URL) { u.User = url.User("smsform_reader") }), "role smsform_reader may not do this in the state's schema smsform", "grant-readonly may only plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(ctx, MustParseLocation(tc.loc), Options{Campaign: "spring"})
			var pe *PostgresError
			if !errors.As(err, &pe) || !strings.Contains(pe.Cause, tc.cause) || !strings.Contains(pe.Hint(), tc.hint) {
				t.Fatalf("Open = %v, want the cause %q and a hint naming %q", err, tc.cause, tc.hint)
			}
			if !strings.Contains(err.Error(), "(") || pe.Err == nil {
				t.Errorf("the driver's words are not kept: %v", err)
			}
			// One line, each of the driver's lines once (pgx repeats an
			// address it tried with TLS and then without).
			if msg := err.Error(); strings.Contains(msg, "\n") || strings.Count(msg, "dial error") > 1 {
				t.Errorf("the driver's words are not said once, on one line: %q", msg)
			}
		})
	}
	target, err := parsePostgres("postgres://sms@db.example:5433/camp")
	must(t, err)
	for _, tc := range []struct {
		err         error
		cause, hint string
	}{
		{&pgconn.PgError{Code: "28P01", Message: `password authentication failed for user "sms"`}, "refused the password of role sms", "~/.pgpass"},
		{&pgconn.PgError{Code: "28000", Message: `no pg_hba.conf entry for host "10.0.0.1", user "sms", database "camp", no encryption`}, "only encrypted connections", "sslmode=require"},
		{fmt.Errorf("tls error: server refused TLS connection"), "offers no TLS", "sslmode=prefer"},
	} {
		var pe *PostgresError
		if err := explainPostgres(target, tc.err); !errors.As(err, &pe) || !strings.Contains(pe.Cause, tc.cause) || !strings.Contains(pe.Hint(), tc.hint) ||
			!strings.Contains(err.Error(), tc.err.Error()) {
			t.Errorf("%v: %v (hint %q)", tc.err, err, pe.Hint())
		}
	}
}

// The driver's words say each thing once: pgx repeats a lookup's error.
func TestDriverWords(t *testing.T) {
	for in, want := range map[string]string{
		"failed to connect:\n\t127.0.0.1:1: refused\n\t127.0.0.1:1: refused":                        "failed to connect: 127.0.0.1:1: refused",
		"hostname resolving error: lookup db.invalid: no such host lookup db.invalid: no such host": "hostname resolving error: lookup db.invalid: no such host",
		"said that that": "said that that",
		"no repeat here": "no repeat here",
	} {
		if got := driverWords(in); got != want {
			t.Errorf("driverWords(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPostgresErrorsMaskPassword: whatever a driver's or server's message
// quotes of the location, the error of opening a state carries no
// password, and still wraps what it wrapped.
func TestPostgresErrorsMaskPassword(t *testing.T) {
	for _, loc := range []string{
		"postgres://ops:s3cretPW@db.example/sms",
		"postgres://db.example/sms?user=ops&password=s3cretPW",
		"host=db.example dbname=sms user=ops password='s3cretPW'",
	} {
		target, err := parsePostgres(loc)
		must(t, err)
		cause := errors.New("server closed the connection")
		err = explainPostgres(target, fmt.Errorf("connect as ops with s3cretPW: %w", cause))
		if strings.Contains(err.Error(), "s3cretPW") || !strings.Contains(err.Error(), "xxxxx") || !errors.Is(err, cause) {
			t.Errorf("%s: %v (wraps the cause: %v)", Redact(loc), err, errors.Is(err, cause))
		}
	}
}
