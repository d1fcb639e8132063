package sandbox_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/sandbox"
)

const reportsSecret = "reports-secret-9c1e77d0"

// received is one post a receiver had.
type received struct {
	path  string
	body  []byte
	sigOK bool // the signature header is the HMAC-SHA256 of the body under reportsSecret
	ct    string
}

// receiver is a webhook endpoint on loopback that checks each post's
// signature itself (not with sandbox.Sign) and answers what answer says.
type receiver struct {
	hs *httptest.Server

	mu          sync.Mutex
	answer      func(n int, body []byte) int // the status of the n-th post (1-based); nil: 200
	block       chan struct{}                // when set, each post waits for it to close
	got         []received
	inFlight    int
	maxInFlight int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.hs = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.hs.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	mac := hmac.New(sha256.New, []byte(reportsSecret))
	mac.Write(body)
	sig, err := hex.DecodeString(r.Header.Get("X-Smsform-Signature"))
	ok := err == nil && hmac.Equal(sig, mac.Sum(nil)) &&
		r.Header.Get("X-Smsform-Signature") == strings.ToLower(r.Header.Get("X-Smsform-Signature"))
	rc.mu.Lock()
	rc.got = append(rc.got, received{path: r.URL.Path, body: body, sigOK: ok, ct: r.Header.Get("Content-Type")})
	n, answer, block := len(rc.got), rc.answer, rc.block
	rc.inFlight++
	rc.maxInFlight = max(rc.maxInFlight, rc.inFlight)
	rc.mu.Unlock()
	if block != nil {
		<-block
	}
	status := http.StatusOK
	if answer != nil {
		status = answer(n, body)
	}
	rc.mu.Lock()
	rc.inFlight--
	rc.mu.Unlock()
	if status == http.StatusFound {
		http.Redirect(w, r, "/elsewhere", status)
		return
	}
	w.WriteHeader(status)
}

func (rc *receiver) posts() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// waitFor polls cond until it holds, or fails the test after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 20 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settled waits until every report and reply made is acknowledged.
func settled(t *testing.T, e *env) sandbox.Reports {
	t.Helper()
	waitFor(t, "every report acknowledged", func() bool {
		c := e.srv.Reports().Counts
		return c.Pending == 0 && c.Reports+c.Replies > 0
	})
	return e.srv.Reports()
}

// sendAll sends the recipients in requests of size each, with one token.
func sendAll(t *testing.T, e *env, to []string, size int) {
	t.Helper()
	tok := e.token(t)
	for i := 0; i < len(to); i += size {
		req := api.SendRequest{From: "ACME", To: to[i:min(i+size, len(to))], Body: "Spring sale starts today."}
		if _, err := e.client.Send(context.Background(), tok, req); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
}

// strictReport decodes a report body that must hold exactly its five keys.
func strictReport(t *testing.T, body []byte) sandbox.Report {
	t.Helper()
	var keys map[string]any
	if err := json.Unmarshal(body, &keys); err != nil {
		t.Fatalf("report %s: %v", body, err)
	}
	if got := slices.Sorted(maps.Keys(keys)); !slices.Equal(got, []string{"at", "message_id", "reason", "status", "to"}) {
		t.Fatalf("report %s has keys %v", body, got)
	}
	var r sandbox.Report
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("report %s: %v", body, err)
	}
	return r
}

// seq is the count at the end of a message id: the order it was given in.
func seq(t *testing.T, id string) int {
	t.Helper()
	_, n, ok := strings.Cut(id, "-")
	v, err := strconv.Atoi(n)
	if !ok || err != nil {
		t.Fatalf("message id %q does not end in a count", id)
	}
	return v
}

func reportsConfig(rc *receiver) sandbox.Config {
	return sandbox.Config{
		ReportsTo: rc.hs.URL + "/reports", ReportsSecret: reportsSecret,
		ReportDelay: 20 * time.Millisecond, ReportBackoff: 10 * time.Millisecond,
	}
}

// TestReports: one signed report per message, in the documented shape,
// for exactly the messages in the outbox; the undelivered share with a
// reason; some posted twice, body for body, and some out of order; the
// sandbox's counts equal what the receiver counts; the log holds no number
// and no secret; the same seed makes the same reports.
func TestReports(t *testing.T) {
	first := reportRun(t)
	again := reportRun(t)
	if !slices.Equal(first.statuses, again.statuses) || !slices.Equal(first.dups, again.dups) {
		t.Error("the same seed made other reports")
	}
}

