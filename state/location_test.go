package state

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckLocation(t *testing.T) {
	for _, tc := range []struct {
		loc      string
		postgres bool
		ok       bool
	}{
		{"postgres://u@db/x", true, true},
		{"postgresql://db/x?sslmode=require", true, true},
		{"host=db user=sms password=hunter2 dbname=x", true, true},
		{"  dbname = 'my db' port=5433", true, true},
		{"sslmode=require", true, false}, // names no database
		{"host='db", true, false},        // unclosed quote
		{"campaign.smsstate", false, true},
		{"state files/c.smsstate", false, true},
		{"/abs/c.smsstate", false, true},
		{"", false, false},
		{"mysql://db/x", false, false},
		{"a\nb", false, false},
		{"x password=y", false, false}, // neither a path nor keywords
		// A URL whose postgres:// was left off is no file name.
		{"smsform:hunter2@db.internal:5432/campaigns", false, false},
		{"smsform:hunter2@db.internal", false, false},
		{"team@example/c.smsstate", false, true}, // an @, no password
	} {
		err := CheckLocation(tc.loc)
		if (err == nil) != tc.ok || IsPostgres(tc.loc) != tc.postgres {
			t.Errorf("%q: CheckLocation = %v, IsPostgres = %v; want ok %v, postgres %v", tc.loc, err, IsPostgres(tc.loc), tc.ok, tc.postgres)
		}
		if err != nil && !errors.Is(err, ErrLocation) {
			t.Errorf("%q: %v is not ErrLocation", tc.loc, err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") || strings.Contains(Redact(tc.loc), "hunter2") {
			t.Errorf("%q: the password shows: %v / %s", tc.loc, err, Redact(tc.loc))
		}
	}
}

func TestKeywordLocation(t *testing.T) {
	loc := `host=db user=sms password='a b\'c' dbname=x schema=other`
	if got := WithoutPassword(loc); strings.Contains(got, "password") || !strings.Contains(got, "host='db'") || !strings.Contains(got, "schema='other'") {
		t.Errorf("WithoutPassword = %q", got)
	}
	if got := Redact(loc); strings.Contains(got, "a b") || !strings.Contains(got, "password=xxxxx") || !strings.Contains(got, "dbname=x") {
		t.Errorf("Redact = %q", got)
	}
	tg, err := parsePostgres(loc)
	if err != nil {
		t.Fatal(err)
	}
	if tg.schema != "other" || tg.cfg.Database != "x" || tg.cfg.Password != "a b'c" || tg.cfg.User != "sms" {
		t.Errorf("parsed %+v schema %s", tg.cfg, tg.schema)
	}
}

func TestSameState(t *testing.T) {
	t.Setenv("PGDATABASE", "") // the locations below say their database
	dir := t.TempDir()
	real := filepath.Join(dir, "sub", "real.smsstate")
	os.MkdirAll(filepath.Dir(real), 0o755)
	os.WriteFile(real, []byte("x"), 0o600)
	os.Symlink(filepath.Join("sub", "real.smsstate"), filepath.Join(dir, "link.smsstate"))
	os.Link(real, filepath.Join(dir, "hard.smsstate"))
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{real, filepath.Join(dir, "link.smsstate"), true},
		{real, filepath.Join(dir, "hard.smsstate"), true},
		{real, filepath.Join(dir, "sub", "..", "sub", "real.smsstate"), true},
		{real, filepath.Join(dir, "other.smsstate"), false},
		{"postgres://a@db:5432/x", "host=db port=5432 user=b dbname=x sslmode=require", true},
		{"postgres://a@db/x", "postgres://a@db/x?schema=other", false},
		{"postgres://a@db/x", "postgres://a@db/y", false},
		{"postgres://a@db/x", real, false},
		// A plan job's reader role, for the database the project names.
		{"postgres://smsform@127.0.0.1:55432/campaigns?sslmode=disable", "postgres://reader@127.0.0.1:55432/campaigns?sslmode=disable", true},
		{"postgres://smsform@127.0.0.1:55432/campaigns?sslmode=disable", "host=127.0.0.1 port=55432 user=reader dbname=campaigns", true},
	} {
		got, err := SameState(MustParseLocation(tc.a), MustParseLocation(tc.b))
		if err != nil || got != tc.same {
			t.Errorf("SameState(%s, %s) = %v, %v; want %v", tc.a, tc.b, got, err, tc.same)
		}
	}
	// Without a database, the server takes the role's name for it: these
	// are two databases, and smsform, which cannot tell which one the
	// project meant, refuses both rather than keep two ledgers.
	for _, tc := range [][2]string{
		{"postgres://smsform@127.0.0.1:55432/?sslmode=disable", "postgres://reader@127.0.0.1:55432/?sslmode=disable"},
		{"postgres://smsform@127.0.0.1:55432/?sslmode=disable", "host=127.0.0.1 port=55432 user=reader"},
		{"postgres://smsform@127.0.0.1:55432/?sslmode=disable", "postgres://smsform@127.0.0.1:55432/smsform?sslmode=disable"},
	} {
		same, err := SameState(newLocation(tc[0]), newLocation(tc[1]))
		if err == nil || !strings.Contains(err.Error(), "names no database") {
			t.Errorf("SameState(%s, %s) = %v, %v; want refused: names no database", tc[0], tc[1], same, err)
		}
	}
	if _, err := ResolveFile(filepath.Join(dir, "dangling")); err != nil {
		t.Errorf("a missing file resolves its folder: %v", err)
	}
	os.Symlink("nowhere.smsstate", filepath.Join(dir, "dangling.smsstate"))
	if _, err := ResolveFile(filepath.Join(dir, "dangling.smsstate")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("dangling link: %v", err)
	}
}

