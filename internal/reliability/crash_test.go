package reliability

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// TestKill is the kill test of the apply issue: smsform apply as a
// subprocess, SIGKILLed at seeded random moments (mostly while requests are
// in flight or their outcomes are being written) and rerun with the same
// command each time until it finishes. Then every in-doubt batch is
// resolved against the outbox, the rest is sent, and the figures must hold:
// nobody messaged twice, everybody accounted for, at most one in-doubt
// batch per kill and request in flight. It runs with the state in a file
// and in PostgreSQL, and with the file reached through two spellings of
// its path (a link to its folder, and the real path), alternating from one
// restart to the next: one state, one lock, whatever the spelling. Every
// few runs of that one a hard link is made to the killed state, and an
// apply through either name must be refused before the link goes again;
// the file left at the end passes SQLite's integrity check.
func TestKill(t *testing.T) {
	for _, b := range append(backends, twoSpellings, withOptOuts) {
		t.Run(b, func(t *testing.T) { testKill(t, b) })
	}
}

// twoSpellings is TestKill's file state reached by two paths in turn.
const twoSpellings = "file-two-spellings"

// spellings are the --state arguments a run of the kill test takes in
// turn: none (the state next to the campaign), or the two spellings.
func spellings(t *testing.T, p *project, backend string) [][]string {
	if backend != twoSpellings {
		return [][]string{nil}
	}
	alias := filepath.Join(p.dir, "alias")
	if err := os.Symlink(p.dir, alias); err != nil {
		t.Fatal(err)
	}
	real := p.statePath()
	return [][]string{{"--state", real}, {"--state", filepath.Join("alias", filepath.Base(real))}}
}

func testKill(t *testing.T, backend string) {
	kills := size(*crashKills, 5, 20)
	recipients := size(*crashRecipients, 500, 2000)
	conc := *crashConcurrency
	const batch = 20
	batches := (recipients + batch - 1) / batch
	// Sends per run before a kill. Each kill also leaves up to conc batches
	// in doubt, which later runs skip; on average a run should use less
	// than its share of the batches, so that every kill lands.
	budget := float64(batches) / (float64(kills) * 1.3)
	maxSends := max(1, int(2*(budget-float64(conc))-1))
	const latency = 30 * time.Millisecond

	p := newProjectOn(t, backend, sandbox.Config{Latency: latency}, testharness.Campaign{Recipients: recipients, BatchSize: batch, Concurrency: conc})
	spelling := spellings(t, p, backend)
	stopOptOuts := optOutWhileKilled(t, p, backend)
	sends := make(chan struct{}, 1024)
	p.srv.OnSend(func(int) {
		select {
		case sends <- struct{}{}:
		default:
		}
	})
	rng := rand.New(rand.NewPCG(uint64(*crashSeed), 0x5eed))
	start := time.Now()
	landed, runs := 0, 0
	var final outcome
	for {
		runs++
		if backend == twoSpellings && runs%3 == 0 {
			checkHardLinkRefused(t, p)
		}
		cmd := p.command(append([]string{"apply", p.campaign, "--auto-approve", "--json"}, spelling[runs%len(spelling)]...)...)
		if landed >= kills {
			final = p.run(cmd)
			break
		}
		drain(sends)
		done, o := startAsync(t, cmd)
		// Mostly after the k-th send arrives plus up to two latencies (in
		// flight, or between the answer and its outcome), sometimes at any
		// moment of start-up (planning, opening the state, getting a token).
		var at <-chan time.Time
		if rng.IntN(5) == 0 {
			at = time.After(time.Duration(rng.Int64N(int64(60 * time.Millisecond))))
		} else {
			k := 1 + rng.IntN(maxSends)
			at = afterSends(sends, k, time.Duration(rng.Int64N(int64(2*latency))))
		}
		select {
		case <-at:
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			if o.code == -1 {
				landed++
				continue
			}
		case <-done:
		}
		// It finished before the kill.
		final = *o
		break
	}
	stopOptOuts()
	if final.code != 0 && final.code != 3 {
		t.Fatalf("last apply: exit %d: %s", final.code, final.stderr)
	}
	if landed < kills {
		t.Errorf("the campaign finished after %d kills, wanted %d", landed, kills)
	}

	before := p.tally()
	inDoubtBatches := before.InDoubtBatches
	// The operator's decision, with the outbox as ground truth: an in-doubt
	// batch in the outbox was killed between send and outcome.
	resolved := resolveByOutbox(t, p)
	if resolved > 0 {
		if o := p.apply(); o.code != 0 {
			t.Fatalf("apply after resolving: exit %d: %s", o.code, o.stderr)
		}
	}
	after := p.tally()
	wall := time.Since(start)

	// With opt-outs, a recipient who opted out is accounted for as
	// suppressed (or subtracted by a plan), not as sent.
	unaccounted, optedOut := after.Unaccounted(), ""
	if backend == withOptOuts {
		sent, n := checkKillOptOuts(t, p, before, after, inDoubtBatches, landed*conc)
		unaccounted, optedOut = len(p.phones)-sent-n, fmt.Sprintf(" opted_out=%d", n)
	}
	t.Logf("%s: kills=%d runs=%d recipients=%d duplicates=%d unaccounted=%d%s in_doubt_batches=%d (limit %d) resolved_unsent=%d wall=%v",
		backend, landed, runs, recipients, after.Duplicates, unaccounted, optedOut, inDoubtBatches, landed*conc, resolved, wall.Round(time.Millisecond))
	fmt.Printf("crashtest: state=%s kills=%d recipients=%d duplicates=%d unaccounted=%d%s in_doubt_batches=%d wall=%v\n",
		backend, landed, recipients, after.Duplicates, unaccounted, optedOut, inDoubtBatches, wall.Round(time.Millisecond))
	if backend == withOptOuts {
		return
	}
	if backend == twoSpellings {
		checkIntegrity(t, p.abs(p.statePath()))
	}
	if before.Duplicates != 0 || before.Lost != 0 {
		t.Errorf("before resolving: %d messaged twice, %d records contradict the outbox: %v", before.Duplicates, before.Lost, before.Problems)
	}
	if before.Unrecorded != 0 {
		t.Errorf("%d recipients neither sent, failed nor in doubt after the last apply", before.Unrecorded)
	}
	if after.Duplicates != 0 || after.Unaccounted() != 0 || after.Sent != recipients {
		t.Errorf("after resolving: %d messaged twice, %d unaccounted, %d of %d sent: %v",
			after.Duplicates, after.Unaccounted(), after.Sent, recipients, after.Problems)
	}
	if inDoubtBatches > landed*conc {
		t.Errorf("%d in-doubt batches after %d kills with %d requests in flight", inDoubtBatches, landed, conc)
	}
}

