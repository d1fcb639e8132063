// Package bench holds the `make bench` harness (tests only): it measures the
// built binary against the obvious alternatives in the same run, on campaigns
// written by internal/testharness's [testharness.Generate].
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nyaruka/phonenumbers"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/pgtest"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

var (
	full = flag.Bool("bench.full", false, "run the full benchmark (1,000,000 recipients planned, 100,000 applied) and judge the targets")
	bin  = flag.String("bench.bin", "", "smsform binary to measure (default: build one)")
	runs = flag.Int("bench.runs", 3, "runs of each plan measurement; the median is reported")
)

// pg serves the PostgreSQL rows, with fsync on: a commit costs what it
// costs in production.
var pg = pgtest.New(pgtest.Options{Fsync: true})

func TestMain(m *testing.M) {
	flag.Parse()
	code := pg.Run(m)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binDir    string
	built     string
	buildErr  error
)

// binary is the smsform to measure: -bench.bin, or one built for this test
// binary's tests to share (race-built under make test, like this binary:
// see BuildSmsform; plain for the full runs).
func binary(t *testing.T) string {
	t.Helper()
	if *bin != "" {
		return *bin
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "smsform-bench-"); buildErr == nil {
			built, buildErr = testharness.BuildSmsform(binDir, !*full && !*scaleFull && testharness.RaceBuild)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// sizes of one harness run.
type sizes struct {
	plan, apply int
	concurrency int
	// reports smsform receive takes, from posters clients at once
	reports, posters int
}

// fullSizes are make bench's: the issues' figures.
var fullSizes = sizes{plan: 1_000_000, apply: 100_000, concurrency: 4, reports: 40_000, posters: 64}

// TestBench is `make bench`: it measures the smsform binary against the
// obvious alternative of each figure in the same run, and prints a table.
// Without -bench.full it runs a tiny version (no targets judged), so that
// `make test` proves the harness works.
func TestBench(t *testing.T) {
	sz := sizes{plan: 3_000, apply: 1_000, concurrency: 4, reports: 1_000, posters: 8}
	if *full {
		sz = fullSizes
	}
	n := *runs
	if !*full {
		n = 1
	}
	ctx := context.Background()
	dir := t.TempDir()
	smsform := binary(t)
	var tab table

	// Plan, fresh: a body per recipient, the headline figure.
	t.Logf("generating %d recipients", sz.plan)
	pers, err := testharness.Generate(dir, testharness.Spec{Name: "personal", Recipients: sz.plan, Personalised: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	fresh := medianRun(t, n, smsform, nil, "plan", pers.Campaign)
	t.Logf("naive loop over %d numbers", len(pers.Numbers))
	naive := naiveLoop(pers.Numbers, pers.Region)
	tab.add(row{figure: fmt.Sprintf("plan %s recipients, a body each: wall", count(sz.plan)), smsform: secs(fresh.wall), rss: fresh.rss,
		comparison: "5.00 s target", ratio: fresh.wall.Seconds() / 5, target: "≤ 1", pass: fresh.wall <= 5*time.Second})
	tab.add(row{figure: "  vs naive phonenumbers loop (1 core, validation only)", smsform: secs(fresh.wall), rss: fresh.rss,
		comparison: secs(naive), ratio: fresh.wall.Seconds() / naive.Seconds(), target: "< 1", pass: fresh.wall < naive})
	tab.add(row{figure: "  peak RSS", smsform: mb(fresh.rss), rss: fresh.rss,
		comparison: "300 MB target", ratio: float64(fresh.rss) / (300 << 20), target: "≤ 1", pass: fresh.rss <= 300<<20})

	tab.rows = append(tab.rows, ledgerPlanRows(t, ctx, smsform, dir, pers, n)...)

	// The same campaign saved and applied from its file: apply derives
	// the batches again and compares them with the file's before its first
	// send.
	first, planned := medianFirstSend(t, judgedRounds(n), smsform, dir, pers.Campaign)
	tab.add(row{figure: fmt.Sprintf("apply PLANFILE %s recipients, a body each: to its first send, vs plan in the same rounds", count(sz.plan)), smsform: secs(first.wall), rss: first.rss,
		comparison: secs(planned.wall) + " plan", ratio: first.wall.Seconds() / planned.wall.Seconds(), target: "≤ 1.5",
		pass: first.wall.Seconds() <= 1.5*planned.wall.Seconds()})

	// Plan, fresh and resumed: one body for all, batches of 1,000.
	shared, err := testharness.Generate(dir, testharness.Spec{Name: "shared", Recipients: sz.plan, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sharedFresh := medianRun(t, n, smsform, nil, "plan", shared.Campaign)
	tab.add(row{figure: fmt.Sprintf("plan %s recipients, one body: wall", count(sz.plan)), smsform: secs(sharedFresh.wall), rss: sharedFresh.rss,
		comparison: "5.00 s target", ratio: sharedFresh.wall.Seconds() / 5, target: "≤ 1", pass: sharedFresh.wall <= 5*time.Second})
	t.Logf("recording %d recipients as sent", sz.plan)
	start := time.Now()
	if err := recordAllSent(ctx, shared.Campaign, strings.TrimSuffix(shared.Campaign, ".yaml")+".smsstate"); err != nil {
		t.Fatal(err)
	}
	t.Logf("state recorded in %s", time.Since(start).Round(time.Second))
	resumed := medianRun(t, n, smsform, nil, "plan", shared.Campaign)
	if !strings.Contains(resumed.stdout, "Plan: 0 messages") {
		t.Fatalf("resumed plan still sends:\n%s", firstLines(resumed.stdout, 3))
	}
	tab.add(row{figure: "  resumed (everything sent) vs fresh", smsform: secs(resumed.wall), rss: resumed.rss,
		comparison: secs(sharedFresh.wall), ratio: resumed.wall.Seconds() / sharedFresh.wall.Seconds(), target: "≤ 1.5",
		pass: resumed.wall.Seconds() <= 1.5*sharedFresh.wall.Seconds()})

	// The same, the state in PostgreSQL.
	db := pg.Database(t)
	start = time.Now()
	if err := recordAllSent(ctx, shared.Campaign, db); err != nil {
		t.Fatal(err)
	}
	t.Logf("state recorded in PostgreSQL in %s", time.Since(start).Round(time.Second))
	resumedPG := medianRun(t, n, smsform, nil, "plan", shared.Campaign, "--state", db)
	if !strings.Contains(resumedPG.stdout, "Plan: 0 messages") {
		t.Fatalf("plan resumed from PostgreSQL still sends:\n%s", firstLines(resumedPG.stdout, 3))
	}
	tab.add(row{figure: "  resumed from PostgreSQL (everything sent) vs fresh", smsform: secs(resumedPG.wall), rss: resumedPG.rss,
		comparison: secs(sharedFresh.wall), ratio: resumedPG.wall.Seconds() / sharedFresh.wall.Seconds(), target: "≤ 1.5",
		pass: resumedPG.wall.Seconds() <= 1.5*sharedFresh.wall.Seconds()})

	// The us rule set's hours, caps and body rules on a plan of as many
	// US recipients.
	tab.add(complianceRow(t, smsform, dir, sz.plan, n))

	// After the send: an export of a report per recipient imported, vs
	// plan of as many (issue 37).
	tab.rows = append(tab.rows, importRows(t, ctx, smsform, dir, shared, sharedFresh)...)

	tab.rows = append(tab.rows, applyRows(t, ctx, smsform, dir, sz, n)...)
	tab.rows = append(tab.rows, capRows(t, ctx, smsform, dir, sz, n)...)
	tab.rows = append(tab.rows, receiveRows(t, ctx, smsform, dir, sz.reports, sz.posters)...)
	tab.add(startupRow(t))

	// How well the sending time is foretold: plan's estimate, apply's time left.
	for _, r := range estimateRows(t, smsform, dir) {
		tab.add(r)
	}

	tab.print(os.Stdout, "bench", *full)
}

// measured is one run of the binary.
type measured struct {
	wall   time.Duration
	rss    int64 // peak resident set, bytes
	stdout string
}

// judgedRounds is how many rounds a comparison of apply runs whose ratio
// is judged against a target: at least 5 in a full run, since one round of
// a few seconds moves by 5% or more on a shared machine and the median of
// 3 still crossed a target either way from run to run.
func judgedRounds(n int) int {
	if *full {
		return max(n, 5)
	}
	return n
}

// run runs the binary and measures its wall time and peak RSS.
func run(t *testing.T, smsform string, env []string, args ...string) measured {
	t.Helper()
	cmd := exec.Command(smsform, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchRSS(cmd.Process.Pid)
	err := cmd.Wait()
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("smsform %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return measured{wall: wall, rss: peak(), stdout: stdout.String()}
}

// watchRSS follows the peak resident set of process pid (VmHWM in
// /proc/PID/status) every 10 ms until it exits; the function it returns
// gives the last value read. The kernel's ru_maxrss of a child would be
// simpler, but a child of a process as large as this test gets (it plans
// ten million recipients itself to record a state) starts with its
// parent's peak, and reports it.
func watchRSS(pid int) func() int64 {
	var (
		mu   sync.Mutex
		peak int64
	)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		path := fmt.Sprintf("/proc/%d/status", pid)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile(path); err == nil {
				for line := range strings.Lines(string(b)) {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						var kb int64
						fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
						mu.Lock()
						peak = max(peak, kb*1024)
						mu.Unlock()
					}
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// medianRun runs the binary n times and returns the run of median wall time
// (with the highest peak RSS of all runs).
func medianRun(t *testing.T, n int, smsform string, env []string, args ...string) measured {
	t.Helper()
	var ms []measured
	for range n {
		ms = append(ms, run(t, smsform, env, args...))
	}
	return medianMeasured(ms)
}

// medianPair runs two commands in turn, n times each, and returns the
// median of each: alternating, a machine that drifts during the runs
// weighs on both alike.
func medianPair(t *testing.T, n int, smsform string, a, b []string) (measured, measured) {
	t.Helper()
	var as, bs []measured
	for range n {
		as = append(as, run(t, smsform, nil, a...))
		bs = append(bs, run(t, smsform, nil, b...))
	}
	return medianMeasured(as), medianMeasured(bs)
}

// medianMeasured is the run of median wall time, with the highest peak RSS
// of all.
func medianMeasured(ms []measured) measured {
	var rss int64
	for _, m := range ms {
		rss = max(rss, m.rss)
	}
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(x, y measured) int { return int(x.wall - y.wall) })
	m := ms[len(ms)/2]
	m.rss = rss
	return m
}

// medianFirstSend saves rounds plans of the campaign, each against a state
// of its own, and applies each from its file against a sandbox until its
// first batch is sent (firstSend); each round also plans the campaign
// without saving it, between the two, so that apply is compared with plan
// on the machine as it is then (a machine's pace drifts over a run of
// make bench). It returns the medians of apply and of plan.
func medianFirstSend(t *testing.T, rounds int, smsform, dir, campaignPath string) (apply, plan measured) {
	t.Helper()
	const id, secret = "first", "first-secret"
	url, stop := startSandbox(t, smsform, id, secret, "--latency", "0s", "--forget")
	defer stop()
	env := []string{"SMSFORM_CLIENT_ID=" + id, "SMSFORM_CLIENT_SECRET=" + secret, "SMSFORM_BASE_URL=" + url,
		"SMSFORM_TOKEN_DIR=" + filepath.Join(dir, "first-tokens"), "CI=true"}
	stem := strings.TrimSuffix(campaignPath, ".yaml")
	var applies, plans []measured
	for r := range rounds {
		planFile, statePath := fmt.Sprintf("%s-first%d.plan", stem, r+1), fmt.Sprintf("%s-first%d.smsstate", stem, r+1)
		run(t, smsform, env, "plan", "--state", statePath, "--out", planFile, campaignPath)
		plans = append(plans, run(t, smsform, env, "plan", "--state", statePath, campaignPath))
		// --new-state: an earlier round's state records the campaign,
		// which apply rightly takes as a sign; here it is the point.
		m := firstSend(t, smsform, env, "apply", "--json", "--state", statePath, "--new-state", planFile)
		t.Logf("apply PLANFILE round %d: first send after %s, plan %s", r+1, secs(m.wall), secs(plans[r].wall))
		applies = append(applies, m)
	}
	return medianMeasured(applies), medianMeasured(plans)
}

// firstSend runs smsform apply --json ARGS until its first batch_sent
// event, then interrupts it (what was in flight is recorded; the rest is not
// sent): its wall time is to that event, its peak RSS up to then.
func firstSend(t *testing.T, smsform string, env []string, args ...string) measured {
	t.Helper()
	cmd := exec.Command(smsform, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchRSS(cmd.Process.Pid)
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	var wall time.Duration
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"type":"batch_sent"`) {
			wall = time.Since(start)
			break
		}
	}
	rss := peak()
	cmd.Process.Signal(os.Interrupt)
	go io.Copy(io.Discard, out)
	cmd.Wait()
	if wall == 0 {
		t.Fatalf("smsform %s sent nothing:\n%s", strings.Join(args, " "), stderr.String())
	}
	return measured{wall: wall, rss: rss}
}

// naiveLoop is the obvious alternative to plan's number handling: one core,
// plain phonenumbers Parse, IsValidNumber and Format(E164) for each number.
func naiveLoop(numbers []string, region string) time.Duration {
	start := time.Now()
	valid := 0
	for _, raw := range numbers {
		num, err := phonenumbers.Parse(raw, region)
		if err != nil || !phonenumbers.IsValidNumber(num) {
			continue
		}
		if phonenumbers.Format(num, phonenumbers.E164) != "" {
			valid++
		}
	}
	return time.Since(start)
}

// planAndState plans a campaign as if nothing were sent, and opens the
// state at statePath to record it in; with newState, even where other
// states of the campaign lie in the folder (which the state rightly takes
// as signs of an earlier one).
func planAndState(ctx context.Context, campaignPath, statePath string, newState bool) (*plan.Plan, *state.State, error) {
	c, err := campaign.Load(campaignPath)
	if err != nil {
		return nil, nil, err
	}
	p, err := plan.Compute(ctx, c, nil)
	if err != nil {
		return nil, nil, err
	}
	st, err := state.Open(ctx, state.MustParseLocation(statePath), state.Options{Campaign: c.Name, NewState: newState})
	return p, st, err
}

// recordAllSent records every batch of the campaign's plan as sent, through
// the state's own API, as an apply would have.
func recordAllSent(ctx context.Context, campaignPath, statePath string) error {
	p, st, err := planAndState(ctx, campaignPath, statePath, false)
	if err != nil {
		return err
	}
	// Several at once, as a concurrent apply does: the state commits them
	// together.
	work := make(chan plan.Batch)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for b := range work {
				err := st.RecordIntent(ctx, state.Intent{BatchID: b.ID, Phones: b.Recipients, BodyHash: state.BodyHash(b.Body)})
				if err == nil {
					err = st.RecordOutcome(ctx, b.ID, state.Outcome{Status: state.Sent, HTTPStatus: 200, RequestID: "bench-" + b.ID})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var sendErr error
send:
	for _, b := range p.AllBatches() {
		select {
		case work <- b:
		case sendErr = <-errs:
			break send
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	if sendErr == nil {
		sendErr = <-errs
	}
	if err := st.Close(); sendErr == nil {
		sendErr = err
	}
	return sendErr
}

// underProvider adds keys to the provider block of the campaign at path.
func underProvider(t *testing.T, path, keys string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const block = "\nprovider:\n"
	before, after, ok := strings.Cut(string(data), block)
	if !ok {
		t.Fatalf("%s has no provider block", path)
	}
	if err := os.WriteFile(path, []byte(before+block+keys+after), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sendBare sends p's batches to the sandbox with a bare loop (no state, no
// retries), as many at once as the campaign says, calling answered after
// each answer (from the sending goroutine, one at a time).
func sendBare(ctx context.Context, client *api.Client, token string, c *campaign.Campaign, p *plan.Plan, answered func()) error {
	var (
		mu      sync.Mutex
		sendErr error
		wg      sync.WaitGroup
	)
	work := make(chan plan.Batch)
	for range c.Concurrency {
		wg.Go(func() {
			for b := range work {
				_, err := client.Send(ctx, token, api.SendRequest{From: c.Sender, To: b.Recipients, Body: b.Body})
				mu.Lock()
				answered()
				if err != nil {
					sendErr = err
				}
				mu.Unlock()
			}
		})
	}
	err := p.EachBatch(func(_ int, b plan.Batch) error {
		work <- b
		return nil
	})
	close(work)
	wg.Wait()
	if err == nil {
		err = sendErr
	}
	if err != nil {
		return fmt.Errorf("bare sender: %w", err)
	}
	return nil
}

// sendingPhase reads apply --json's summary event: how long the send loop
// took and how many batches it sent.
func sendingPhase(t *testing.T, events string) (time.Duration, int) {
	t.Helper()
	for line := range strings.Lines(events) {
		var e struct {
			Type    string
			Summary struct {
				Batches  int   `json:"batches_sent"`
				Duration int64 `json:"duration_ns"`
			}
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == "summary" {
			return time.Duration(e.Summary.Duration), e.Summary.Batches
		}
	}
	t.Fatalf("apply --json printed no summary:\n%s", firstLines(events, 5))
	return 0, 0
}

// startSandbox runs `smsform sandbox` on a free loopback port and returns
// its URL and a function that stops it (called at the test's end too).
func startSandbox(t *testing.T, smsform, id, secret string, args ...string) (string, func()) {
	t.Helper()
	args = append([]string{"sandbox", "--addr", "127.0.0.1:0", "--quiet", "--client-id", id, "--client-secret", secret}, args...)
	cmd := exec.Command(smsform, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := sync.OnceFunc(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("sandbox said %q: %v", line, err)
	}
	go io.Copy(io.Discard, out)
	return url, stop
}

// row is one line of the table.
type row struct {
	figure, smsform, comparison string
	ratio                       float64
	target                      string
	pass                        bool
	rss                         int64
}

type table struct{ rows []row }

func (tb *table) add(r row) { tb.rows = append(tb.rows, r) }

// print writes the table under a line naming the machine; target is the
// make target of the full run.
func (tb *table) print(w io.Writer, target string, judged bool) {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimLeft(name, "\t :"))
				break
			}
		}
	}
	fmt.Fprintf(w, "\nsmsform %s on %d cores (%s), %s/%s, %s\n", target, runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, runtime.Version())
	if !judged {
		fmt.Fprintf(w, "(small run: targets are not judged; make %s runs the full one)\n", target)
	}
	header := []string{"figure", "smsform", "comparison", "ratio", "target", "result", "peak RSS"}
	cells := [][]string{header}
	for _, r := range tb.rows {
		result := "pass"
		switch {
		case r.target == "(info)":
			result = "info" // no target: a figure to read, never a pass
		case !r.pass:
			result = "FAIL"
		}
		if !judged {
			result = "-"
		}
		rss := "" // a figure measured in the test process, not of a command
		if r.rss > 0 {
			rss = mb(r.rss)
		}
		cells = append(cells, []string{r.figure, r.smsform, r.comparison, fmt.Sprintf("%.2f", r.ratio), r.target, result, rss})
	}
	widths := make([]int, len(header))
	for _, row := range cells {
		for i, c := range row {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for k, row := range cells {
		var b strings.Builder
		for i, c := range row {
			b.WriteString("| ")
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+1))
		}
		fmt.Fprintln(w, b.String()+"|")
		if k == 0 {
			b.Reset()
			for _, wd := range widths {
				b.WriteString("|" + strings.Repeat("-", wd+2))
			}
			fmt.Fprintln(w, b.String()+"|")
		}
	}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
func mb(b int64) string           { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }

func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
