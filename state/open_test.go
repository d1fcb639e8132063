package state

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sqliteFile makes an SQLite database at path with the given SQL.
func sqliteFile(t *testing.T, path, script string) {
	t.Helper()
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path}).String())
	must(t, err)
	defer db.Close()
	_, err = db.Exec(script)
	must(t, err)
}

func TestOpenRefusesWhatIsNotAState(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
		want  string
	}{
		{"folder missing", func(t *testing.T, path string) {}, "does not exist"},
		{"empty file", func(t *testing.T, path string) { os.WriteFile(path, nil, 0o600) }, "empty"},
		{"text file", func(t *testing.T, path string) {
			os.WriteFile(path, []byte("name: spring\nsender: ACME\n"), 0o600)
		}, "not an smsform state"},
		{"garbage", func(t *testing.T, path string) {
			os.WriteFile(path, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 2000), 0o600)
		}, "not an smsform state"},
		{"header only", func(t *testing.T, path string) {
			os.WriteFile(path, []byte("SQLite format 3\x00"), 0o600)
		}, "not an smsform state"},
		{"truncated", func(t *testing.T, path string) {
			s := openTest(t, path)
			for i := range 20 {
				must(t, s.RecordIntent(ctx, intent(string(rune('a'+i)), phones(string(rune('a'+i)), 100)...)))
			}
			must(t, s.Close())
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)/2], 0o600)
		}, "truncated"},
		{"other SQLite database", func(t *testing.T, path string) {
			sqliteFile(t, path, "CREATE TABLE customers (phone TEXT)")
		}, "without smsform's tables"},
		{"newer schema", func(t *testing.T, path string) {
			s := openTest(t, path)
			recordOne(t, s)
			must(t, s.Close())
			sqliteFile(t, path, "INSERT INTO schema_migrations VALUES (99, 'x')")
		}, "newer smsform"},
		{"a folder", func(t *testing.T, path string) { os.Mkdir(path, 0o700) }, "folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "spring.smsstate")
			if tc.name == "folder missing" {
				path = filepath.Join(dir, "nope", "spring.smsstate")
			}
			tc.setup(t, path)
			before, _ := os.ReadFile(path)
			for _, open := range []struct {
				name string
				fn   func() (*State, error)
			}{
				{"Open", func() (*State, error) { return Open(ctx, MustParseLocation(path), Options{Campaign: "spring"}) }},
				{"OpenReadOnly", func() (*State, error) { return OpenReadOnly(context.Background(), MustParseLocation(path), "") }},
			} {
				s, err := open.fn()
				if open.name == "OpenReadOnly" && tc.name == "folder missing" {
					// Nothing there: an empty view, as for any missing file.
					if err != nil || s.Serial() != 0 {
						t.Errorf("%s: %v", open.name, err)
					}
					continue
				}
				if err == nil {
					s.Close()
					t.Fatalf("%s: no error", open.name)
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "spring.smsstate") {
					t.Errorf("%s: %q, want it to say %q and name the file", open.name, err, tc.want)
				}
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Errorf("a refused open changed the file")
			}
		})
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestOpenReadOnlyChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "spring.smsstate")

	// Missing: an empty view, and nothing created.
	r, err := OpenReadOnly(context.Background(), MustParseLocation(path), "")
	must(t, err)
	if r.Lineage() != "" || r.Serial() != 0 || r.Campaign() != "" {
		t.Errorf("empty view: %q %d %q", r.Lineage(), r.Serial(), r.Campaign())
	}
	n := 0
	must(t, r.Recipients(ctx, func(Recipient) error { n++; return nil }))
	c, err := r.Counts(ctx)
	must(t, err)
	if n != 0 || c[Sent] != 0 {
		t.Errorf("empty view has recipients")
	}
	must(t, r.Close())
	if names := listDir(t, dir); len(names) != 0 {
		t.Fatalf("read-only open of a missing state created %v", names)
	}

	s := openTest(t, path)
	must(t, s.RecordIntent(ctx, intent("b1", phones("1", 50)...)))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Sent}))
	must(t, s.Close())
	names := listDir(t, dir)
	before, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)

	// Like plan: read everything, twice over, then close.
	for range 2 {
		r, err := OpenReadOnly(context.Background(), MustParseLocation(path), "")
		must(t, err)
		if r.Lineage() != s.Lineage() || r.Serial() != 2 || r.Campaign() != "spring" {
			t.Errorf("view: %q %d %q", r.Lineage(), r.Serial(), r.Campaign())
		}
		if got := len(recipients(t, r)); got != 50 {
			t.Errorf("%d recipients, want 50", got)
		}
		_, err = r.Counts(ctx)
		must(t, err)
		must(t, r.Close())
	}
	if after := listDir(t, dir); !slices.Equal(names, after) {
		t.Errorf("directory %v became %v", names, after)
	}
	after, _ := os.ReadFile(path)
	fi2, _ := os.Stat(path)
	if !bytes.Equal(before, after) || !fi.ModTime().Equal(fi2.ModTime()) {
		t.Errorf("read-only open changed the state file")
	}
}

