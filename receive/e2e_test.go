package receive_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/receive"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// The campaign of the end-to-end tests.
const campaignName = "spring"

// project is a project whose campaign goes through a sandbox that reports
// to smsform receive: the mapping docs/sandbox.md gives.
type project struct {
	dir      string
	campaign string // the campaign file
	phones   []string
	loc      string // the state, as the state package takes it
	env      map[string]string
	sb       *testharness.Server
}

func (p *project) getenv(k string) string { return p.env[k] }

// environ is p's environment for a process of its own.
func (p *project) environ() []string {
	out := os.Environ()
	for k, v := range p.env {
		out = append(out, k+"="+v)
	}
	return out
}

// newProject writes a project of n recipients whose state is a file
// (backend "file") or a PostgreSQL database ("postgres").
func newProject(t *testing.T, backend string, n int) *project {
	t.Helper()
	dir := t.TempDir()
	p := &project{dir: dir, env: map[string]string{
		"SMSFORM_CLIENT_ID": testharness.ClientID, "SMSFORM_CLIENT_SECRET": testharness.ClientSecret,
		"SMSFORM_TOKEN_DIR": filepath.Join(dir, ".tokens"), receive.SecretEnv: testharness.ReportsSecret,
		"CI": "true",
	}}
	stateLine := ".smsform/"
	p.loc = filepath.Join(dir, ".smsform", "smsform.smsstate")
	if backend == "postgres" {
		p.loc = pg.Database(t)
		stateLine = p.loc
	}
	project := testharness.SandboxProject(stateLine)
	if err := os.WriteFile(filepath.Join(dir, "smsform.yaml"), []byte(project), 0o600); err != nil {
		t.Fatal(err)
	}
	p.campaign, p.phones = testharness.WriteCampaign(t, dir, testharness.Campaign{Name: campaignName, Recipients: n, BatchSize: 10, Concurrency: 2})
	return p
}

// startSandbox serves the sandbox p's campaign goes through, reporting to
// the receiver at url: reports duplicated, reordered, some undelivered,
// some replies STOP; cfg adds faults.
func (p *project) startSandbox(t *testing.T, url string, cfg sandbox.Config) {
	t.Helper()
	cfg.ReportsTo, cfg.RepliesTo = url+receive.ReportsPath, url+receive.RepliesPath
	cfg.ReportDelay, cfg.ReportBackoff = 5*time.Millisecond, 20*time.Millisecond
	cfg.UndeliveredRate, cfg.DuplicateRate, cfg.ReorderRate, cfg.StopRate = 0.2, 0.2, 0.3, 0.05
	if cfg.Seed == 0 {
		cfg.Seed = 7
	}
	p.sb = testharness.Start(t, cfg)
	p.env["SMSFORM_BASE_URL"] = p.sb.URL
}

// apply sends p's campaign, in this process. A batch the sandbox acted on
// without answering leaves its recipients in doubt (exit 3): that is not a
// failure here.
func (p *project) apply(t *testing.T) { t.Helper(); p.applyFile(t, p.campaign) }

// applyFile sends the campaign file of p's project, as apply does.
func (p *project) applyFile(t *testing.T, file string) {
	t.Helper()
	var stderr bytes.Buffer
	err := cli.Run(context.Background(), []string{"apply", "--auto-approve", file}, cli.Env{Stdout: io.Discard, Stderr: &stderr, Getenv: p.getenv})
	var incomplete *apply.IncompleteError
	if err != nil && !errors.As(err, &incomplete) {
		t.Fatalf("apply: %v\n%s", err, stderr.String())
	}
}

// receiving is `smsform receive` serving p.
type receiving struct {
	url  string
	log  *logBuffer
	stop func() error
}

// receiveInProcess runs `smsform receive` for p in this process on a free
// port, until the test ends or stop.
func (p *project) receiveInProcess(t *testing.T) *receiving {
	t.Helper()
	logs := &logBuffer{}
	out, in := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cli.Run(ctx, []string{"receive", "--project", p.dir, "--listen", "127.0.0.1:0"}, cli.Env{Stdout: in, Stderr: logs, Getenv: p.getenv})
		in.Close()
	}()
	url := listeningOn(t, out, logs)
	stop := sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() { stop() })
	return &receiving{url: url, log: logs, stop: stop}
}

