package state

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"spring.smsstate", "spring.smsstate"},
		{"postgres://db.example/sms", "postgres://db.example/sms"},
		{"postgres://ops:s3cret@db.example/sms", "postgres://ops:xxxxx@db.example/sms"},
		{"postgresql://ops@db.example/sms?sslmode=require", "postgresql://ops@db.example/sms?sslmode=require"},
		{"postgres://db.example/sms?password=s3cret&sslmode=require", "postgres://db.example/sms?password=xxxxx&sslmode=require"},
		// A password with an unencoded / parses as a path: everything
		// up to the last @ goes.
		{"postgres://ops:12/34@db.example/sms", "postgres://xxxxx@db.example/sms"},
		{"postgres://ops:a?b@db.example/sms", "postgres://xxxxx@db.example/sms"},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestPostgresURLErrors proves a password never shows in an error, and
// that settings smsform reads itself are checked.
func TestPostgresURLErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ url, want string }{
		{"postgres://ops:s3cret@127.0.0.1:1/sms?connect_timeout=2", "open state postgres://ops:xxxxx@127.0.0.1:1/sms"},
		{"postgres://ops:s3cret@db.example/sms?schema=Bad-Name", `schema "Bad-Name"`},
		{"postgres://ops:s3cret@db.example/sms?sslmode=sometimes", "sslmode"},
		{"postgres://ops:s3cret@db.example:99999/sms", "xxxxx"},
	} {
		_, err := Open(ctx, MustParseLocation(tc.url), Options{Campaign: "spring"})
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q and no password", Redact(tc.url), err, tc.want)
		}
		_, err = OpenReadOnly(ctx, MustParseLocation(tc.url), "spring")
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: read-only: got %v", Redact(tc.url), err)
		}
	}
}

// TestPostgresSchema proves that the schema parameter keeps campaigns
// apart, that plan-time reads create nothing, and that a campaign found
// in another schema stops a new record.
func TestPostgresSchema(t *testing.T) {
	ctx := context.Background()
	db := pg.Database(t)
	other := withParam(db, "schema", "sms_other")

	r, err := OpenReadOnly(ctx, MustParseLocation(db), "spring")
	must(t, err)
	if r.Lineage() != "" || r.Serial() != 0 {
		t.Fatalf("empty database: lineage %q serial %d", r.Lineage(), r.Serial())
	}
	must(t, r.Close())
	if n := count(t, db, `SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'smsform'`); n != 0 {
		t.Fatal("a read-only open created the schema")
	}

	s, err := Open(ctx, MustParseLocation(other), Options{Campaign: "spring"})
	must(t, err)
	must(t, s.RecordIntent(ctx, intent("b1", "+441")))
	must(t, s.Close())
	if n := count(t, db, `SELECT count(*) FROM sms_other.attempts`); n != 1 {
		t.Fatalf("%d attempts in schema sms_other, want 1", n)
	}

	_, err = Open(ctx, MustParseLocation(db), Options{Campaign: "spring"})
	var ee *EarlierStateError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "schema sms_other of this database records campaign \"spring\"") {
		t.Fatalf("default schema: got %v, want a sign naming sms_other", err)
	}
	s, err = Open(ctx, MustParseLocation(db), Options{Campaign: "spring", NewState: true})
	must(t, err)
	recordOne(t, s)
	must(t, s.Close())
	if n := count(t, db, `SELECT count(*) FROM smsform.campaigns`); n != 1 {
		t.Fatalf("%d campaigns in schema smsform after --new-state, want 1", n)
	}
}

