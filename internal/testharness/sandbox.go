// Package testharness is what smsform's tests use to run the tool against
// the sandbox; nothing here is used by the smsform binary.
//
// This file: a [Server] that serves [sandbox.Server] on loopback and can
// refuse connections, come back on the same address, or restart (losing every
// token) while a run goes on, and that logs every request so tests can check
// Retry-After, and that sums up the delivery reports and replies of every
// sandbox it ran ([Server.Reports], [Server.WaitReports]); and [Account],
// which holds a state against the sandbox's outbox, the ground truth of who
// was messaged. It takes a testing.TB because
// it registers its own cleanup and fails the test that started it.
//
// gate.go: a [Gate] holds send requests until the test lets them go
// ([Server.Hold]), so that a test acts on what it saw in flight rather than
// on a guess of how long a request takes.
//
// campaigns.go: [Generate] writes the campaigns the benchmarks run on. It is
// deterministic: the same [Spec] writes the same files, byte for byte, on any
// machine, so figures from two runs compare the same work.
package testharness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// Client credentials the harness's sandboxes accept.
const (
	ClientID     = "reliability-client"
	ClientSecret = "reliability-secret-never-printed"
	// ReportsSecret signs the sandbox's reports and replies when the
	// config of [Start] sets ReportsTo or RepliesTo and no secret.
	ReportsSecret = "reliability-reports-secret-never-printed"
)

// Request is one request the [Server] answered.
type Request struct {
	Path       string
	Batch      string // a send's first recipient, which names its batch
	To         int    // a send's recipients
	Arrived    time.Time
	Done       time.Time // when the handler returned: the client had nothing before
	Status     int       // 0: the connection was dropped without a response
	RetryAfter time.Duration
}

// Server serves a sandbox on a fixed loopback address. Keep-alives are off,
// so every request has its own connection and [Server.Stop] refuses the next
// one at once.
type Server struct {
	URL string

	t    testing.TB
	addr string
	cfg  sandbox.Config

	mu      sync.Mutex
	ln      net.Listener
	hs      *http.Server
	cur     *sandbox.Server
	all     []*sandbox.Server
	reqs    []Request
	sends   int
	onSend  func(n int) // called before the n-th send request (1-based) is served
	gate    *Gate       // nil: no send request is held
	serving sync.WaitGroup
}

// Start serves a sandbox made from cfg (credentials filled in, and
// [ReportsSecret] when reports or replies have none) on a free loopback port
// until the test ends; then every sandbox it ran stops posting reports.
func Start(t testing.TB, cfg sandbox.Config) *Server {
	t.Helper()
	cfg.ClientID, cfg.ClientSecret = ClientID, ClientSecret
	if (cfg.ReportsTo != "" || cfg.RepliesTo != "") && cfg.ReportsSecret == "" {
		cfg.ReportsSecret = ReportsSecret
	}
	s := &Server{t: t, cfg: cfg}
	s.cur = s.newSandbox()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.URL = "http://" + s.addr
	s.serve(ln)
	t.Cleanup(func() {
		s.Stop()
		s.serving.Wait()
		s.mu.Lock()
		all := slices.Clone(s.all)
		s.mu.Unlock()
		for _, sb := range all {
			sb.Close()
		}
	})
	return s
}

func (s *Server) newSandbox() *sandbox.Server {
	sb, err := sandbox.New(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.all = append(s.all, sb)
	return sb
}

// serve runs a new http.Server on ln; s.mu may be held.
func (s *Server) serve(ln net.Listener) {
	hs := &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	hs.SetKeepAlivesEnabled(false)
	s.ln, s.hs = ln, hs
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		hs.Serve(ln)
	}()
}

// Stop closes the listener: connections are refused from now on, requests
// already accepted are answered.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
		s.ln = nil
	}
}

// Resume listens again on the same address, with the same sandbox.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return
	}
	var ln net.Listener
	var err error
	for range 50 { // the old socket may linger for a moment
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		s.t.Errorf("resume %s: %v", s.addr, err)
		return
	}
	s.serve(ln)
}

// Restart replaces the sandbox with a new instance on the same URL, as a
// provider's restart would: every token issued so far is unknown to it. The
// reports of the old instance are still posted, as a provider's report
// queue outlives its API servers.
func (s *Server) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = s.newSandbox()
}