// checkHardLinkRefused gives the state file a second name and checks that
// an apply through either name is refused without sending, then removes it.
func checkHardLinkRefused(t *testing.T, p *project) {
	t.Helper()
	real := p.abs(p.statePath())
	hard := filepath.Join(p.dir, "hard.smsstate")
	if err := os.Link(real, hard); err != nil {
		if os.IsNotExist(err) {
			return // no state yet: killed before its first record
		}
		t.Fatal(err)
	}
	defer os.Remove(hard)
	sent := len(p.srv.Messages())
	for _, name := range []string{hard, real} {
		o := p.apply("--state", name)
		if o.code != 1 || !strings.Contains(o.stderr, "hard links") {
			t.Errorf("apply --state %s with a second name: exit %d, want 1 naming the hard links: %s", name, o.code, o.stderr)
		}
	}
	if n := len(p.srv.Messages()); n != sent {
		t.Errorf("%d messages sent through a state with two names", n-sent)
	}
}

// checkIntegrity runs SQLite's integrity check over the state file at path.
func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check of %s: %q %v", path, check, err)
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// afterSends fires d after the k-th send request from now arrives.
func afterSends(sends chan struct{}, k int, d time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	go func() {
		for range k {
			select {
			case <-sends:
			case <-time.After(10 * time.Second):
				c <- time.Now()
				return
			}
		}
		time.Sleep(d)
		c <- time.Now()
	}()
	return c
}

// startAsync starts cmd; done closes once it ended and *o is filled in.
func startAsync(t *testing.T, cmd *exec.Cmd) (<-chan struct{}, *outcome) {
	t.Helper()
	o := &outcome{}
	done := make(chan struct{})
	var stderr, stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		cmd.Wait()
		o.code = cmd.ProcessState.ExitCode()
		o.stdout, o.stderr = stdout.String(), stderr.String()
		o.summary = summaryOf(o.stdout)
	}()
	return done, o
}

// resolveByOutbox resolves each in-doubt batch as sent when the outbox has
// its recipients and as unsent otherwise; it returns how many recipients
// were resolved unsent.
func resolveByOutbox(t *testing.T, p *project) int {
	t.Helper()
	ctx := context.Background()
	delivered := map[string]bool{}
	for _, m := range p.srv.Messages() {
		delivered[m.To] = true
	}
	st, err := state.Open(ctx, state.MustParseLocation(p.statePath()), state.Options{Campaign: p.name, LockTimeout: 10 * time.Second, Shared: p.shared})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	type verdict struct{ in, out int }
	byBatch := map[string]*verdict{}
	err = st.Recipients(ctx, func(r state.Recipient) error {
		if r.Status != state.InDoubt {
			return nil
		}
		v := byBatch[r.BatchID]
		if v == nil {
			v = &verdict{}
			byBatch[r.BatchID] = v
		}
		if delivered[r.Phone] {
			v.in++
		} else {
			v.out++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	unsent := 0
	for id, v := range byBatch {
		if v.in > 0 && v.out > 0 {
			t.Errorf("batch %s: %d recipients delivered, %d not: a batch is one request", id, v.in, v.out)
		}
		n, err := st.Resolve(ctx, id, v.in > 0)
		if err != nil {
			t.Fatal(err)
		}
		if v.in == 0 {
			unsent += n.Moved
		}
	}
	return unsent
}
