package reliability

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/smsform/smsform/internal/pgtest"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// postgresFaults are the fault matrix's rows for a state in PostgreSQL:
// a fault of the sandbox, to take the in-doubt and resolve path through
// the database, then faults of the database itself.
func postgresFaults() []fault {
	return []fault{
		{
			name:    "postgres: ambiguous (dropped after acting, 0.2)",
			backend: "postgres",
			cfg:     sandbox.Config{AmbiguousRate: 0.2},
			before:  maxErrors,
			exits:   []int{0, 3},
			after:   checkResolve,
		},
		{
			name: "postgres: server restarted during the run",
			before: func(t *testing.T, p *project, batches int) []string {
				// A server of its own: the others' runs go on.
				own := pgtest.New(pgtest.Options{})
				t.Cleanup(func() { own.Stop() })
				p.usePostgres(own.Database(t))
				p.srv.OnSend(func(n int) {
					if n == batches/3 {
						if err := own.Kill(); err != nil {
							t.Error(err)
						}
						if err := own.Start(); err != nil {
							t.Error(err)
						}
					}
				})
				return nil
			},
			// 1: the next write found its connection gone; 0 when every
			// write had been made before (the last batches).
			exits: []int{0, 1},
			after: afterLostConnection,
		},
		{
			name:    "postgres: connection cut during the run",
			backend: "postgres",
			before: func(t *testing.T, p *project, batches int) []string {
				p.srv.OnSend(func(n int) {
					if n == batches/3 {
						terminate(t, p.stateURL)
					}
				})
				return nil
			},
			exits: []int{0, 1},
			after: afterLostConnection,
		},
		{
			name:    "postgres: lock holder killed (next apply proceeds)",
			backend: "postgres",
			before:  killHolder,
			exits:   []int{0},
			after:   func(t *testing.T, p *project, o outcome, _ int) string { return p.note },
		},
		{
			name:    "postgres: database read-only",
			backend: "postgres",
			before: func(t *testing.T, p *project, batches int) []string {
				sendHalf(t, p)
				db := dbName(t, p.stateURL)
				admin(t, "ALTER DATABASE "+db+" SET default_transaction_read_only = on")
				p.restore = func() { admin(t, "ALTER DATABASE "+db+" SET default_transaction_read_only = off") }
				return nil
			},
			exits: []int{1},
			after: afterStateRefused([]string{"read-only"}, false),
		},
		{
			name:   "postgres: database full (tablespace on a 'tmpfs' just big enough)",
			before: databaseFull,
			exits:  []int{1},
			// A run must outgrow the room left (a few pages).
			minRecipients: 2000,
			after:         afterStateRefused([]string{"no space left", "could not extend"}, true),
		},
	}
}

// afterLostConnection checks an apply whose database connection went
// away: it said so, at most the batches in flight are in doubt, and the
// next apply (the lock went with the connection) finishes the campaign.
func afterLostConnection(t *testing.T, p *project, o outcome, _ int) string {
	t.Helper()
	tl := p.tally()
	if tl.InDoubtBatches > 4 {
		t.Errorf("%d in-doubt batches after the connection went, want at most one per request in flight", tl.InDoubtBatches)
	}
	note := "the writes all landed before the cut"
	if o.code == 1 {
		if !strings.Contains(o.stderr, "write state postgres://") {
			t.Errorf("apply's error does not say the state write failed: %s", o.stderr)
		}
		note = fmt.Sprintf("stopped after %d of %d sent: %s", tl.Sent, len(p.phones), firstLine(o.stderr))
	}
	finish(t, p)
	return note
}

// terminate ends every session of the database at url but its own.
func terminate(t *testing.T, dbURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		t.Error(err)
	}
}

