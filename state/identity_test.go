package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// One state, many spellings: a symbolic link, "..", relative and absolute
// all reach one file, and so one lock. (A second hard link is refused:
// TestHardLinkRefused.)
func TestOneLockWhateverTheSpelling(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	real := filepath.Join(dir, "sub", "real.smsstate")
	must(t, os.MkdirAll(filepath.Dir(real), 0o755))
	s := openTest(t, real)
	recordOne(t, s)
	must(t, s.Close())
	must(t, os.Symlink(filepath.Join("sub", "real.smsstate"), filepath.Join(dir, "link.smsstate")))
	// A link to a folder, then "..": the system goes up from where the link
	// leads (sub), not from the link's folder (dir, where no state is).
	must(t, os.MkdirAll(filepath.Join(dir, "sub", "inner"), 0o755))
	must(t, os.Symlink(filepath.Join("sub", "inner"), filepath.Join(dir, "jump")))
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	must(t, os.Chdir(dir))

	for _, other := range []string{"link.smsstate", "sub/../sub/real.smsstate", filepath.Join("sub", "real.smsstate"), "jump/../real.smsstate"} {
		holder, err := Open(ctx, MustParseLocation(real), Options{Campaign: "spring"})
		must(t, err)
		_, err = Open(ctx, MustParseLocation(other), Options{Campaign: "spring"})
		var le *LockedError
		if !errors.As(err, &le) || !errors.Is(err, ErrLocked) || le.PID != os.Getpid() {
			t.Errorf("%s while %s is held: %v, want the holder named", other, real, err)
		}
		must(t, holder.Close())
		// Free once released, through that spelling too.
		s, err := Open(ctx, MustParseLocation(other), Options{Campaign: "spring"})
		must(t, err)
		must(t, s.Close())
	}
}

// One file reached at two paths that resolving cannot join (a file
// bind-mounted at a second place, or mounted into two containers: one
// inode, one name each, so no second link either) is one lock: the lock
// file is named after the path, but each holder also locks its campaign's
// byte of the file itself. A test cannot bind mount; a hard link in
// another folder is the same inode at another path, and the lock is taken
// here below Open, which would refuse the link for itself.
func TestOneLockWhateverThePath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the lock on the state file itself is Linux's (lock_inode_linux.go)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	real := filepath.Join(dir, "a", "s.smsstate")
	other := filepath.Join(dir, "b", "s.smsstate")
	must(t, os.MkdirAll(filepath.Dir(real), 0o755))
	must(t, os.MkdirAll(filepath.Dir(other), 0o755))
	s := openTest(t, real) // no file yet: made by the first change, then locked
	recordOne(t, s)
	must(t, os.Link(real, other))
	refused := func(what string, err error) {
		t.Helper()
		var le *LockedError
		if !errors.As(err, &le) || !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another path to the same file") {
			t.Errorf("%s: %v, want locked through another path", what, err)
		}
		if _, err := os.Stat(lockPath(other, "spring")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the refused lock file is left: %v", what, err)
		}
	}
	_, err := acquireLock(ctx, other, "spring", Options{})
	refused("the file made while locked", err)
	must(t, s.Close())

	lk, err := acquireLock(ctx, real, "spring", Options{})
	must(t, err)
	_, err = acquireLock(ctx, other, "spring", Options{})
	refused("the file locked at its other path", err)
	// Another campaign of the file is not held up.
	autumn, err := acquireLock(ctx, other, "autumn", Options{})
	must(t, err)
	must(t, autumn.release(true))
	// Waited for within the timeout, and taken once released.
	go func() { time.Sleep(100 * time.Millisecond); lk.release(false) }()
	lk2, err := acquireLock(ctx, other, "spring", Options{LockTimeout: 5 * time.Second})
	must(t, err)
	must(t, lk2.release(true))

	// Another process (another container) holds it through the first path.
	must(t, os.Remove(other)) // the child's Open refuses a second link
	_, out := startHelper(t, "lock", real)
	if !out.Scan() || out.Text() != "locked" {
		t.Fatalf("child: %q %v", out.Text(), out.Err())
	}
	must(t, os.Link(real, other))
	_, err = acquireLock(ctx, other, "spring", Options{})
	refused("held by another process", err)
}

// A state file with a second name (a hard link) is refused through either
// name, for reading and writing, naming the file and the fix: SQLite's
// journal follows the name, so two names are two journals over one file.
// With the second name gone, the state opens again as it was.
func TestHardLinkRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	real := filepath.Join(dir, "real.smsstate")
	s := openTest(t, real)
	recordOne(t, s)
	must(t, s.Close())
	hard := filepath.Join(dir, "hard.smsstate")
	must(t, os.Link(real, hard))
	for _, name := range []string{real, hard} {
		_, err := Open(ctx, MustParseLocation(name), Options{Campaign: "spring"})
		if !errors.Is(err, ErrHardLinks) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "-samefile") {
			t.Errorf("Open(%s) = %v, want the second name refused, naming the file and how to find the other", name, err)
		}
		_, err = OpenReadOnly(ctx, MustParseLocation(name), "spring")
		if !errors.Is(err, ErrHardLinks) {
			t.Errorf("OpenReadOnly(%s) = %v, want refused", name, err)
		}
	}
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(hard + side); err == nil {
			t.Errorf("%s%s was made", hard, side)
		}
	}
	must(t, os.Remove(hard))
	s, err := Open(ctx, MustParseLocation(real), Options{Campaign: "spring"})
	must(t, err)
	defer s.Close()
	if got := recipients(t, s); len(got) != 1 {
		t.Errorf("after the link went: %d recorded, want 1", len(got))
	}
}