// reportTally is what a receiver saw of the reports of one run.
type reportTally struct {
	statuses               []string // by the count in the message id
	dups                   []int    // counts of the message ids posted twice, sorted
	delivered, undelivered map[string]bool
	messages               int // distinct message ids reported
	inversions             int // reports that came after one of a later message
}

// reportRun sends 150 messages with reports undelivered, duplicated and
// reordered, and checks what the receiver got against the sandbox.
func reportRun(t *testing.T) reportTally {
	t.Helper()
	rc := newReceiver(t)
	cfg := reportsConfig(rc)
	cfg.UndeliveredRate, cfg.DuplicateRate, cfg.ReorderRate, cfg.Seed = 0.3, 0.2, 0.3, 5
	e := start(t, cfg)
	to := numbers(t, 0, 150)
	sendAll(t, e, to, 50)
	rs := settled(t, e)
	outbox := map[string]string{} // message id → number
	for _, m := range e.srv.Messages() {
		outbox[m.MessageID] = m.To
	}
	tl := tallyReports(t, rc.posts(), outbox, len(to))
	if tl.messages != len(to) || len(outbox) != len(to) {
		t.Errorf("%d messages reported, %d in the outbox, %d sent", tl.messages, len(outbox), len(to))
	}
	if len(tl.undelivered) < 25 || len(tl.undelivered) > 70 {
		t.Errorf("%d of %d undelivered, want about 45", len(tl.undelivered), len(to))
	}
	if len(tl.dups) < 10 || tl.inversions == 0 {
		t.Errorf("%d duplicates and %d reports out of order: want some of each", len(tl.dups), tl.inversions)
	}
	c, posts := rs.Counts, len(rc.posts())
	if c.Delivered != len(tl.delivered) || c.Undelivered != len(tl.undelivered) || c.Reports != posts ||
		c.Duplicates != len(tl.dups) || c.Acknowledged != c.Reports || c.Attempts != c.Reports || c.Replies != 0 || c.Stops != 0 {
		t.Errorf("counts %+v; the receiver had %d delivered, %d undelivered, %d posts, %d duplicates",
			c, len(tl.delivered), len(tl.undelivered), posts, len(tl.dups))
	}
	if len(rs.Callbacks) != c.Reports {
		t.Errorf("%d callbacks listed for %d reports", len(rs.Callbacks), c.Reports)
	}
	for _, cb := range rs.Callbacks {
		if cb.Kind != "report" || cb.Report == nil || !cb.Acknowledged || cb.Attempts != 1 || cb.LastStatus != 200 || cb.AcknowledgedAt == nil {
			t.Fatalf("callback %+v", cb)
		}
	}
	log := e.log.String()
	for _, n := range to {
		if strings.Contains(log, n[1:]) {
			t.Fatalf("the log holds the number %s", n)
		}
	}
	if strings.Contains(log, reportsSecret) || !strings.Contains(log, "msg=callback") {
		t.Errorf("the log holds the secret, or no line per post:\n%s", log)
	}
	return tl
}

// tallyReports checks each post (signed, the five keys, the outbox's
// number for its id, status and reason agreeing, a duplicate equal to the
// first post) and counts them.
func tallyReports(t *testing.T, posts []received, outbox map[string]string, n int) reportTally {
	t.Helper()
	tl := reportTally{statuses: make([]string, n+1), delivered: map[string]bool{}, undelivered: map[string]bool{}}
	bodies := map[string][]byte{} // message id → the body first posted
	lastSeq := 0
	for _, p := range posts {
		if !p.sigOK || p.ct != "application/json" || p.path != "/reports" {
			t.Errorf("post to %s, Content-Type %q, signature ok %v", p.path, p.ct, p.sigOK)
		}
		r := strictReport(t, p.body)
		if outbox[r.MessageID] != r.To {
			t.Fatalf("report %s: the outbox has %q for that id", p.body, outbox[r.MessageID])
		}
		if r.At != "2026-03-01T12:00:00.020Z" {
			t.Errorf("report at %q, want the send's time plus the delay, RFC 3339 UTC", r.At)
		}
		switch {
		case r.Status == sandbox.ReportDelivered && r.Reason == "":
			tl.delivered[r.MessageID] = true
		case r.Status == sandbox.ReportUndelivered && r.Reason != "":
			tl.undelivered[r.MessageID] = true
		default:
			t.Errorf("report %s: status and reason disagree", p.body)
		}
		k := seq(t, r.MessageID)
		if first, ok := bodies[r.MessageID]; ok {
			if string(first) != string(p.body) {
				t.Errorf("duplicate %s differs from %s", p.body, first)
			}
			tl.dups = append(tl.dups, k)
		}
		bodies[r.MessageID] = p.body
		if k < lastSeq {
			tl.inversions++
		}
		lastSeq = k
		tl.statuses[k] = r.Status
	}
	tl.messages = len(bodies)
	slices.Sort(tl.dups)
	return tl
}

