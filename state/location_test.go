package state

import (
	"errors"
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
	} {
		got, err := SameState(MustParseLocation(tc.a), MustParseLocation(tc.b))
		if err != nil || got != tc.same {
			t.Errorf("SameState(%s, %s) = %v, %v; want %v", tc.a, tc.b, got, err, tc.same)
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