// listeningOn reads the "listening on URL" line receive starts with.
func listeningOn(t *testing.T, out io.Reader, logs fmt.Stringer) string {
	t.Helper()
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("receive said %q (%v)\n%s", line, err, logs.String())
	}
	go io.Copy(io.Discard, out)
	return url
}

// sandboxCounts is what the sandbox's own GET /sandbox/reports says.
func (p *project) sandboxCounts(t *testing.T) sandbox.Reports {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.sb.URL+sandbox.ReportsPath, nil)
	req.SetBasicAuth(testharness.ClientID, testharness.ClientSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rs sandbox.Reports
	if err := json.NewDecoder(resp.Body).Decode(&rs); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", sandbox.ReportsPath, resp.StatusCode, err)
	}
	return rs
}

// inState is what the state holds of p's campaign after the send.
type inState struct {
	delivered, undelivered, pending int
	sent, inDoubt, failed           int
	unmatched                       int
	stops                           int      // opt-outs from a reply
	twice                           []string // recipients the state lists more than once
	byPhone                         map[string]state.DeliveryRecord
}

func (p *project) inState(t *testing.T) inState {
	t.Helper()
	ctx := context.Background()
	st, err := state.OpenSharedReadOnly(ctx, state.MustParseLocation(p.loc), campaignName)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var s inState
	if s.byPhone, err = st.Deliveries(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range s.byPhone {
		switch d.Delivery {
		case state.Delivered:
			s.delivered++
		case state.Undelivered:
			s.undelivered++
		case state.Pending:
			s.pending++
		}
	}
	seen := map[string]int{}
	err = st.Recipients(ctx, func(r state.Recipient) error {
		if seen[r.Phone]++; seen[r.Phone] == 2 {
			s.twice = append(s.twice, fmt.Sprintf("%s (%s: %s)", e164.Mask(r.Phone), r.Status, r.Reason))
		}
		switch r.Status {
		case state.Sent:
			s.sent++
		case state.InDoubt:
			s.inDoubt++
		case state.Failed:
			s.failed++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.unmatched, err = st.UnmatchedReports(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.OptOuts(ctx, state.MustParseLocation(p.loc), func(o ledger.OptOut) error {
		if o.Source == "reply" {
			s.stops++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// checkAgainstSandbox holds the state to what the sandbox saw
// acknowledged: one delivery per message it reported, delivered and
// undelivered as it said, each acknowledged report's message recorded as
// that report says, every STOP an opt-out, nothing unmatched, nobody left
// in doubt (a report proves the provider acted).
func checkAgainstSandbox(t *testing.T, p *project, rs sandbox.Reports) inState {
	t.Helper()
	s := p.inState(t)
	c := rs.Counts
	if c.Pending != 0 || c.Delivered+c.Undelivered == 0 {
		t.Fatalf("the sandbox's counts: %+v", c)
	}
	if s.delivered != c.Delivered || s.undelivered != c.Undelivered || s.pending != 0 {
		t.Errorf("the state holds %d delivered, %d undelivered, %d pending; the sandbox reported %d and %d", s.delivered, s.undelivered, s.pending, c.Delivered, c.Undelivered)
	}
	if s.stops != c.Stops || s.unmatched != 0 {
		t.Errorf("%d opt-outs by reply (the sandbox: %d STOP acknowledged), %d reports unmatched: %s", s.stops, c.Stops, s.unmatched, unmatchedWhy(t, p.loc))
	}
	for _, cb := range rs.Callbacks {
		if cb.Kind != "report" || !cb.Acknowledged {
			continue
		}
		want := state.Delivered
		if cb.Report.Status == sandbox.ReportUndelivered {
			want = state.Undelivered
		}
		if d, ok := s.byPhone[cb.Report.To]; !ok || d.Delivery != want || d.ProviderID != cb.Report.MessageID {
			t.Errorf("report of %s acknowledged, the state holds %+v (%v)", cb.Report.MessageID, d, ok)
		}
	}
	if len(s.twice) > 0 {
		t.Errorf("the state lists %d recipients twice, e.g. %s", len(s.twice), s.twice[0])
	}
	if s.inDoubt != 0 || s.failed != 0 || s.sent != len(p.phones) {
		t.Errorf("recipients: %d sent, %d in doubt, %d failed of %d", s.sent, s.inDoubt, s.failed, len(p.phones))
	}
	return s
}

// posted sums the log lines of receive's 200 answers: reports taken, and
// of them duplicates.
func posted(log string) (reports, duplicates int) {
	re := regexp.MustCompile(`path=/reports status=200 .*reports=(\d+) duplicates=(\d+)`)
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		r, _ := strconv.Atoi(m[1])
		d, _ := strconv.Atoi(m[2])
		reports += r
		duplicates += d
	}
	return reports, duplicates
}

var backends = []string{"file", "postgres"}

// TestSandboxToState: a campaign sent through the sandbox, whose reports
// (duplicated, out of order, some undelivered) and STOP replies reach
// smsform receive, ends with the state holding exactly what the sandbox
// says it reported, on both engines; every duplicate is answered as one;
// and the recipients the sandbox acted on without answering, in doubt
// after apply, are resolved as sent by their reports.
func TestSandboxToState(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			p := newProject(t, backend, 120)
			rc := p.receiveInProcess(t)
			p.startSandbox(t, rc.url, sandbox.Config{AmbiguousRate: 0.15})
			p.apply(t)
			rs := p.sb.WaitReports(time.Minute)
			checkAgainstSandbox(t, p, rs)
			reports, dups := posted(rc.log.String())
			c := p.sandboxCounts(t).Counts
			if reports != c.Reports || dups != c.Duplicates || reports-dups != c.Delivered+c.Undelivered {
				t.Errorf("receive took %d reports, %d of them duplicates; the sandbox posted %d, %d duplicates, for %d messages",
					reports, dups, c.Reports, c.Duplicates, c.Delivered+c.Undelivered)
			}
			if c.Duplicates == 0 || rs.Counts.Undelivered == 0 || rs.Counts.Stops == 0 || p.sb.Stats().Dropped == 0 {
				t.Errorf("the run tried too little: %+v, %d answers dropped", rs.Counts, p.sb.Stats().Dropped)
			}
			if err := rc.stop(); err != nil {
				t.Errorf("receive stopped with %v", err)
			}
			checkLog(t, rc.log.String())
		})
	}
}

// repost posts every report and reply the sandbox had acknowledged again,
// signed, to a receiver at url, and returns how many of each were new.
func repost(t *testing.T, url string, rs sandbox.Reports) (newReports, newReplies int) {
	t.Helper()
	for _, cb := range rs.Callbacks {
		if !cb.Acknowledged || cb.Duplicate {
			continue
		}
		path, body := receive.ReportsPath, any(cb.Report)
		if cb.Kind == "reply" {
			path, body = receive.RepliesPath, cb.Reply
		}
		b, _ := json.Marshal(body)
		status, answer := post(t, url, path, "application/json", b, credential{kind: "hmac-sha256", secret: testharness.ReportsSecret, header: sandbox.SignatureHeader})
		var got map[string]int
		if status != 200 || json.Unmarshal([]byte(answer), &got) != nil {
			t.Fatalf("post again: %d %s", status, answer)
		}
		if cb.Kind == "reply" {
			newReplies += got["replies"] - got["duplicates"]
		} else {
			newReports += got["reports"] - got["duplicates"]
		}
	}
	return newReports, newReplies
}

// freePort is a loopback address no one listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// process is `smsform receive` run as a process of its own (this test
// binary, re-executed), which a test kills.
type process struct {
	t    *testing.T
	p    *project
	addr string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	logs   []*logBuffer
	starts int
}

// startProcess runs receive for p on addr, and stops it when the test
// ends.
func startProcess(t *testing.T, p *project, addr string) *process {
	t.Helper()
	pr := &process{t: t, p: p, addr: addr}
	pr.start()
	t.Cleanup(func() { pr.kill() })
	return pr
}

// start runs a new process, trying again while the port is not free yet.
func (pr *process) start() {
	pr.t.Helper()
	var err error
	for range 100 {
		if err = pr.try(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	pr.t.Fatalf("receive did not start: %v", err)
}

func (pr *process) try() error {
	cmd := exec.Command(os.Args[0], "receive", "--project", pr.p.dir, "--listen", pr.addr)
	cmd.Env = append(pr.p.environ(), envRunSmsform+"=1")
	logs := &logBuffer{}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "listening on ") {
		cmd.Wait()
		return fmt.Errorf("receive said %q: %s", line, logs.String())
	}
	go io.Copy(io.Discard, out)
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	pr.mu.Lock()
	pr.cmd, pr.exited, pr.starts = cmd, exited, pr.starts+1
	pr.logs = append(pr.logs, logs)
	pr.mu.Unlock()
	return nil
}

// kill SIGKILLs the process, as a crash or an OOM killer would.
func (pr *process) kill() {
	pr.mu.Lock()
	cmd, exited := pr.cmd, pr.exited
	pr.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exited
}

// terminate stops the process as systemd does, and returns how it exited.
func (pr *process) terminate() error {
	pr.mu.Lock()
	cmd, exited := pr.cmd, pr.exited
	pr.mu.Unlock()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(receive.ShutdownGrace + 10*time.Second):
		return errors.New("receive did not stop on SIGTERM")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("exit %d", code)
	}
	return nil
}

func (pr *process) log() string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var b strings.Builder
	for _, l := range pr.logs {
		b.WriteString(l.String())
	}
	return b.String()
}

// TestKilledWhileReportsStream: smsform receive, SIGKILLed at random
// moments while the sandbox's reports and replies stream in (the sandbox
// posts again what was not acknowledged), loses nothing it acknowledged
// and counts nothing twice: the state holds exactly what the sandbox saw
// acknowledged, and every acknowledged report and reply posted once more
// is a duplicate. SIGTERM then stops it with exit 0.
func TestKilledWhileReportsStream(t *testing.T) {
	// Each start of a race-built process takes a second or two: the
	// short run kills fewer times.
	n, kills := 400, 10
	if testing.Short() {
		n, kills = 150, 3
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			p := newProject(t, backend, n)
			addr := freePort(t)
			pr := startProcess(t, p, addr)
			p.startSandbox(t, "http://"+addr, sandbox.Config{AmbiguousRate: 0.1, Latency: 2 * time.Millisecond})
			rng := rand.New(rand.NewPCG(uint64(len(backend)), 37))
			applied := make(chan struct{})
			go func() { defer close(applied); p.apply(t) }()
			done := 0
			for done < kills {
				time.Sleep(time.Duration(10+rng.IntN(150)) * time.Millisecond)
				pr.kill()
				done++
				pr.start()
			}
			<-applied
			rs := p.sb.WaitReports(2 * time.Minute)
			if err := pr.terminate(); err != nil {
				t.Errorf("receive after SIGTERM: %v\n%s", err, pr.log())
			}
			if rs.Counts.Attempts <= rs.Counts.Reports+rs.Counts.Replies {
				t.Errorf("no post was ever refused or cut off by a kill: %+v", rs.Counts)
			}
			checkAgainstSandbox(t, p, rs)
			rc := p.receiveInProcess(t)
			if newReports, newReplies := repost(t, rc.url, rs); newReports != 0 || newReplies != 0 {
				t.Errorf("posted again, %d reports and %d replies the sandbox saw acknowledged were new to the state", newReports, newReplies)
			}
			t.Logf("%d kills; the sandbox posted %d reports and %d replies in %d attempts", done, rs.Counts.Reports, rs.Counts.Replies, rs.Counts.Attempts)
			checkLog(t, pr.log())
		})
	}
}

// unmatchedWhy is why each unmatched report of the state at loc was not
// matched, as recorded.
func unmatchedWhy(t *testing.T, loc string) string {
	t.Helper()
	st, err := state.OpenStore(context.Background(), state.MustParseLocation(loc), false)
	if err != nil || st.DB == nil {
		return fmt.Sprint(err)
	}
	defer st.Close()
	rows, err := st.DB.Query(`SELECT unmatched FROM reports WHERE campaign_id = 0`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var why []string
	for rows.Next() {
		var w string
		rows.Scan(&w)
		why = append(why, w)
	}
	return strings.Join(why, "; ")
}