// TestLocationNamesDatabase proves that a PostgreSQL location must name
// its database: PostgreSQL would otherwise use the one named after the
// role, and two roles (a plan job's reader, the applying role; or one
// location under two PGUSERs) would each keep a ledger.
func TestLocationNamesDatabase(t *testing.T) {
	t.Setenv("PGDATABASE", "")
	t.Setenv("PGUSER", "")
	t.Setenv("PGSERVICE", "")
	for _, tc := range []struct {
		loc  string
		ok   bool
		role string // named in the refusal
	}{
		{"postgres://smsform@127.0.0.1:55432/?sslmode=disable", false, "smsform"},
		{"postgres://reader@127.0.0.1:55432?sslmode=disable", false, "reader"},
		{"postgresql://reader:hunter2@db", false, "reader"},
		{"host=127.0.0.1 port=55432 user=reader", false, "reader"},
		{"host=db password=hunter2", false, ""}, // the OS user's name
		{"postgres://reader@db/campaigns", true, ""},
		{"postgres://reader@db/?dbname=campaigns", true, ""},
		{"host=db user=reader dbname=campaigns", true, ""},
	} {
		err := CheckLocation(tc.loc)
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckLocation = %v, want ok %v", Redact(tc.loc), err, tc.ok)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrLocation) || !strings.Contains(err.Error(), "names no database") || !strings.Contains(err.Error(), "postgres://HOST/DBNAME") ||
			!strings.Contains(err.Error(), tc.role) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v; want ErrLocation naming the role %q and the fix, no password", Redact(tc.loc), err, tc.role)
		}
		if _, err := ParseLocation(tc.loc); err == nil {
			t.Errorf("%s: ParseLocation accepts it", Redact(tc.loc))
		}
	}
	// PGDATABASE does not name it: each machine sets its own, and a
	// project file's state must be one database wherever it is read.
	t.Setenv("PGDATABASE", "campaigns")
	for _, loc := range []string{"postgres://smsform@db/?sslmode=disable", "host=db user=reader"} {
		if err := CheckLocation(loc); err == nil || !strings.Contains(err.Error(), "names no database") {
			t.Errorf("PGDATABASE=campaigns: CheckLocation(%s) = %v, want refused", loc, err)
		}
	}
	// A service's database is each machine's service file's: the location
	// names it itself, with the host and port, or is refused.
	for loc, ok := range map[string]bool{
		"postgres://smsform@db/?service=sms":         false,
		"service=sms user=reader":                    false,
		"postgres://smsform@db:5432/sms?service=sms": true,
		"host=db port=5432 dbname=sms service=sms":   true,
		"host=db dbname=sms service=sms":             false,
	} {
		if err := CheckLocation(loc); (err == nil) != ok || err != nil && !strings.Contains(err.Error(), "names a service") {
			t.Errorf("CheckLocation(%s) = %v, want ok %v", loc, err, ok)
		}
	}
}

