package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// TestLedgerConcurrent applies two campaigns of one project over
// overlapping lists at the same time, from separate processes, with a
// frequency cap of 1 per 24 h, while a third process opts numbers out:
// no number gets two messages (the outbox is the ground truth), and every
// recipient of each campaign is accounted for: sent (by it), held back (sent
// by the other), or opted out (suppressed, or subtracted by its plan). With
// the project's state in a shared file and in PostgreSQL.
func TestLedgerConcurrent(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			testLedgerConcurrent(t, b)
		})
	}
}

// ledgerProject is a project of two campaigns, a and b, whose lists
// overlap by half, with its state in a shared file or in PostgreSQL.
type ledgerProject struct {
	*project
	loc    string
	lists  map[string][]string // by campaign
	optOut []string            // opted out while the applies run
}

func newLedgerProject(t *testing.T, backend string, n int) *ledgerProject {
	t.Helper()
	p := newProject(t, sandbox.Config{Latency: 40 * time.Millisecond}, testharness.Campaign{Name: "a", Body: "from a", Recipients: n, BatchSize: 5, Concurrency: 2})
	lp := &ledgerProject{project: p, loc: filepath.Join(p.dir, "st", "smsform.smsstate"), lists: map[string][]string{}}
	stateLine := "st/"
	if backend == "postgres" {
		lp.loc = pg.Database(t)
		stateLine = lp.loc
		p.usePostgres(lp.loc)
	} else if err := os.Mkdir(filepath.Join(p.dir, "st"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(p.dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("smsform.yaml", fmt.Sprintf("version: 1\nstate: %s\nfrequency_cap: {max: 1, per: 24h}\n", stateLine))
	all := testharness.Phones(n + n/2)
	lp.lists["a"], lp.lists["b"] = all[:n], all[n/2:]
	write("b.txt", strings.Join(lp.lists["b"], "\n")+"\n")
	write("b.yaml", "version: 1\nname: b\nsender: ACME\nrecipients:\n  - file: b.txt\nbody: \"from b\"\nbatch_size: 5\nconcurrency: 2\n")
	// Every tenth number of both lists opts out while they run: some
	// before a plan, some between it and their batch, some after.
	for i := 0; i < len(all); i += 10 {
		lp.optOut = append(lp.optOut, all[i])
	}
	return lp
}

func testLedgerConcurrent(t *testing.T, backend string) {
	lp := newLedgerProject(t, backend, size(0, 200, 1000))
	campaigns := map[string]string{"a": lp.campaign, "b": filepath.Join(lp.dir, "b.yaml")}
	outs := map[string]outcome{}
	var mu sync.Mutex
	start := make(chan struct{})
	var wg sync.WaitGroup
	for name, path := range campaigns {
		wg.Go(func() {
			cmd := lp.command("apply", path, "--auto-approve", "--json")
			<-start
			o := lp.run(cmd)
			mu.Lock()
			outs[name] = o
			mu.Unlock()
		})
	}
	// The opt-outs come in groups once the first message went.
	sent := make(chan struct{})
	var once sync.Once
	lp.srv.OnSend(func(int) { once.Do(func() { close(sent) }) })
	wg.Go(func() {
		<-sent
		for group := range slices.Chunk(lp.optOut, 5) {
			lp.smsform(append([]string{"optout", "add", "--reason", "STOP"}, group...)...)
			time.Sleep(100 * time.Millisecond)
		}
	})
	close(start)
	wg.Wait()

	for name, o := range outs {
		if o.code != 0 && o.code != 5 {
			t.Fatalf("apply %s: exit %d: %s", name, o.code, o.stderr)
		}
	}
	tl := lp.account(t)
	t.Logf("%s: a exit %d (%+v), b exit %d (%+v); %s", backend, outs["a"].code, outs["a"].summary, outs["b"].code, outs["b"].summary, tl)
	if tl.held == 0 {
		t.Errorf("the cap held nobody back: the test proves nothing (%s)", tl)
	}
}

// ledgerTally is how a project's recipients ended.
type ledgerTally struct {
	sent, held, suppressed, subtracted int
}

func (l ledgerTally) String() string {
	return fmt.Sprintf("%d sent, %d held back (sent by the other campaign), %d suppressed, %d opted out before their plan", l.sent, l.held, l.suppressed, l.subtracted)
}

// account holds each campaign's record against the outbox and the
// opt-outs, failing the test for any recipient messaged twice or not
// accounted for.
func (lp *ledgerProject) account(t *testing.T) ledgerTally {
	t.Helper()
	return lp.accountBodies(t, func(name string) string { return "from " + name })
}

// accountBodies is account for campaigns whose body is bodyOf(name).
func (lp *ledgerProject) accountBodies(t *testing.T, bodyOf func(string) string) ledgerTally {
	t.Helper()
	ctx := context.Background()
	byTo := map[string][]string{} // the bodies each number got
	for _, m := range lp.srv.Messages() {
		byTo[m.To] = append(byTo[m.To], m.Body)
	}
	for to, bodies := range byTo {
		if len(bodies) > 1 {
			t.Errorf("%s got %d messages under a cap of 1: %v", to, len(bodies), bodies)
		}
	}
	opted := map[string]bool{}
	if _, err := ledger.OptOuts(ctx, state.MustParseLocation(lp.loc), func(o ledger.OptOut) error { opted[o.Phone] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	var tl ledgerTally
	for name, phones := range lp.lists {
		rec := map[string]state.Status{}
		st, err := state.OpenSharedReadOnly(ctx, state.MustParseLocation(lp.loc), name)
		if err != nil {
			t.Fatal(err)
		}
		err = st.Recipients(ctx, func(r state.Recipient) error { rec[r.Phone] = r.Status; return nil })
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		body := bodyOf(name)
		for _, p := range phones {
			got := byTo[p]
			mine := len(got) == 1 && got[0] == body
			switch s := rec[p]; {
			case s == state.Sent && mine:
				tl.sent++
			case s == state.Suppressed && opted[p] && !mine:
				tl.suppressed++
			case s == state.Unsent && !mine && len(got) == 1:
				tl.held++
			case s == state.Unsent && len(got) == 0 && opted[p]:
				tl.subtracted++
			default:
				t.Errorf("campaign %s: %s is %s, opted out %v, outbox %v: not accounted for", name, p, s, opted[p], got)
			}
		}
	}
	return tl
}

// withOptOuts is TestKill's run whose campaign is a project's, its state
// the project's file, while another process opts its numbers out.
const withOptOuts = "file-opt-outs"

// optOutWhileKilled, for the withOptOuts run, makes p a project's campaign
// and opts one number in twenty out, five at a time, while the kill test
// runs; the function it returns stops that and waits for it.
func optOutWhileKilled(t *testing.T, p *project, backend string) (stop func()) {
	t.Helper()
	if backend != withOptOuts {
		return func() {}
	}
	if err := os.Mkdir(filepath.Join(p.dir, "st"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "smsform.yaml"), []byte("version: 1\nstate: st/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.shared = true
	// The last batches' numbers first, the first at once: on a quick
	// machine the whole campaign is sent in well under a second, and the
	// opt-outs must land while it runs, not after.
	var numbers []string
	for i := len(p.phones) - 3; i >= 0; i -= 20 {
		numbers = append(numbers, p.phones[i])
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for group := range slices.Chunk(numbers, 5) {
			p.smsform(append([]string{"optout", "add", "--reason", "STOP"}, group...)...)
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	return sync.OnceFunc(func() {
		close(done)
		wg.Wait()
	})
}

// checkKillOptOuts is the kill test's verdict when numbers opted out while
// it ran: nobody messaged twice, and every recipient sent or opted out
// (suppressed, or subtracted by a later run's plan), never both. It returns
// how many were sent and how many opted out.
func checkKillOptOuts(t *testing.T, p *project, before, after testharness.Tally, inDoubtBatches, limit int) (sent, optedOut int) {
	t.Helper()
	c, err := campaign.Load(p.campaign)
	if err != nil {
		t.Fatal(err)
	}
	lp := &ledgerProject{project: p, loc: p.statePath(), lists: map[string][]string{p.name: p.phones}}
	tl := lp.accountBodies(t, func(string) string { return c.Body })
	t.Logf("with opt-outs: %s", tl)
	if before.Duplicates != 0 || before.Lost != 0 || after.Duplicates != 0 || after.Lost != 0 {
		t.Errorf("%d messaged twice, %d records contradict the outbox: %v", after.Duplicates, after.Lost, after.Problems)
	}
	if tl.sent+tl.suppressed+tl.subtracted != len(p.phones) || tl.held != 0 {
		t.Errorf("%s: not %d recipients", tl, len(p.phones))
	}
	if tl.suppressed+tl.subtracted == 0 {
		t.Errorf("nobody opted out while the kill test ran: it proves nothing (%s)", tl)
	}
	if inDoubtBatches > limit {
		t.Errorf("%d in-doubt batches, limit %d", inDoubtBatches, limit)
	}
	return tl.sent, tl.suppressed + tl.subtracted
}
