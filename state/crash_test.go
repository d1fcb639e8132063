package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests re-execute their own binary as a child that holds the state:
// helperEnv names what the child does, and STATE_TEST_PATH its state.
const helperEnv = "STATE_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(pg.Run(m))
	case "lock":
		helperLock(os.Getenv("STATE_TEST_PATH"))
	case "record":
		helperRecord(os.Getenv("STATE_TEST_PATH"), os.Getenv("STATE_TEST_RUN"))
	}
	os.Exit(2)
}

// helperLock takes the lock, says so, and waits to be killed.
func helperLock(path string) {
	s, err := Open(context.Background(), MustParseLocation(path), Options{Campaign: "spring"})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	time.Sleep(time.Hour)
	s.Close()
}

// helperRecord records batches from four workers (so commits are grouped)
// until killed, printing "committed intent|outcome BATCH" after each change
// returns: from then on it must survive any kill.
func helperRecord(path, run string) {
	ctx := context.Background()
	s, err := Open(ctx, MustParseLocation(path), Options{Campaign: "spring", LockTimeout: 10 * time.Second})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		// One write per line, unbuffered: what is printed was committed.
		os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for j := 0; ; j++ {
				batch := fmt.Sprintf("r%s-w%d-%d", run, w, j)
				ps := make([]string, 20)
				for i := range ps {
					ps[i] = fmt.Sprintf("+1%s%d%05d%02d", run, w, j, i)
				}
				var err error
				if j%2 == 0 {
					err = s.RecordIntent(ctx, intent(batch, ps...))
				} else {
					// Every other batch: the previous one's outcome and
					// this one's intent in one change.
					prev := fmt.Sprintf("r%s-w%d-%d", run, w, j-1)
					if err = s.RecordOutcomeAndIntent(ctx, prev, Outcome{Status: Sent, HTTPStatus: 200}, intent(batch, ps...)); err == nil {
						say("committed outcome %s", prev)
					}
				}
				if err != nil {
					say("error: %v", err)
					os.Exit(1)
				}
				say("committed intent %s", batch)
				if j%2 == 1 {
					if err := s.RecordOutcome(ctx, batch, Outcome{Status: Sent, HTTPStatus: 200}); err != nil {
						say("error: %v", err)
						os.Exit(1)
					}
					say("committed outcome %s", batch)
				}
			}
		})
	}
	wg.Wait()
}

func startHelper(t *testing.T, kind, path string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + kind, "STATE_TEST_PATH=" + path}, env...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(stdout)
}

func TestLockOfKilledProcessIsFree(t *testing.T) { eachBackend(t, testLockOfKilledProcessIsFree) }

func testLockOfKilledProcessIsFree(t *testing.T, b backend) {
	ctx := context.Background()
	path := b.loc(t)
	cmd, out := startHelper(t, "lock", path)
	if !out.Scan() || out.Text() != "locked" {
		t.Fatalf("child: %q %v", out.Text(), out.Err())
	}
	_, err := Open(ctx, MustParseLocation(path), Options{Campaign: "spring"})
	var le *LockedError
	if !errors.As(err, &le) || le.PID != cmd.Process.Pid {
		t.Fatalf("while the child holds it: %v (child pid %d)", err, cmd.Process.Pid)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	// The kernel released the lock with the process (closing its
	// connection, which ends its PostgreSQL session): no timeout needed
	// beyond the moment the server takes to see the socket closed.
	s, err := Open(ctx, MustParseLocation(path), Options{Campaign: "spring", LockTimeout: 2 * time.Second})
	must(t, err)
	must(t, s.Close())
}

// TestCrashSafety kills a recording child at random moments and checks,
// after each kill, that the state is intact and holds every change the
// child reported as committed.
func TestCrashSafety(t *testing.T) {
	kills := 10
	if n, err := strconv.Atoi(os.Getenv("STATE_CRASH_KILLS")); err == nil {
		kills = n
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "spring.smsstate")
	rng := rand.New(rand.NewPCG(1, 2))
	reported := map[string]bool{} // "intent b", "outcome b"
	for run := range kills {
		cmd, out := startHelper(t, "record", path, fmt.Sprintf("STATE_TEST_RUN=%d", run))
		lines := make(chan string)
		go func() {
			defer close(lines)
			for out.Scan() {
				lines <- out.Text()
			}
		}()
		// Wait for the first commit, then kill at a random moment.
		var deadline <-chan time.Time
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break read
				}
				if strings.HasPrefix(l, "error") {
					t.Fatalf("run %d: child: %s", run, l)
				}
				reported[strings.TrimPrefix(l, "committed ")] = true
				if deadline == nil {
					deadline = time.After(time.Duration(rng.IntN(300)) * time.Millisecond)
				}
			case <-deadline:
				break read
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines { // lines written before the kill
			reported[strings.TrimPrefix(l, "committed ")] = true
		}
		cmd.Wait()

		// What plan sees, before any writer has recovered the WAL ...
		r, err := OpenReadOnly(context.Background(), MustParseLocation(path), "")
		must(t, err)
		checkReported(t, r, run, reported)
		must(t, r.Close())
		// ... and what the next apply sees.
		s, err := Open(ctx, MustParseLocation(path), Options{Campaign: "spring"})
		must(t, err)
		checkReported(t, s, run, reported)
		must(t, s.Close())
	}
	t.Logf("%d kills, %d reported changes, all present", kills, len(reported))
}

// checkReported checks that s is intact and holds every reported change.
func checkReported(t *testing.T, s *State, run int, reported map[string]bool) {
	t.Helper()
	ctx := context.Background()
	var check string
	must(t, s.db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check))
	if check != "ok" {
		t.Fatalf("run %d: integrity_check: %s", run, check)
	}
	got := map[string]Status{} // by batch: the status of all its recipients
	must(t, s.Recipients(ctx, func(r Recipient) error {
		if st, ok := got[r.BatchID]; ok && st != r.Status {
			t.Errorf("run %d: batch %s is partly %s, partly %s", run, r.BatchID, st, r.Status)
		}
		got[r.BatchID] = r.Status
		return nil
	}))
	for k := range reported {
		kind, batch, _ := strings.Cut(k, " ")
		switch st, ok := got[batch]; {
		case !ok:
			t.Errorf("run %d: reported %s is missing", run, k)
		case kind == "outcome" && st != Sent:
			t.Errorf("run %d: reported outcome of %s, but it is %s", run, batch, st)
		}
	}
}