// OnSend calls f(n) before the n-th send request (counting from 1) is
// served, in the handler's goroutine; f may call Stop or Restart.
func (s *Server) OnSend(f func(n int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onSend = f
}

// Hold puts a [Gate] in front of the sandbox: the next pass send requests
// go through, later ones wait, after [Server.OnSend]'s call, until the gate
// opens; one whose client goes away meanwhile is dropped, unanswered and
// never seen by the sandbox. The test ends with the gate opened.
func (s *Server) Hold(pass int) *Gate {
	g := NewGate(pass)
	s.mu.Lock()
	s.gate = g
	s.mu.Unlock()
	s.t.Cleanup(g.Open) // before the server stops: cleanups run last first
	return g
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	req := Request{Path: r.URL.Path, Arrived: time.Now()}
	var hook func(int)
	var gate *Gate
	if r.URL.Path == api.SendPath {
		body, _ := io.ReadAll(io.LimitReader(r.Body, api.MaxRequestBytes+1))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var sr api.SendRequest
		if json.Unmarshal(body, &sr) == nil && len(sr.To) > 0 {
			req.Batch, req.To = sr.To[0], len(sr.To)
		}
		s.mu.Lock()
		s.sends++
		n := s.sends
		hook = func(int) {}
		if s.onSend != nil {
			hook = s.onSend
		}
		gate = s.gate
		s.mu.Unlock()
		hook(n)
	}
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		req.Done = time.Now()
		req.Status = sw.status // 0: nothing written, the sandbox dropped the connection
		if ra := sw.Header().Get("Retry-After"); ra != "" {
			if n, err := strconv.Atoi(ra); err == nil {
				req.RetryAfter = time.Duration(n) * time.Second
			}
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
	}()
	if gate != nil && !gate.Wait(r.Context()) {
		return
	}
	s.mu.Lock()
	sb := s.cur
	s.mu.Unlock()
	sb.ServeHTTP(sw, r)
}

// statusWriter remembers the status; Unwrap lets the sandbox hijack the
// connection to drop it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Messages is the outbox of every sandbox instance this server has run.
func (s *Server) Messages() []sandbox.Message {
	s.mu.Lock()
	all := slices.Clone(s.all)
	s.mu.Unlock()
	var out []sandbox.Message
	for _, sb := range all {
		out = append(out, sb.Messages()...)
	}
	return out
}

// Stats sums the counters of every sandbox instance.
func (s *Server) Stats() sandbox.Stats {
	s.mu.Lock()
	all := slices.Clone(s.all)
	s.mu.Unlock()
	sum := sandbox.Stats{Status: map[int]int{}}
	for _, sb := range all {
		st := sb.Stats()
		sum.TokenRequests += st.TokenRequests
		sum.SendRequests += st.SendRequests
		sum.Dropped += st.Dropped
		sum.Accepted += st.Accepted
		sum.Messages += st.Messages
		sum.Rejected += st.Rejected
		sum.Throttled += st.Throttled
		sum.Duplicates += st.Duplicates
		for k, v := range st.Status {
			sum.Status[k] += v
		}
	}
	return sum
}

// Reports sums up the reports and replies of every sandbox instance: the
// counts added, the callbacks of each instance in turn.
func (s *Server) Reports() sandbox.Reports {
	s.mu.Lock()
	all := slices.Clone(s.all)
	s.mu.Unlock()
	sum := sandbox.Reports{Callbacks: []sandbox.Callback{}}
	for _, sb := range all {
		rs := sb.Reports()
		c := &sum.Counts
		c.Reports += rs.Counts.Reports
		c.Duplicates += rs.Counts.Duplicates
		c.Replies += rs.Counts.Replies
		c.Acknowledged += rs.Counts.Acknowledged
		c.Pending += rs.Counts.Pending
		c.Attempts += rs.Counts.Attempts
		c.Delivered += rs.Counts.Delivered
		c.Undelivered += rs.Counts.Undelivered
		c.Stops += rs.Counts.Stops
		sum.Callbacks = append(sum.Callbacks, rs.Callbacks...)
	}
	return sum
}

// WaitReports waits until every report and reply made so far is
// acknowledged, and returns them; it fails the test (call it from the
// test's goroutine) if some are still pending after timeout.
func (s *Server) WaitReports(timeout time.Duration) sandbox.Reports {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rs := s.Reports()
		if rs.Counts.Pending == 0 {
			return rs
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("after %v, %d reports and replies of %d are still not acknowledged (%d attempts)",
				timeout, rs.Counts.Pending, rs.Counts.Reports+rs.Counts.Replies, rs.Counts.Attempts)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SendsArrived counts the send requests that reached the server, whether
// the sandbox served them or not (a [Gate] dropped them, say).
func (s *Server) SendsArrived() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sends
}

// Requests returns what the server answered, in the order handlers returned.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// RetryAfterViolations lists every send that came sooner after a 429 or 503
// of its batch than that answer's Retry-After allowed.
func RetryAfterViolations(reqs []Request) []string {
	byBatch := map[string][]Request{}
	for _, r := range reqs {
		if r.Path == api.SendPath && r.Batch != "" {
			byBatch[r.Batch] = append(byBatch[r.Batch], r)
		}
	}
	var bad []string
	for batch, rs := range byBatch {
		slices.SortFunc(rs, func(a, b Request) int { return a.Arrived.Compare(b.Arrived) })
		for i := 1; i < len(rs); i++ {
			prev := rs[i-1]
			if prev.Status != http.StatusTooManyRequests && prev.Status != http.StatusServiceUnavailable {
				continue
			}
			if gap := rs[i].Arrived.Sub(prev.Done); gap < prev.RetryAfter {
				bad = append(bad, fmt.Sprintf("batch of %s: resent %v after a %d with Retry-After %v",
					batch, gap, prev.Status, prev.RetryAfter))
			}
		}
	}
	return bad
}

// Phones returns n distinct valid mobile numbers in E.164.
func Phones(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+33612%06d", i)
	}
	return out
}

// Campaign describes a campaign file for WriteCampaign.
type Campaign struct {
	Name        string
	Recipients  int
	BatchSize   int
	Concurrency int
	Rate        string // "" : unlimited
	Body        string // "" : a fixed one-segment body
}

// WriteCampaign writes the campaign and its list into dir and returns the
// campaign file's path and the recipients.
func WriteCampaign(t testing.TB, dir string, c Campaign) (string, []string) {
	t.Helper()
	phones := Phones(c.Recipients)
	if err := os.WriteFile(filepath.Join(dir, "recipients.txt"), []byte(strings.Join(phones, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c.Name == "" {
		c.Name = "reliability"
	}
	if c.BatchSize == 0 {
		c.BatchSize = 20
	}
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.Body == "" {
		c.Body = "Spring sale starts today."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: %s\nsender: ACME\nrecipients:\n  - file: recipients.txt\n", c.Name)
	fmt.Fprintf(&b, "body: %q\nbatch_size: %d\nconcurrency: %d\n", c.Body, c.BatchSize, c.Concurrency)
	if c.Rate != "" {
		fmt.Fprintf(&b, "rate: %s\n", c.Rate)
	}
	path := filepath.Join(dir, c.Name+".yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, phones
}

// Tally holds a state against the outbox, recipient by recipient.
type Tally struct {
	Recipients int
	Sent       int // recorded sent
	Failed     int // recorded failed
	InDoubt    int // recorded in doubt
	Unrecorded int // not in the state: a rerun plans them (fine after a stop, not after a finished run)
	Delivered  int // distinct recipients in the outbox

	// Duplicates counts recipients the outbox holds more than once.
	Duplicates int
	// Lost counts recipients whose record contradicts the outbox: delivered
	// but unrecorded or failed (a rerun would message them again), or
	// recorded sent but never delivered (silently skipped).
	Lost int
	// InDoubtBatches counts attempts left without a known outcome.
	InDoubtBatches int
	Problems       []string // the first few contradictions, masked
}

// Unaccounted is what a finished run must keep at 0: recipients neither
// sent, failed nor in doubt in the state, plus those whose record is wrong.
func (t Tally) Unaccounted() int { return t.Unrecorded + t.Lost }

// Account compares the state (open or read-only) with the outbox for the
// campaign's recipients.
func Account(ctx context.Context, st *state.State, phones []string, msgs []sandbox.Message) (Tally, error) {
	delivered := map[string]int{}
	for _, m := range msgs {
		delivered[m.To]++
	}
	rec := map[string]state.Status{}
	if err := st.Recipients(ctx, func(r state.Recipient) error {
		rec[r.Phone] = r.Status
		return nil
	}); err != nil {
		return Tally{}, err
	}
	t := Tally{Recipients: len(phones), Delivered: len(delivered)}
	problem := func(format string, args ...any) {
		t.Lost++
		if len(t.Problems) < 5 {
			t.Problems = append(t.Problems, fmt.Sprintf(format, args...))
		}
	}
	for _, p := range phones {
		n := delivered[p]
		if n > 1 {
			t.Duplicates++
		}
		st, ok := rec[p]
		switch {
		case !ok:
			t.Unrecorded++
			if n > 0 {
				problem("%s delivered but not recorded", p)
			}
		case st == state.Sent:
			t.Sent++
			if n == 0 {
				problem("%s recorded sent but never delivered", p)
			}
		case st == state.Failed:
			t.Failed++
			if n > 0 {
				problem("%s delivered but recorded failed", p)
			}
		case st == state.InDoubt:
			t.InDoubt++
		}
	}
	err := st.Attempts(ctx, func(a state.Attempt) error {
		if a.State == state.AttemptInDoubt || a.State == state.AttemptIntent {
			t.InDoubtBatches++
		}
		return nil
	})
	return t, err
}
