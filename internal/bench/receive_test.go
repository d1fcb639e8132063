package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/receive"
	"github.com/smsform/smsform/state"
)

// The rows of what happens after the send (issue 37): reports import of
// a provider's export against plan of as many recipients, and smsform
// receive's sustained rate into PostgreSQL.

// receiveSecret authenticates the benchmark's posts.
const receiveSecret = "bench-receive-secret-never-printed"

// reportsProject makes a project folder under dir holding a copy of the
// generated campaign and a project file naming state (a folder for a file
// state when it is ""), with the mapping of the reports the rows write (a
// CSV's columns, or the sandbox's JSON); it returns the folder, the
// campaign's path and the state's location.
func reportsProject(t *testing.T, dir, name string, g *testharness.Generated, stateLoc string) (proj, campaignPath, loc string) {
	t.Helper()
	campaignPath, loc = ledgerProject(t, dir, name, g, stateLoc)
	proj = filepath.Dir(campaignPath)
	if stateLoc == "" {
		stateLoc = "st/"
	}
	project := fmt.Sprintf(`version: 1
state: %s
provider:
  reports:
    id: /message_id
    number: /to
    status: /status
    reason: /reason
    at: /at
    delivered: [DELIVERED]
    undelivered: [UNDELIVERED]
receive:
  auth: hmac-sha256
  header: X-Signature
`, stateLoc)
	if err := os.WriteFile(filepath.Join(proj, campaign.ProjectFile), []byte(project), 0o644); err != nil {
		t.Fatal(err)
	}
	return proj, campaignPath, loc
}

// sentReport is a message recorded sent, as a report names it.
type sentReport struct{ id, phone string }

// recordSentWithIDs records every batch of the campaign's plan as sent,
// each recipient with a provider message id of its own (as a results
// mapping's id: keeps them), through the state's own API, four batches at
// once as a concurrent apply would; it calls each with every message, in
// plan order.
func recordSentWithIDs(ctx context.Context, campaignPath, loc string, each func(sentReport) error) error {
	c, err := campaign.Load(campaignPath)
	if err != nil {
		return err
	}
	p, err := plan.Compute(ctx, c, nil)
	if err != nil {
		return err
	}
	st, err := state.Open(ctx, state.MustParseLocation(loc), state.Options{Campaign: c.Name, Shared: true})
	if err != nil {
		return err
	}
	type sent struct {
		b   plan.Batch
		ids []string
	}
	work := make(chan sent)
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for s := range work {
				err := st.RecordIntent(ctx, state.Intent{BatchID: s.b.ID, Phones: s.b.Recipients, BodyHash: state.BodyHash(s.b.Body)})
				if err == nil {
					err = st.RecordOutcome(ctx, s.b.ID, state.Outcome{HTTPStatus: 200, RequestID: "bench-" + s.b.ID,
						Parts: []state.Part{{Status: state.Sent, Phones: s.b.Recipients, IDs: s.ids}}})
				}
				if err != nil {
					failed.CompareAndSwap(nil, err)
				}
			}
		})
	}
	n := 0
	for _, b := range p.AllBatches() {
		if failed.Load() != nil {
			break
		}
		ids := make([]string, len(b.Recipients))
		for i, phone := range b.Recipients {
			n++
			ids[i] = fmt.Sprintf("bench-%d", n)
			if err := each(sentReport{id: ids[i], phone: phone}); err != nil {
				failed.CompareAndSwap(nil, err)
				break
			}
		}
		work <- sent{b, ids}
	}
	close(work)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		st.Close()
		return err
	}
	return st.Close()
}

// reportAt is when every benchmark report says its message was delivered.
const reportAt = "2026-03-01T12:00:01.000Z"

