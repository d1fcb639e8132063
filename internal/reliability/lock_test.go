package reliability

import (
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
)

// TestConcurrentApplies starts two, then five applies of one campaign at
// once: exactly one runs, the others exit 4 naming it, and the outbox has
// each recipient once; with the state in a file and in PostgreSQL.
func TestConcurrentApplies(t *testing.T) {
	for _, b := range backends {
		for _, n := range []int{2, 5} {
			t.Run(fmt.Sprintf("%s/%d applies", b, n), func(t *testing.T) { testConcurrentApplies(t, b, n) })
		}
	}
}

func testConcurrentApplies(t *testing.T, backend string, n int) {
	t.Parallel()
	// Latency keeps the winner running while the others start: about two
	// seconds of sending, longer than the others take to start on a
	// loaded machine (at 50 ms one started after the winner was done, and
	// ran, under make test).
	p := newProjectOn(t, backend, sandbox.Config{Latency: 250 * time.Millisecond}, testharness.Campaign{Recipients: 300, BatchSize: 20, Concurrency: 2})
	outs := make([]outcome, n)
	pids := make([]int, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := p.command("apply", p.campaign, "--auto-approve", "--json")
			<-start
			outs[i] = p.runStarted(cmd, &pids[i])
		})
	}
	close(start)
	wg.Wait()

	holder := regexp.MustCompile(`state is locked by pid (\d+) on host \S+ since \S+`)
	var ran, locked int
	var winner int
	for i, o := range outs {
		switch o.code {
		case 0:
			ran++
			winner = pids[i]
		case 4:
			locked++
		default:
			t.Errorf("apply %d: exit %d: %s", i, o.code, o.stderr)
		}
	}
	// The outbox first: whatever the exits, nobody may get two messages.
	tl := p.tally()
	if tl.Duplicates != 0 || tl.Unaccounted() != 0 || tl.Sent != len(p.phones) || len(p.srv.Messages()) != len(p.phones) {
		t.Errorf("after %d concurrent applies: %+v, %d messages", n, tl, len(p.srv.Messages()))
	}
	if ran != 1 || locked != n-1 {
		t.Fatalf("%d ran and %d were locked out, want 1 and %d", ran, locked, n-1)
	}
	for i, o := range outs {
		if o.code != 4 {
			continue
		}
		m := holder.FindStringSubmatch(o.stderr)
		if m == nil || m[1] != fmt.Sprint(winner) {
			t.Errorf("apply %d: %q does not name the holder, pid %d", i, o.stderr, winner)
		}
	}
	t.Logf("%s: %d applies at once: 1 ran, %d exited 4 naming pid %d; %d messages, %d duplicates", backend, n, locked, winner, len(p.srv.Messages()), tl.Duplicates)
}