// TestReportRetried: a post answered other than 2xx (an error, a redirect)
// is posted again after the backoff until acknowledged; the listing says
// how many attempts each took.
func TestReportRetried(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusFound, http.StatusUnauthorized} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			rc := newReceiver(t)
			seen := map[string]int{}
			rc.answer = func(_ int, body []byte) int {
				var r sandbox.Report
				json.Unmarshal(body, &r)
				rc.mu.Lock()
				defer rc.mu.Unlock()
				seen[r.MessageID]++
				if seen[r.MessageID] <= 2 {
					return status
				}
				return http.StatusNoContent
			}
			cfg := reportsConfig(rc)
			cfg.ReportBackoff = 30 * time.Millisecond
			e := start(t, cfg)
			sendAll(t, e, numbers(t, 0, 5), 5)
			rs := settled(t, e)
			for _, cb := range rs.Callbacks {
				if cb.Attempts != 3 || !cb.Acknowledged || cb.LastStatus != http.StatusNoContent {
					t.Errorf("callback %+v: want acknowledged at the third attempt", cb)
				}
			}
			if c := rs.Counts; c.Attempts != 15 || c.Delivered != 5 || len(rc.posts()) != 15 {
				t.Errorf("counts %+v, %d posts: want 15 attempts for 5 reports", c, len(rc.posts()))
			}
			if !strings.Contains(e.log.String(), "status="+strconv.Itoa(status)) {
				t.Errorf("the log does not show the %d:\n%s", status, e.log.String())
			}
		})
	}
}

// TestReportRetriedWhenRefused: a receiver that is down (connection
// refused) gets the reports once it is up, on the same address.
func TestReportRetriedWhenRefused(t *testing.T) {
	rc := newReceiver(t)
	url := rc.hs.URL
	rc.hs.Close()
	cfg := reportsConfig(rc)
	e := start(t, cfg)
	sendAll(t, e, numbers(t, 0, 3), 3)
	waitFor(t, "attempts against the closed receiver", func() bool { return e.srv.Reports().Counts.Attempts >= 6 })
	if c := e.srv.Reports().Counts; c.Acknowledged != 0 || c.Pending != 3 {
		t.Fatalf("counts %+v with the receiver down", c)
	}
	up := httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	ln, err := listenAgain(strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Skipf("cannot listen again on %s: %v", url, err)
	}
	up.Listener.Close()
	up.Listener = ln
	up.Start()
	t.Cleanup(up.Close)
	rs := settled(t, e)
	if rs.Counts.Delivered != 3 || len(rc.posts()) != 3 {
		t.Errorf("counts %+v, %d posts received", rs.Counts, len(rc.posts()))
	}
	if !strings.Contains(e.log.String(), "connection refused") {
		t.Errorf("the log does not say why:\n%s", e.log.String())
	}
}

// TestReportsOfFaults: a message acted on whose answer was lost (the
// connection dropped, or a 500) is reported too, with its number, so a
// receiver can match a recipient it has no id for.
func TestReportsOfFaults(t *testing.T) {
	for name, cfg := range map[string]sandbox.Config{
		"ambiguous": {AmbiguousRate: 1},
		"error":     {ErrorRate: 1},
	} {
		t.Run(name, func(t *testing.T) {
			rc := newReceiver(t)
			rcfg := reportsConfig(rc)
			cfg.ReportsTo, cfg.ReportsSecret, cfg.ReportDelay = rcfg.ReportsTo, rcfg.ReportsSecret, rcfg.ReportDelay
			e := start(t, cfg)
			to := numbers(t, 0, 4)
			if _, err := e.client.Send(context.Background(), e.token(t), api.SendRequest{From: "ACME", To: to, Body: "hi"}); err == nil {
				t.Fatal("the send succeeded")
			}
			settled(t, e)
			var got []string
			for _, p := range rc.posts() {
				got = append(got, strictReport(t, p.body).To)
			}
			slices.Sort(got)
			if !slices.Equal(got, to) {
				t.Errorf("reports for %v, sent %v", got, to)
			}
		})
	}
}