// importRows measures `smsform reports import` of an export of a report
// for each recipient of the generated campaign, against plan of that
// campaign (planned: its measured plan): time and peak memory.
func importRows(t *testing.T, ctx context.Context, smsform, dir string, g *testharness.Generated, planned measured) []row {
	t.Helper()
	_, campaignPath, loc := reportsProject(t, dir, "reports-import", g, "")
	export := filepath.Join(dir, "reports-import", "export.csv")
	f, err := os.Create(export)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("message_id,to,status,reason,at\n")
	n := 0
	start := time.Now()
	err = recordSentWithIDs(ctx, campaignPath, loc, func(r sentReport) error {
		n++
		status, reason := "DELIVERED", ""
		if n%10 == 0 {
			status, reason = "UNDELIVERED", "Absent subscriber"
		}
		_, err := fmt.Fprintf(w, "%s,%s,%s,%s,%s\n", r.id, r.phone, status, reason, reportAt)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d messages recorded sent with ids, and their reports written, in %s", n, time.Since(start).Round(time.Second))
	m := run(t, smsform, nil, "reports", "import", export, "--project", filepath.Dir(campaignPath), "--json")
	var got struct{ Reports, New, Unmatched int }
	if err := json.Unmarshal([]byte(m.stdout), &got); err != nil || got.Reports != n || got.New != n || got.Unmatched != 0 {
		t.Fatalf("reports import: %+v (%v), want %d new and matched\n%s", got, err, n, firstLines(m.stdout, 3))
	}
	return []row{
		{figure: fmt.Sprintf("reports import of %s lines (CSV, a report per recipient, matched by id) vs plan of %s recipients", count(n), count(len(g.Numbers))),
			smsform: secs(m.wall), rss: m.rss, comparison: secs(planned.wall), ratio: m.wall.Seconds() / planned.wall.Seconds(),
			target: "≤ 1", pass: m.wall <= planned.wall},
		{figure: "  peak RSS", smsform: mb(m.rss), rss: m.rss, comparison: "300 MB target", ratio: float64(m.rss) / (300 << 20),
			target: "≤ 1", pass: m.rss <= 300<<20},
	}
}

// receiveRows measures smsform receive taking a report for each recipient
// of a campaign of n, one report a request as the sandbox and most
// providers post them, from clients posting at once, into PostgreSQL with
// fsync on: each answered 200 only once durable (the Receiver groups the
// commits of overlapping requests).
func receiveRows(t *testing.T, ctx context.Context, smsform, dir string, n, clients int) []row {
	t.Helper()
	g, err := testharness.Generate(dir, testharness.Spec{Name: "receive", Recipients: n, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	proj, campaignPath, loc := reportsProject(t, dir, "reports-receive", g, pg.Database(t))
	var bodies [][]byte
	if err := recordSentWithIDs(ctx, campaignPath, loc, func(r sentReport) error {
		b, err := json.Marshal(map[string]string{"message_id": r.id, "to": r.phone, "status": "DELIVERED", "reason": "", "at": reportAt})
		bodies = append(bodies, b)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	url, stop := startReceive(t, smsform, proj)
	rate := postAll(t, url, bodies, clients)
	rss := stop()
	st, err := state.OpenSharedReadOnly(ctx, state.MustParseLocation(loc), "receive")
	if err != nil {
		t.Fatal(err)
	}
	held, err := st.Deliveries(ctx)
	st.Close()
	if err != nil || len(held) != len(bodies) {
		t.Fatalf("the state holds %d deliveries of %d reports answered 200 (%v)", len(held), len(bodies), err)
	}
	return []row{
		{figure: fmt.Sprintf("receive %s reports into PostgreSQL, a report a request, %d posts at once, each durable before its 200: reports/s", count(len(bodies)), clients),
			smsform: fmt.Sprintf("%.0f", rate), rss: rss, comparison: "2,000 target", ratio: rate / 2000, target: "≥ 1", pass: rate >= 2000},
		recordDirectRow(t, ctx, dir, g, clients, rate),
	}
}

// recordDirectRow measures the state's Receiver alone, called by as many
// goroutines as receiveRow's clients with a report each, on a database of
// its own holding the same messages: what receive's HTTP, authentication
// and reading add is the difference.
func recordDirectRow(t *testing.T, ctx context.Context, dir string, g *testharness.Generated, callers int, received float64) row {
	t.Helper()
	_, campaignPath, loc := reportsProject(t, dir, "reports-direct", g, pg.Database(t))
	at, _ := time.Parse(time.RFC3339, reportAt)
	var reports []state.Report
	if err := recordSentWithIDs(ctx, campaignPath, loc, func(r sentReport) error {
		reports = append(reports, state.Report{ProviderID: r.id, Phone: r.phone, Delivery: state.Delivered, ProviderStatus: "DELIVERED", At: at})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rcv, err := state.OpenReceiver(ctx, state.MustParseLocation(loc), state.ReceiverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	var next atomic.Int64
	var failed atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(reports)); i = next.Add(1) - 1 {
				if _, err := rcv.Record(ctx, reports[i:i+1], nil); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(err)
	}
	rate := float64(len(reports)) / time.Since(start).Seconds()
	return row{figure: fmt.Sprintf("  the state's Receiver alone, %d callers of a report each (no HTTP): reports/s", callers),
		smsform: fmt.Sprintf("%.0f", received), comparison: fmt.Sprintf("%.0f Record", rate), ratio: received / rate, target: "(info)", pass: true}
}

// startReceive runs `smsform receive` for the project in proj on a free
// port; it returns its URL and a function that stops it (SIGTERM) and
// returns its peak RSS.
func startReceive(t *testing.T, smsform, proj string) (string, func() int64) {
	t.Helper()
	cmd := exec.Command(smsform, "receive", "--project", proj, "--listen", "127.0.0.1:0", "--quiet")
	cmd.Env = append(os.Environ(), receive.SecretEnv+"="+receiveSecret)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchRSS(cmd.Process.Pid)
	line, _ := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("receive said %q\n%s", line, stderr.String())
	}
	go io.Copy(io.Discard, out)
	stop := sync.OnceValue(func() int64 {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("receive: %v\n%s", err, stderr.String())
		}
		return peak()
	})
	t.Cleanup(func() { stop() })
	return url, stop
}

// postAll posts every body, signed, from clients goroutines at once over
// kept-alive connections, and returns the reports answered 200 a second
// (every one must be).
func postAll(t *testing.T, url string, bodies [][]byte, clients int) float64 {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}, Timeout: time.Minute}
	var next, failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(bodies)) {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, url+receive.ReportsPath, bytes.NewReader(bodies[i]))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Signature", receive.Sign(receiveSecret, bodies[i]))
				resp, err := client.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if failed.Load() > 0 {
		t.Fatalf("%d of %d posts not answered 200: %v", failed.Load(), len(bodies), firstErr.Load())
	}
	return float64(len(bodies)) / wall.Seconds()
}

var (
	importScale = flag.Int("bench.import", 0, "run only the reports import row (TestBenchImport) at this many recipients")
	importKeep  = flag.String("bench.keep", "", "TestBenchImport: build its project in this folder and keep it, to run the import again by hand")
)

// TestBenchImport is the reports import row of make bench alone, at the
// scale -bench.import asks (skipped without it): the row is the slowest
// to set up, and tuning the import needs it run, and profiled, on its
// own.
func TestBenchImport(t *testing.T) {
	if *importScale <= 0 {
		t.Skip("-bench.import N runs it")
	}
	dir := *importKeep
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	smsform := binary(t)
	g, err := testharness.Generate(dir, testharness.Spec{Name: "shared", Recipients: *importScale, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	planned := medianRun(t, *runs, smsform, nil, "plan", g.Campaign)
	var tab table
	tab.rows = importRows(t, context.Background(), smsform, dir, g, planned)
	tab.print(os.Stdout, "bench (reports import only)", true)
}