// TestNamesServer: a location that leaves its host or port to PGHOST,
// PGPORT (or PGHOSTADDR, PGSERVICE) while the environment sets them is
// refused: each machine sets them for itself, and one project file would
// name two servers. Named in the location, or left to libpq's defaults
// where the environment is silent, it stands.
func TestNamesServer(t *testing.T) {
	for _, v := range []string{"PGHOST", "PGHOSTADDR", "PGPORT", "PGSERVICE"} {
		t.Setenv(v, "")
	}
	for _, loc := range []string{"postgres://smsform@/sms", "dbname=sms", "postgres://smsform@db/sms"} {
		if err := CheckLocation(loc); err != nil {
			t.Errorf("no PG variables: CheckLocation(%s) = %v", loc, err)
		}
	}
	t.Setenv("PGPORT", "55433")
	for loc, ok := range map[string]bool{
		"postgres://smsform@db/sms":                 false,
		"postgres://smsform@db:5432/sms":            true,
		"postgres://smsform@/sms?host=db&port=5432": true,
		"host=db dbname=sms":                        false,
		"host=db port=5432 dbname=sms":              true,
		"host=db port=5432 dbname=sms service=prod": true,
	} {
		err := CheckLocation(loc)
		if (err == nil) != ok || (err != nil && (!errors.Is(err, ErrLocation) || !strings.Contains(err.Error(), "names no port, so this machine's PGPORT"))) {
			t.Errorf("PGPORT set: CheckLocation(%s) = %v, want ok %v", loc, err, ok)
		}
	}
	t.Setenv("PGPORT", "")
	t.Setenv("PGSERVICE", "prod")
	if err := CheckLocation("postgres://smsform@db/sms"); err == nil || !strings.Contains(err.Error(), "names no port") {
		t.Errorf("PGSERVICE set, no port: %v, want refused", err)
	}
	t.Setenv("PGSERVICE", "")
	t.Setenv("PGHOST", "/var/run/other")
	for loc, ok := range map[string]bool{
		"postgres://smsform@/sms":              false,
		"postgres://smsform:hunter2@:5432/sms": false,
		"dbname=sms password=hunter2":          false,
		"postgres://smsform@db/sms":            true,
		"postgres://smsform@/sms?host=%2Fsock": true,
		"hostaddr=10.0.0.1 dbname=sms":         true,
	} {
		err := CheckLocation(loc)
		if (err == nil) != ok || (err != nil && (!strings.Contains(err.Error(), "names no host, so this machine's PGHOST picks the server") || strings.Contains(err.Error(), "hunter2"))) {
			t.Errorf("PGHOST set: CheckLocation(%s) = %v, want ok %v", Redact(loc), err, ok)
		}
	}
}