// TestReplies: a share of the recipients the message reached reply STOP,
// one signed reply per request, in the documented shape; the undelivered
// never reply.
func TestReplies(t *testing.T) {
	rc := newReceiver(t)
	cfg := reportsConfig(rc)
	cfg.RepliesTo = rc.hs.URL + "/replies"
	cfg.StopRate, cfg.UndeliveredRate, cfg.Seed = 0.3, 0.2, 11
	e := start(t, cfg)
	to := numbers(t, 0, 100)
	sendAll(t, e, to, 100)
	rs := settled(t, e)
	status := map[string]string{} // number → report status
	var replies []map[string]string
	for _, p := range rc.posts() {
		if !p.sigOK {
			t.Errorf("%s: bad signature", p.path)
		}
		if p.path == "/reports" {
			r := strictReport(t, p.body)
			status[r.To] = r.Status
			continue
		}
		var reply map[string]string
		if err := json.Unmarshal(p.body, &reply); err != nil || len(reply) != 3 || reply["text"] != "STOP" || reply["at"] != "2026-03-01T12:00:00.020Z" {
			t.Fatalf("reply %s: %v", p.body, err)
		}
		replies = append(replies, reply)
	}
	for _, r := range replies {
		if status[r["from"]] != sandbox.ReportDelivered {
			t.Errorf("reply from %s, whose report is %q", r["from"], status[r["from"]])
		}
	}
	if c := rs.Counts; len(replies) < 10 || len(replies) > 40 || c.Replies != len(replies) || c.Stops != len(replies) || c.Reports != 100 {
		t.Errorf("%d replies, counts %+v: want about 24 of 100", len(replies), c)
	}
}

// TestReportConcurrency: posts go out several at once, never more than
// the bound.
func TestReportConcurrency(t *testing.T) {
	rc := newReceiver(t)
	rc.block = make(chan struct{})
	cfg := reportsConfig(rc)
	cfg.ReportDelay = 0
	e := start(t, cfg)
	sendAll(t, e, numbers(t, 0, 30), 30)
	waitFor(t, "8 posts in flight", func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return rc.inFlight == sandbox.DefaultReportConcurrency
	})
	time.Sleep(100 * time.Millisecond) // room for a ninth, which must not come
	close(rc.block)
	rs := settled(t, e)
	if rc.maxInFlight != sandbox.DefaultReportConcurrency || rs.Counts.Delivered != 30 {
		t.Errorf("at most %d in flight (want %d), counts %+v", rc.maxInFlight, sandbox.DefaultReportConcurrency, rs.Counts)
	}
}

// TestCloseStopsReports: after Close nothing more is posted, and what was
// not acknowledged stays pending.
func TestCloseStopsReports(t *testing.T) {
	rc := newReceiver(t)
	rc.answer = func(int, []byte) int { return http.StatusServiceUnavailable }
	e := start(t, reportsConfig(rc))
	sendAll(t, e, numbers(t, 0, 2), 2)
	waitFor(t, "a few attempts", func() bool { return len(rc.posts()) >= 4 })
	e.srv.Close()
	n := len(rc.posts())
	time.Sleep(200 * time.Millisecond) // ten backoffs and more
	if got := len(rc.posts()); got != n {
		t.Errorf("%d posts after Close, %d before", got, n)
	}
	if c := e.srv.Reports().Counts; c.Pending != 2 || c.Acknowledged != 0 {
		t.Errorf("counts %+v after Close", c)
	}
	e.srv.Close() // twice is fine
}