// TestEarlierState proves that a missing state is not silently started
// anew when something says there was one.
func TestEarlierState(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (loc string) // leaves no state at loc
		sign  string
	}{
		{"lock file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "spring.smsstate")
			s := openTest(t, p)
			recordOne(t, s)
			must(t, s.Close())
			must(t, os.Remove(p))
			return p
		}, "spring.smsstate.spring.lock exists"},
		{"lock file of a holder killed while creating", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "spring.smsstate")
			must(t, os.WriteFile(p+".lock", []byte(`{"host":"h","pid":1,"creating":true}`), 0o600))
			must(t, os.WriteFile(p+"-wal", nil, 0o600))
			return p
		}, "spring.smsstate-wal exists"},
		{"wal file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "spring.smsstate")
			must(t, os.WriteFile(p+"-wal", nil, 0o600))
			return p
		}, "spring.smsstate-wal exists"},
		{"renamed state", func(t *testing.T) string {
			dir := t.TempDir()
			s := openTest(t, filepath.Join(dir, "old.smsstate"))
			recordOne(t, s)
			must(t, s.Close())
			return filepath.Join(dir, "spring.smsstate")
		}, `old.smsstate records campaign "spring"`},
		{"postgres record deleted", func(t *testing.T) string {
			db := pg.Database(t)
			s := openTest(t, db)
			recordOne(t, s)
			must(t, s.Close())
			execSQL(t, db, `DELETE FROM smsform.attempts`)
			execSQL(t, db, `DELETE FROM smsform.campaigns`)
			return db
		}, `locked campaign "spring" in schema smsform`},
		{"caller's sign", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "spring.smsstate")
		}, "plan.bin was made against state lineage 0123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := tc.setup(t)
			opts := Options{Campaign: "spring", Signs: []string{"plan.bin was made against state lineage 0123"}}
			if tc.name != "caller's sign" {
				opts.Signs = nil
			}
			_, err := Open(ctx, MustParseLocation(loc), opts)
			var ee *EarlierStateError
			if !errors.As(err, &ee) || !errors.Is(err, ErrEarlierState) || !strings.Contains(err.Error(), tc.sign) {
				t.Fatalf("got %v, want EarlierStateError with %q", err, tc.sign)
			}
			if !IsPostgres(loc) {
				if _, err := os.Stat(loc); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the refused Open created %s", loc)
				}
			}
			opts.NewState = true
			s, err := Open(ctx, MustParseLocation(loc), opts)
			must(t, err)
			if s.Serial() != 0 {
				t.Errorf("new state: serial %d", s.Serial())
			}
			must(t, s.Close())
		})
	}
	// No sign: a first send just starts, also after a first apply was
	// killed between taking the lock and creating the state.
	s, err := Open(ctx, MustParseLocation(filepath.Join(t.TempDir(), "spring.smsstate")), Options{Campaign: "spring"})
	must(t, err)
	must(t, s.Close())
	p := filepath.Join(t.TempDir(), "spring.smsstate")
	must(t, os.WriteFile(p+".lock", []byte(`{"host":"h","pid":1,"creating":true}`), 0o600))
	s, err = Open(ctx, MustParseLocation(p), Options{Campaign: "spring"})
	must(t, err)
	must(t, s.Close())
	s, err = Open(ctx, MustParseLocation(pg.Database(t)), Options{Campaign: "spring"})
	must(t, err)
	must(t, s.Close())
}

// TestPostgresConnectionLost cuts the writer's connection (and then
// restarts the server): the writer can write nothing more, its lock is
// free at once, and everything it had committed is there.
func TestPostgresConnectionLost(t *testing.T) {
	ctx := context.Background()
	db := pg.Database(t)
	for _, cut := range []string{"terminate", "restart"} {
		t.Run(cut, func(t *testing.T) {
			s, err := Open(ctx, MustParseLocation(db), Options{Campaign: "spring"})
			must(t, err)
			defer s.Close()
			must(t, s.RecordIntent(ctx, intent("b1-"+cut, "+441"+cut[:1])))
			must(t, s.RecordOutcome(ctx, "b1-"+cut, Outcome{Status: Sent}))
			must(t, s.RecordIntent(ctx, intent("b2-"+cut, "+442"+cut[:1])))
			serial := s.Serial()
			switch cut {
			case "terminate":
				execSQL(t, db, `SELECT pg_terminate_backend(backend_pid) FROM smsform.locks WHERE released_at IS NULL`)
			case "restart":
				if !pg.Throwaway() {
					t.Skip("an external server is not restarted")
				}
				must(t, pg.Kill())
				must(t, pg.Start())
			}
			err = s.RecordOutcome(ctx, "b2-"+cut, Outcome{Status: Sent})
			if err == nil || !strings.Contains(err.Error(), "write state ") {
				t.Fatalf("outcome after the connection went: %v, want a write error", err)
			}
			// The lock went with the connection: the next apply proceeds.
			// The server ends the terminated backend, and frees its lock,
			// a moment after pg_terminate_backend returns: the next Open
			// may wait for it, as an apply with --lock-timeout does.
			s2, err := Open(ctx, MustParseLocation(db), Options{Campaign: "spring", LockTimeout: 10 * time.Second})
			must(t, err)
			defer s2.Close()
			if s2.Serial() != serial {
				t.Errorf("serial %d, want %d", s2.Serial(), serial)
			}
			st := statuses(t, s2)
			if st["+441"+cut[:1]] != Sent || st["+442"+cut[:1]] != InDoubt {
				t.Errorf("after the cut: %v", st)
			}
			// The first writer stays refused, even with someone else's lock held.
			if err := s.RecordIntent(ctx, intent("b3-"+cut, "+443")); err == nil {
				t.Error("the cut writer recorded an intent")
			}
		})
	}
}