// TestPostgresNamesDatabase opens, against the real server, the test's
// database with its name left out: the server would take the database of
// the role's name (which exists: the test server's postgres). Neither a
// write nor a read goes there.
func TestPostgresNamesDatabase(t *testing.T) {
	t.Setenv("PGDATABASE", "")
	db := pg.Database(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/"
	loc := newLocation(u.String()) // past ParseLocation, which refuses it
	ctx := context.Background()
	if _, err := OpenReadOnly(ctx, loc, "spring"); err == nil || !strings.Contains(err.Error(), "names no database") {
		t.Errorf("OpenReadOnly %s: %v; want refused", loc, err)
	}
	if s, err := Open(ctx, loc, Options{Campaign: "spring"}); err == nil || !strings.Contains(err.Error(), "names no database") {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open %s: %v; want refused", loc, err)
	}
}

// File gives a state file's path, and nothing of a database: code that
// needs a path cannot be handed a connection string, password and all.
func TestLocationFile(t *testing.T) {
	for _, tt := range []struct{ loc, want string }{
		{"st/smsform.smsstate", "st/smsform.smsstate"},
		{"postgres://sms:hunter2@db/sms", ""},
		{"host=db dbname=sms password=hunter2", ""},
	} {
		if got := MustParseLocation(tt.loc).File(); got != tt.want {
			t.Errorf("File() of %s = %q, want %q", MustParseLocation(tt.loc), got, tt.want)
		}
	}
}

// TestLocationRefusesSystemSchema: PostgreSQL's own schemas cannot hold
// smsform's tables (pg_…: the server refuses to create one, with a bare
// error) or must not (information_schema: the tables would land among the
// catalogue's views). Both are refused as the location is read, the
// password never shown.
func TestLocationRefusesSystemSchema(t *testing.T) {
	for _, loc := range []string{
		"postgres://ops:hunter2@db/sms?schema=pg_catalog",
		"postgres://ops:hunter2@db/sms?schema=pg_mine",
		"postgres://ops:hunter2@db/sms?schema=information_schema",
		"host=db dbname=sms password=hunter2 schema=pg_toast",
		"host=db dbname=sms schema=INFORMATION_SCHEMA",
	} {
		err := CheckLocation(loc)
		if !errors.Is(err, ErrLocation) || !strings.Contains(err.Error(), "PostgreSQL's own") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v, want ErrLocation naming PostgreSQL's own schema", Redact(loc), err)
		}
	}
	for _, loc := range []string{"postgres://db/sms?schema=sms_prod", "postgres://db/sms?schema=pgsms", "postgres://db/sms"} {
		if err := CheckLocation(loc); err != nil {
			t.Errorf("%s: %v", loc, err)
		}
	}
}

// TestLocationRefusesKeywordCase: libpq's keywords are lower-case, and
// pgx sends PASSWORD=… to the server as a setting, whose refusal showed
// the location with the password unmasked. Such a location is refused
// as it is read, masked, saying what to write; the server's own settings
// (TimeZone) are left as written.
func TestLocationRefusesKeywordCase(t *testing.T) {
	for _, loc := range []string{
		"host=127.0.0.1 port=55432 dbname=sms user=postgres sslmode=disable PASSWORD=UpperSecretXY",
		"postgres://postgres@127.0.0.1:55432/sms?sslmode=disable&Password=UpperSecretXY",
		"postgres://postgres@127.0.0.1:55432/sms?SSLPASSWORD=UpperSecretXY",
		"host=db DBNAME=sms",
		"postgres://db/sms?SslMode=require",
	} {
		err := CheckLocation(loc)
		if !errors.Is(err, ErrLocation) || !strings.Contains(err.Error(), "keywords are lower-case") {
			t.Errorf("%s: %v, want ErrLocation saying keywords are lower-case", Redact(loc), err)
		}
		if strings.Contains(loc, "UpperSecretXY") && (err == nil || !strings.Contains(err.Error(), "PGPASSWORD") ||
			strings.Contains(err.Error(), "UpperSecret") || strings.Contains(Redact(loc), "UpperSecret") || strings.Contains(WithoutPassword(loc), "UpperSecret")) {
			t.Errorf("%s: %v: shows the password, or no hint of PGPASSWORD", Redact(loc), err)
		}
	}
	for _, loc := range []string{"postgres://db/sms?TimeZone=UTC", "host=db dbname=sms TimeZone=UTC"} {
		if err := CheckLocation(loc); err != nil {
			t.Errorf("%s: %v", loc, err)
		}
	}
}