// A lock file that is a symbolic link is refused, and what it points to
// is left as it was.
func TestLockFileLinkIsNotFollowed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious.txt")
	must(t, os.WriteFile(target, []byte("keep me\n"), 0o600))
	path := filepath.Join(dir, "c.smsstate")
	must(t, os.Symlink(target, LockFile(path, "spring")))
	_, err := Open(context.Background(), MustParseLocation(path), Options{Campaign: "spring"})
	if err == nil || !strings.Contains(err.Error(), "is a symbolic link") || !strings.Contains(err.Error(), "c.smsstate.spring.lock") {
		t.Fatalf("Open = %v, want the link named and refused", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a state was created beside a refused lock")
	}
}

// Opening and closing a state without recording anything leaves nothing
// behind: no file, no lock file, no record, no holder's row; a campaign
// whose state holds others' records leaves those as they were.
func TestNothingRecordedLeavesNothing(t *testing.T) { eachBackend(t, testNothingRecordedLeavesNothing) }

func testNothingRecordedLeavesNothing(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	s, err := Open(ctx, MustParseLocation(loc), Options{Campaign: "spring", Shared: true})
	must(t, err)
	if s.Lineage() != "" || s.Serial() != 0 {
		t.Errorf("unborn: lineage %q serial %d", s.Lineage(), s.Serial())
	}
	if applied, err := s.PlanApplied(ctx, "p"); err != nil || applied {
		t.Errorf("PlanApplied = %v, %v", applied, err)
	}
	must(t, s.Close())
	if b.name == "file" {
		for _, p := range []string{loc, LockFile(loc, "spring"), loc + "-wal"} {
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was left behind", p)
			}
		}
	} else {
		if n := count(t, loc, `SELECT count(*) FROM smsform.campaigns`); n != 0 {
			t.Errorf("%d campaign records left", n)
		}
		if n := count(t, loc, `SELECT count(*) FROM smsform.locks`); n != 0 {
			t.Errorf("%d holder rows left", n)
		}
	}
	// Nothing left means no sign: a new state is started without --new-state.
	s, err = Open(ctx, MustParseLocation(loc), Options{Campaign: "spring", Shared: true})
	must(t, err)
	recordOne(t, s)
	must(t, s.Close())
	// Another campaign that records nothing leaves spring's record alone.
	a, err := Open(ctx, MustParseLocation(loc), Options{Campaign: "autumn", Shared: true})
	must(t, err)
	must(t, a.Close())
	r, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "spring")
	must(t, err)
	defer r.Close()
	if r.Serial() != 1 || len(r.Lineage()) != 32 {
		t.Errorf("spring after autumn's empty run: serial %d lineage %q", r.Serial(), r.Lineage())
	}
	if o, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "autumn"); err != nil || o.Lineage() != "" {
		t.Errorf("autumn: %v lineage %q", err, o.Lineage())
	}
}

// A project's file holds many campaigns, each with its own record and lock;
// a file that is not shared holds one.
func TestSharedFileHoldsManyCampaigns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "project.smsstate")
	a, err := Open(ctx, MustParseLocation(path), Options{Campaign: "spring", Shared: true})
	must(t, err)
	b, err := Open(ctx, MustParseLocation(path), Options{Campaign: "autumn", Shared: true})
	must(t, err) // a second campaign of the file runs beside the first
	must(t, a.RecordIntent(ctx, intent("a1", "+441")))
	must(t, b.RecordIntent(ctx, intent("b1", "+441", "+442")))
	must(t, a.RecordOutcome(ctx, "a1", Outcome{Status: Sent}))
	must(t, b.RecordOutcome(ctx, "b1", Outcome{Status: Failed, Reason: "no"}))
	if a.Lineage() == b.Lineage() {
		t.Error("two campaigns share a lineage")
	}
	must(t, a.Close())
	must(t, b.Close())
	for name, want := range map[string]Status{"spring": Sent, "autumn": Failed} {
		r, err := OpenSharedReadOnly(ctx, MustParseLocation(path), name)
		must(t, err)
		if got := statuses(t, r); got["+441"] != want {
			t.Errorf("%s: %v", name, got)
		}
		r.Close()
	}
	if _, err := OpenReadOnly(ctx, MustParseLocation(path), ""); err == nil || !strings.Contains(err.Error(), "holds 2 campaigns") {
		t.Errorf("no campaign named: %v", err)
	}
	if _, err := Open(ctx, MustParseLocation(path), Options{Campaign: "winter"}); !errors.Is(err, ErrLineage) {
		t.Errorf("not shared: %v, want ErrLineage", err)
	}
}