// TestCallbackURLs: reports and replies go only to an http URL on
// loopback, without credentials, and need a secret; an error never repeats
// a URL's credentials or query.
func TestCallbackURLs(t *testing.T) {
	tests := []struct {
		name string
		cfg  sandbox.Config
		err  error  // nil: any error
		says string // "": accepted
	}{
		{name: "loopback", cfg: sandbox.Config{ReportsTo: "http://127.0.0.1:8089/reports", RepliesTo: "http://localhost:8089/replies"}},
		{name: "ipv6 loopback", cfg: sandbox.Config{ReportsTo: "http://[::1]:8089/reports"}},
		{name: "https loopback", cfg: sandbox.Config{ReportsTo: "https://127.0.0.1/reports"}},
		{name: "lan", cfg: sandbox.Config{ReportsTo: "http://192.0.2.1:8089/reports?key=q-secret"}, err: sandbox.ErrNotLoopback, says: "reports-to http://192.0.2.1:8089/reports"},
		{name: "host name", cfg: sandbox.Config{RepliesTo: "https://hooks.example.com/replies"}, err: sandbox.ErrNotLoopback, says: "replies-to"},
		{name: "localhost.", cfg: sandbox.Config{ReportsTo: "http://localhost.:8089/"}, err: sandbox.ErrNotLoopback, says: "only to this machine"},
		{name: "every interface", cfg: sandbox.Config{ReportsTo: "http://0.0.0.0:8089/"}, err: sandbox.ErrNotLoopback, says: "not a loopback address"},
		{name: "credentials", cfg: sandbox.Config{ReportsTo: "http://user:pw-secret@127.0.0.1:8089/"}, says: "credentials"},
		{name: "no scheme", cfg: sandbox.Config{ReportsTo: "127.0.0.1:8089/reports"}, says: "not an absolute http URL"},
		{name: "ftp", cfg: sandbox.Config{ReportsTo: "ftp://127.0.0.1/reports"}, says: "not an absolute http URL"},
		{name: "no secret", cfg: sandbox.Config{ReportsTo: "http://127.0.0.1:8089/reports"}, says: "SMSFORM_SANDBOX_REPORTS_SECRET"},
		{name: "stop rate alone", cfg: sandbox.Config{StopRate: 0.1}, says: "--stop-rate needs --replies-to"},
		{name: "stop rate with reports only", cfg: sandbox.Config{StopRate: 0.1, ReportsTo: "http://127.0.0.1:1/"}, says: "--stop-rate needs --replies-to"},
		{name: "undelivered rate alone", cfg: sandbox.Config{UndeliveredRate: 0.1, RepliesTo: "http://127.0.0.1:1/"}, says: "--undelivered-rate needs --reports-to"},
		{name: "rate above 1", cfg: sandbox.Config{ReportsTo: "http://127.0.0.1:1/", DuplicateRate: 1.5}, says: "duplicate rate 1.5"},
		{name: "negative delay", cfg: sandbox.Config{ReportsTo: "http://127.0.0.1:1/", ReportDelay: -time.Second}, says: "report delay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.ClientID, cfg.ClientSecret = clientID, clientSecret
			if tt.name != "no secret" {
				cfg.ReportsSecret = reportsSecret
			}
			srv, err := sandbox.New(cfg)
			if tt.says == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				srv.Close()
				return
			}
			if err == nil {
				srv.Close()
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.says) || (tt.err != nil && !errors.Is(err, tt.err)) {
				t.Errorf("error %q, want %q (%v)", err, tt.says, tt.err)
			}
			if strings.Contains(err.Error(), "pw-secret") || strings.Contains(err.Error(), "q-secret") {
				t.Errorf("error %q repeats a secret of the URL", err)
			}
			if cfgErr := cfg.Check(); tt.name != "rate above 1" && tt.name != "negative delay" && cfgErr == nil {
				t.Errorf("Check accepts what New refuses")
			}
		})
	}
}

// TestMessageIDsUnique: ids never repeat, within a server or across two
// with the same seed (a restart), and the outbox records the ones the
// answer gave.
func TestMessageIDsUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 2 {
		e := start(t, sandbox.Config{Seed: 1})
		tok := e.token(t)
		for i := range 3 {
			to := numbers(t, 20*i, 20)
			r := e.post(t, api.SendPath, "Bearer "+tok, "application/json", sendBody(t, "ACME", to, "hi"))
			var resp api.SandboxSendResponse
			if err := json.Unmarshal(r.body, &resp); err != nil || len(resp.Messages) != len(to) {
				t.Fatalf("answer %s: %v", r.body, err)
			}
			for _, m := range resp.Messages {
				if seen[m.MessageID] {
					t.Fatalf("message id %s given twice", m.MessageID)
				}
				seen[m.MessageID] = true
			}
		}
		for _, m := range outboxLines(t, e.outbox.String()) {
			if !seen[m.MessageID] {
				t.Errorf("outbox line for %s has id %q, which no answer gave", m.To, m.MessageID)
			}
		}
	}
	if len(seen) != 120 {
		t.Errorf("%d ids for 120 messages", len(seen))
	}
}