func TestOpenReadOnlyWhileApplying(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s")
	s := openTest(t, path)
	must(t, s.RecordIntent(ctx, intent("b1", "+441")))
	r, err := OpenReadOnly(context.Background(), MustParseLocation(path), "")
	must(t, err)
	defer r.Close()
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Sent}))
	// A new view sees every committed change, WAL included.
	r2, err := OpenReadOnly(context.Background(), MustParseLocation(path), "")
	must(t, err)
	defer r2.Close()
	if r2.Serial() != 2 || statuses(t, r2)["+441"] != Sent {
		t.Errorf("read-only view during apply: serial %d %v", r2.Serial(), statuses(t, r2))
	}
	must(t, r.Close())
	must(t, r2.Close())
	must(t, s.Close())
}

func TestLockConflict(t *testing.T) { eachBackend(t, testLockConflict) }

func testLockConflict(t *testing.T, b backend) {
	ctx := context.Background()
	path := b.loc(t)
	const run = "https://ci.example/acme/sms/runs/7"
	s, err := Open(ctx, MustParseLocation(path), Options{Campaign: "spring", RunURL: run})
	must(t, err)
	defer s.Close()
	_, err = Open(ctx, MustParseLocation(path), Options{Campaign: "spring"})
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want *LockedError", err)
	}
	host, _ := os.Hostname()
	if le.PID != os.Getpid() || le.Host != host || time.Since(le.Started) > time.Minute || le.RunURL != run {
		t.Errorf("holder %+v", le)
	}
	if msg := le.Error(); !strings.Contains(msg, "state is locked by pid ") || !strings.Contains(msg, "on host "+host+" since ") ||
		!strings.Contains(msg, Redact(path)) || !strings.Contains(msg, ", run "+run) {
		t.Errorf("message %q", msg)
	}
	if b.name == "postgres" {
		// Another campaign of the same database is another lock.
		a, err := Open(ctx, MustParseLocation(path), Options{Campaign: "autumn"})
		must(t, err)
		must(t, a.Close())
	}

	// LockTimeout waits for the holder to let go: the holder lets go once
	// the waiter says it waits (the lock was held then), and the waiter
	// must not have the lock before. The timeout is only a deadline.
	waiting := make(chan struct{})
	var released atomic.Bool
	go func() {
		<-waiting
		released.Store(true)
		s.Close()
	}()
	s2, err := Open(ctx, MustParseLocation(path), Options{Campaign: "spring", LockTimeout: time.Minute, LockWait: func(time.Duration) { close(waiting) }})
	must(t, err)
	if !released.Load() {
		t.Errorf("got the lock before it was released")
	}
	// ... and gives up when the holder does not, once the timeout is over
	// (a lower bound: a loaded machine only waits longer).
	waited := false
	start := time.Now()
	_, err = Open(ctx, MustParseLocation(path), Options{Campaign: "spring", LockTimeout: 200 * time.Millisecond, LockWait: func(time.Duration) { waited = true }})
	if !errors.As(err, &le) || !waited || time.Since(start) < 200*time.Millisecond {
		t.Errorf("timed wait: %v after %v (said it waits: %v)", err, time.Since(start), waited)
	}
	must(t, s2.Close())
}

func TestLockedErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		e    LockedError
		want string
	}{
		{LockedError{Path: "/x/s.lock", Host: "ci-7", PID: 1234, Started: time.Date(2026, 11, 22, 4, 50, 0, 0, time.UTC)},
			"state is locked by pid 1234 on host ci-7 since 2026-11-22T04:50:00Z (/x/s.lock)"},
		{LockedError{Path: "/x/s.lock"}, "state is locked by another process (/x/s.lock)"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestLockedErrorToleratesPartialHolder(t *testing.T) {
	for _, content := range []string{"", `{"host":"ci-7","pi`, "garbage"} {
		path := filepath.Join(t.TempDir(), "s.lock")
		os.WriteFile(path, []byte(content), 0o600)
		var le *LockedError
		if err := lockedError(path, 0); !errors.As(err, &le) || le.PID != 0 {
			t.Errorf("%q: %v", content, err)
		}
	}
}