// killHolder starts an apply, SIGKILLs it while it sends (holding the
// lock), and at once opens the state: the lock goes with the killed
// process's session as soon as the server sees its socket closed, which
// takes milliseconds (a backend busy with a commit finishes it first), so
// the open may wait up to 5 s and the wait is reported. Then it resolves
// the in-doubt batches from the outbox, as an operator would; the apply
// under test sends the rest.
func killHolder(t *testing.T, p *project, batches int) []string {
	t.Helper()
	sends := make(chan struct{}, 1024)
	p.srv.OnSend(func(int) { sends <- struct{}{} })
	cmd := p.command("apply", p.campaign, "--auto-approve", "--json")
	done, _ := startAsync(t, cmd)
	select {
	case <-afterSends(sends, max(1, batches/3), 0):
	case <-done:
		t.Fatal("the apply to kill finished first")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
	p.srv.OnSend(nil)
	start := time.Now()
	st, err := state.Open(context.Background(), state.MustParseLocation(p.stateURL), state.Options{Campaign: p.name, LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("right after the holder was killed: %v", err)
	}
	p.note = fmt.Sprintf("the lock was free after %v", time.Since(start).Round(time.Millisecond))
	st.Close()
	resolveByOutbox(t, p)
	return nil
}

// sendHalf applies the campaign's first half, then restores the list.
func sendHalf(t *testing.T, p *project) {
	t.Helper()
	list := filepath.Join(p.dir, "recipients.txt")
	half := len(p.phones) / 2
	if err := os.WriteFile(list, []byte(strings.Join(p.phones[:half], "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o := p.apply(); o.code != 0 {
		t.Fatalf("first half: exit %d: %s", o.code, o.stderr)
	}
	if err := os.WriteFile(list, []byte(strings.Join(p.phones, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.sentBefore = len(p.srv.Messages())
}

// databaseFull puts the campaign's database in a tablespace on a tmpfs,
// creates smsform's schema there, then shrinks the tmpfs to what it holds
// plus a few pages: the apply under test finds a really full disk.
// Mounting needs root (CAP_SYS_ADMIN); without it the row is skipped.
func databaseFull(t *testing.T, p *project, batches int) []string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 || pg.Available() != nil || !pg.Throwaway() {
		t.Skip("database full: needs root to mount a tmpfs, and a throwaway server")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("database full: cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the server's user must reach it
	}
	if c := pg.Credential(); c != nil {
		if err := os.Chown(dir, int(c.Uid), int(c.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	ts := fmt.Sprintf("full_%d", time.Now().UnixNano())
	admin(t, fmt.Sprintf("CREATE TABLESPACE %s LOCATION '%s'", ts, dir))
	t.Cleanup(func() { admin(t, "DROP TABLESPACE IF EXISTS "+ts) })
	db := pg.Database(t)
	admin(t, "ALTER DATABASE "+dbName(t, db)+" SET TABLESPACE "+ts)
	p.usePostgres(db)
	// The schema and the campaign's record, then the room left shrunk.
	st, err := state.Open(context.Background(), state.MustParseLocation(db), state.Options{Campaign: p.name})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	used := (fs.Blocks - fs.Bfree) * uint64(fs.Bsize)
	if out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%d", used+32<<10), dir).CombinedOutput(); err != nil {
		t.Skipf("database full: cannot shrink the tmpfs: %v %s", err, out)
	}
	p.restore = func() { exec.Command("mount", "-o", "remount,size=64m", dir).Run() }
	return nil
}

func dbName(t *testing.T, dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

func admin(t *testing.T, sql string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pg.Admin(ctx, sql); err != nil {
		t.Errorf("%s: %v", sql, err)
	}
}

// clearMoved lifts state migrate's moved mark from every record of the
// database at url, as if the migration had not happened: for a test that
// tries two of an operator's decisions on one outcome.
func clearMoved(t *testing.T, dbURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE smsform.campaigns SET moved_to = '', moved_at = '', moved_by = '', moved_serial = 0`); err != nil {
		t.Fatal(err)
	}
}