// TestReportsEndpoint: the listing asks for the client credentials, is a
// JSON document of counts and callbacks (an empty list without reports),
// and with Forget keeps only the counts.
func TestReportsEndpoint(t *testing.T) {
	plain := start(t, sandbox.Config{})
	if r := plain.do(t, http.MethodGet, sandbox.ReportsPath, "", "", nil); r.status != 401 || r.err.Code != api.CodeInvalidClient {
		t.Errorf("without credentials: %d %s", r.status, r.body)
	}
	if r := plain.do(t, http.MethodGet, sandbox.ReportsPath, basicB64, "", nil); r.status != 200 || !strings.Contains(string(r.body), `"callbacks":[]`) {
		t.Errorf("no reports: %d %s", r.status, r.body)
	}
	if r := plain.post(t, sandbox.ReportsPath, basicB64, "application/json", "{}"); r.status != 405 {
		t.Errorf("POST: %d", r.status)
	}

	rc := newReceiver(t)
	e := start(t, reportsConfig(rc))
	sendAll(t, e, numbers(t, 0, 3), 3)
	settled(t, e)
	r := e.do(t, http.MethodGet, sandbox.ReportsPath, basicLiteral, "", nil)
	var listed sandbox.Reports
	if err := json.Unmarshal(r.body, &listed); err != nil || r.status != 200 {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	if listed.Counts.Delivered != 3 || len(listed.Callbacks) != 3 || listed.Callbacks[0].Report.To != numbers(t, 0, 1)[0] || !listed.Callbacks[2].Acknowledged {
		t.Errorf("listed %s", r.body)
	}

	cfg := reportsConfig(newReceiver(t))
	cfg.Forget = true
	f := start(t, cfg)
	sendAll(t, f, numbers(t, 0, 3), 3)
	if rs := settled(t, f); len(rs.Callbacks) != 0 || rs.Counts.Delivered != 3 {
		t.Errorf("with Forget: %+v", rs)
	}
}

// listenAgain listens on addr, which a server just closed, trying for a
// second while the old socket lingers.
func listenAgain(addr string) (net.Listener, error) {
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

// TestDocumentedMappingsReadIDs: the provider.results mappings that
// docs/sandbox.md gives, read by the client, name every recipient of the
// default and the results answers with the message id the outbox (and so
// each report) holds.
func TestDocumentedMappingsReadIDs(t *testing.T) {
	ptr := rawjson.MustPointer
	sandboxID, resultsID, status := ptr("/message_id"), ptr("/messageId"), ptr("/status/groupName")
	for shape, m := range map[string]mapping.List{
		"sandbox": {List: ptr("/messages"), Number: ptr("/to"), ID: &sandboxID, Outcome: mapping.Sent},
		"results": {List: ptr("/messages"), Number: ptr("/to"), ID: &resultsID, Status: &status,
			Sent: []mapping.Value{mapping.StringValue("PENDING")}, Retry: []mapping.Value{mapping.StringValue("THROTTLED")},
			Failed: []mapping.Value{mapping.StringValue("REJECTED")}},
	} {
		t.Run(shape, func(t *testing.T) {
			cfg := sandbox.Config{SuccessBody: shape}
			if shape == "results" {
				cfg.RejectRate, cfg.ThrottleRate = 0.2, 0.2
			}
			e := start(t, cfg)
			c := *e.client
			c.Results = &mapping.Results{Lists: []mapping.List{m}}
			to := numbers(t, 0, 50)
			resp, err := c.Send(context.Background(), e.token(t), api.SendRequest{From: "ACME", To: to, Body: "hi"})
			if err != nil || resp.Answer.Problem != "" || len(resp.Answer.Elements) != len(to) {
				t.Fatalf("send: %+v, %v", resp, err)
			}
			outbox := map[string]string{}
			for _, msg := range e.srv.Messages() {
				outbox[msg.To] = msg.MessageID
			}
			sent := 0
			for i, el := range resp.Answer.Elements {
				switch id, ok := outbox[to[i]]; {
				case el.ID == "":
					t.Errorf("element %d (%s) has no id", i, el.Number)
				case ok != (el.Outcome == mapping.Sent) || ok && el.ID != id:
					t.Errorf("element %d: %s, id %s; the outbox has it %v, id %q", i, el.Outcome, el.ID, ok, id)
				case ok:
					sent++
				}
			}
			if sent != len(outbox) || sent == 0 || (shape == "results") == (sent == len(to)) {
				t.Errorf("%d read as sent, %d in the outbox, of %d", sent, len(outbox), len(to))
			}
		})
	}
}