// TestPostgresCutDuringCommit loses the writer's connection inside a
// commit: a deferred trigger ends the session at COMMIT of batch "cut".
// The change is refused with a write error, the server kept nothing of
// it (a commit is all or nothing), what was committed before stays, and
// the lock is free for the next writer.
func TestPostgresCutDuringCommit(t *testing.T) {
	ctx := context.Background()
	db := pg.Database(t)
	s, err := Open(ctx, MustParseLocation(db), Options{Campaign: "spring"})
	must(t, err)
	defer s.Close()
	must(t, s.RecordIntent(ctx, intent("b1", "+441")))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Sent}))
	execSQL(t, db, `CREATE FUNCTION smsform.cut() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.batch_id = 'cut' THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;
			RETURN NULL;
		END $$;
		CREATE CONSTRAINT TRIGGER cut AFTER INSERT ON smsform.attempts
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION smsform.cut();`)
	serial := s.Serial()
	err = s.RecordIntent(ctx, intent("cut", "+442"))
	if err == nil || !strings.Contains(err.Error(), "write state ") {
		t.Fatalf("intent whose commit lost its connection: %v, want a write error", err)
	}
	if s.Serial() != serial {
		t.Errorf("serial moved to %d on a failed commit", s.Serial())
	}
	execSQL(t, db, `DROP TRIGGER cut ON smsform.attempts`)
	s2, err := Open(ctx, MustParseLocation(db), Options{Campaign: "spring", LockTimeout: 5 * time.Second})
	must(t, err)
	defer s2.Close()
	if got := statuses(t, s2); !mapsEqual(got, map[string]Status{"+441": Sent}) || s2.Serial() != serial {
		t.Errorf("after the cut: %v serial %d, want only +441 sent, serial %d", got, s2.Serial(), serial)
	}
	must(t, s2.RecordIntent(ctx, intent("cut", "+442")))
}

// TestPostgresReadOnly: a database made read-only refuses the next
// change with a write error naming the state, and the change is not half
// made.
func TestPostgresReadOnly(t *testing.T) {
	ctx := context.Background()
	db := pg.Database(t)
	s := openTest(t, db)
	must(t, s.RecordIntent(ctx, intent("b1", "+441")))
	must(t, s.Close())
	name := strings.TrimPrefix(mustParse(t, db).Path, "/")
	must(t, pg.Admin(ctx, "ALTER DATABASE "+name+" SET default_transaction_read_only = on"))
	_, err := Open(ctx, MustParseLocation(db), Options{Campaign: "spring"})
	if err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Fatalf("open of a read-only database: %v", err)
	}
	r, err := OpenReadOnly(ctx, MustParseLocation(db), "spring")
	must(t, err)
	if st := statuses(t, r); st["+441"] != InDoubt {
		t.Errorf("read-only view: %v", st)
	}
	must(t, r.Close())
	must(t, pg.Admin(ctx, "ALTER DATABASE "+name+" SET default_transaction_read_only = off"))
}

func mustParse(t *testing.T, u string) *url.URL {
	t.Helper()
	p, err := url.Parse(u)
	must(t, err)
	return p
}

func withParam(u, k, v string) string {
	p, _ := url.Parse(u)
	q := p.Query()
	q.Set(k, v)
	p.RawQuery = q.Encode()
	return p.String()
}

func execSQL(t *testing.T, db, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	must(t, err)
}

func count(t *testing.T, db, sql string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	must(t, err)
	defer conn.Close(ctx)
	var n int
	must(t, conn.QueryRow(ctx, sql).Scan(&n))
	return n
}

// A PostgreSQL schema of version 1 (the last release's) is migrated by the
// first command that writes, records intact; until then read-only views
// say what to run.
func TestPostgresMigratesV1(t *testing.T) {
	ctx := context.Background()
	db := pg.Database(t)
	execSQL(t, db, `CREATE SCHEMA smsform; SET search_path = smsform;
		CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());`+
		pgMigrations[0]+`;
		INSERT INTO schema_migrations (version) VALUES (1);
		INSERT INTO campaigns (name, lineage, serial, created_at) VALUES ('spring', '0123456789abcdef0123456789abcdef', 2, '2026-11-01T00:00:00Z');
		INSERT INTO attempts (campaign_id, batch_id, state, body_hash, recipients, started_at, finished_at, phones)
			SELECT id, 'b1', 'sent', 'h', 2, '2026-11-01T00:00:00Z', '2026-11-01T00:00:01Z', '["+441","+442"]' FROM campaigns;
		INSERT INTO locks (campaign, host, pid, backend_pid, started_at, released_at) VALUES ('spring', 'h', 1, 1, now(), now());`)
	if _, err := OpenReadOnly(ctx, MustParseLocation(db), "spring"); err == nil || !strings.Contains(err.Error(), "run any command that writes") {
		t.Errorf("read-only view of version 1: %v", err)
	}
	s := openTest(t, db)
	if s.Lineage() != "0123456789abcdef0123456789abcdef" || s.Serial() != 2 || len(statuses(t, s)) != 2 {
		t.Errorf("migrated: lineage %s serial %d %v", s.Lineage(), s.Serial(), statuses(t, s))
	}
	must(t, s.RecordIntent(ctx, intent("b2", "+443")))
	must(t, s.Close())
	if n := count(t, db, `SELECT max(version) FROM smsform.schema_migrations`); n != PostgresSchemaVersion {
		t.Errorf("schema version %d, want %d", n, PostgresSchemaVersion)
	}
}
