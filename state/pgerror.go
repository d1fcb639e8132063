package state

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/smsform/smsform/internal/redact"
)

// PostgresError is a PostgreSQL failure smsform can name: its own
// one-line cause and what to set (Hint), with the driver's words kept
// after it, for the failures a team meets first (authentication,
// permission, an unknown database or role, nothing listening, TLS).
type PostgresError struct {
	Cause string
	hint  string
	Err   error // the driver's
}

func (e *PostgresError) Error() string { return e.Cause + " (" + driverWords(e.Err.Error()) + ")" }

// driverWords is the driver's message on one line: pgx lists each address
// it tried on a line of its own, and the same address twice when it tried
// with TLS and then without; each line is said once.
func driverWords(msg string) string {
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	return dropRepeat(strings.Join(lines, " "))
}

// dropRepeat is s without a tail that only says again what comes before it:
// pgx ends a failed host lookup with the lookup's error twice. A word said
// twice ("that that") is not a tail.
func dropRepeat(s string) string {
	for i := len(s) / 2; i < len(s)-8; i++ {
		if s[i] == ' ' && strings.HasSuffix(s[:i], s[i+1:]) {
			return s[:i]
		}
	}
	return s
}
func (e *PostgresError) Unwrap() error { return e.Err }

// Hint says what to set or do.
func (e *PostgresError) Hint() string { return e.hint }

// explainPostgres is err, from opening or using the state t, as a
// *PostgresError when it is one of the failures it knows; else err.
func explainPostgres(t *pgTarget, err error) error {
	return withoutSecrets(t, explain(t, err))
}

// withoutSecrets is err with every password of t's location it quotes
// masked. The driver's words come from code that saw the password (a
// server's or a resolver's message may quote what it was given), and a
// message is shown to people and kept in CI logs: whatever else goes
// wrong, it must not carry the password out. errors.Is and errors.As
// still see err.
func withoutSecrets(t *pgTarget, err error) error {
	if err == nil {
		return nil
	}
	if msg := redact.Secrets(err.Error(), t.raw); msg != err.Error() {
		return &maskedError{msg: msg, err: err}
	}
	return err
}

// maskedError is an error whose message had a password masked.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// explain is explainPostgres before its masking.
func explain(t *pgTarget, err error) error {
	if err == nil || errors.As(err, new(*PostgresError)) {
		return err
	}
	role, db, where := t.cfg.User, t.cfg.Database, fmt.Sprintf("%s:%d", t.cfg.Host, t.cfg.Port)
	e := &PostgresError{Err: err}
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "28P01":
		e.Cause = fmt.Sprintf("PostgreSQL refused the password of role %s", role)
		e.hint = fmt.Sprintf("set PGPASSWORD, or add a line %s:%s:%s:PASSWORD to ~/.pgpass (mode 0600): a password never goes in the project file or a command line", where, db, role)
	case errors.As(err, &pe) && pe.Code == "28000" && strings.Contains(pe.Message, "no encryption"):
		e.Cause = "PostgreSQL accepts only encrypted connections from here"
		e.hint = "add sslmode=require (or verify-full, with sslrootcert) to the state's URL, or set PGSSLMODE"
	case errors.As(err, &pe) && pe.Code == "28000" && strings.Contains(pe.Message, "does not exist"):
		e.Cause = fmt.Sprintf("PostgreSQL has no role %s", role)
		e.hint = "name an existing role in the state's URL (postgres://ROLE@host/db) or PGUSER, or create it: createuser " + role
	case errors.As(err, &pe) && pe.Code == "28000":
		e.Cause = fmt.Sprintf("PostgreSQL does not let role %s connect to database %s from here", role, db)
		e.hint = "ask the database's administrator for an entry in pg_hba.conf, or connect as another role"
	case errors.As(err, &pe) && pe.Code == "3D000":
		e.Cause = fmt.Sprintf("PostgreSQL has no database %s", db)
		e.hint = fmt.Sprintf("create it (createdb %s), or fix the database name in the state's URL", db)
	case errors.As(err, &pe) && pe.Code == "42501":
		e.Cause = fmt.Sprintf("role %s may not do this in the state's schema %s", role, t.schema)
		e.hint = "apply, resolve, pause and migrate need a role that may write the state (the one that created it, or one granted as much); a role given smsform state grant-readonly may only plan and list"
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Cause = fmt.Sprintf("nothing answers at %s", where)
		e.hint = "start PostgreSQL there, or fix the host and port of the state's URL (or PGHOST and PGPORT)"
	case strings.Contains(err.Error(), "server refused TLS connection"):
		e.Cause = fmt.Sprintf("the server at %s offers no TLS, and the state's URL asks for it", where)
		e.hint = "enable ssl on the server, or (on a network you trust) set sslmode=prefer in the state's URL"
	default:
		var ne *net.DNSError
		if !errors.As(err, &ne) {
			return err
		}
		e.Cause = fmt.Sprintf("the host %s does not resolve", t.cfg.Host)
		e.hint = "check the host of the state's URL (or PGHOST) and this machine's DNS"
	}
	return e
}
