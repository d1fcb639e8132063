package receive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/receive"
	"github.com/smsform/smsform/state"
)

const secret = "receive-test-secret-never-printed"

func ptr(s string) *rawjson.Pointer {
	p := rawjson.MustPointer(s)
	return &p
}

// The sandbox's mappings (docs/sandbox.md), and a list of reports.
var (
	sandboxReports = &mapping.Reports{ID: ptr("/message_id"), Number: ptr("/to"), Status: rawjson.MustPointer("/status"), Reason: ptr("/reason"), At: ptr("/at"),
		Delivered: []mapping.Value{mapping.StringValue("DELIVERED")}, Undelivered: []mapping.Value{mapping.StringValue("UNDELIVERED")}}
	sandboxReplies = &mapping.Replies{Number: rawjson.MustPointer("/from"), Text: rawjson.MustPointer("/text"), At: ptr("/at")}
	listReports    = &mapping.Reports{List: ptr("/results"), ID: ptr("/messageId"), Number: ptr("/to"), Status: rawjson.MustPointer("/status"),
		Delivered: []mapping.Value{mapping.StringValue("DELIVERED")}}
	twilioReports = &mapping.Reports{ID: ptr("/MessageSid"), Number: ptr("/To"), Status: rawjson.MustPointer("/MessageStatus"), Reason: ptr("/ErrorCode"),
		Delivered: []mapping.Value{mapping.StringValue("delivered")}, Undelivered: []mapping.Value{mapping.StringValue("undelivered"), mapping.StringValue("failed")}}
)

// observed is the state's Receiver as a Server sees it, with every call
// it gets kept, so that a test can tell what reached the state and that a
// refused post reached nothing. Without a Receiver (inner nil: a post that
// must never reach one) every Record fails.
type observed struct {
	inner *state.Receiver
	gate  chan struct{} // when set, Record waits for it to close before recording

	mu      sync.Mutex
	calls   int
	reports []state.Report
	replies []state.Reply
	results []state.Recorded
}

func (o *observed) Record(ctx context.Context, reports []state.Report, replies []state.Reply) (state.Recorded, error) {
	o.mu.Lock()
	o.calls++
	o.reports = append(o.reports, reports...)
	o.replies = append(o.replies, replies...)
	gate := o.gate
	o.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if o.inner == nil {
		return state.Recorded{}, errors.New("no state to record in")
	}
	rec, err := o.inner.Record(ctx, reports, replies)
	o.mu.Lock()
	o.results = append(o.results, rec)
	o.mu.Unlock()
	return rec, err
}

func (o *observed) seen() (int, []state.Report, []state.Reply) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls, append([]state.Report(nil), o.reports...), append([]state.Reply(nil), o.replies...)
}

// logBuffer is a log a server writes from many goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// running is a Server serving on loopback.
type running struct {
	url  string
	log  *logBuffer
	stop func() error // cancels Serve and returns what it returned
}

// serve runs a Server made of cfg on a free loopback port until the test
// ends (or stop).
func serve(t *testing.T, cfg receive.Config) *running {
	t.Helper()
	logs := &logBuffer{}
	cfg.Log = slog.New(slog.NewTextHandler(logs, nil))
	srv, err := receive.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(receive.ShutdownGrace + 5*time.Second):
			return errors.New("Serve did not return")
		}
	})
	t.Cleanup(func() { stop() })
	return &running{url: "http://" + ln.Addr().String(), log: logs, stop: stop}
}

// credential is how a test post authenticates itself.
type credential struct {
	kind, secret string
	signature    string // hmac: the header's value; "" signs the body with secret
	header       string // hmac: the header; "": X-Signature
}

// post sends body to the server's path and returns the status and answer.
func post(t *testing.T, url, path, contentType string, body []byte, c credential) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	switch c.kind {
	case campaign.AuthHMAC:
		sig := c.signature
		if sig == "" && c.secret != "" {
			sig = receive.Sign(c.secret, body)
		}
		header := c.header
		if header == "" {
			header = "X-Signature"
		}
		if sig != "" {
			req.Header.Set(header, sig)
		}
	case campaign.AuthBasic:
		if c.secret != "" {
			req.SetBasicAuth("provider", c.secret)
		}
	case campaign.AuthBearer:
		if c.secret != "" {
			req.Header.Set("Authorization", "Bearer "+c.secret)
		}
	case campaign.AuthQuery:
		if c.secret != "" {
			req.URL.RawQuery = "token=" + c.secret
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

func config(kind string, rec receive.Recorder) receive.Config {
	auth := receive.Auth{Kind: kind, Secret: secret}
	if kind == campaign.AuthHMAC {
		auth.Header = "X-Signature"
	}
	return receive.Config{Reports: sandboxReports, Replies: sandboxReplies, Auth: auth, Record: rec}
}

const oneReport = `{"message_id":"msg_A-1","to":"+33612340016","status":"DELIVERED","reason":"","at":"2026-03-01T12:00:01.000Z"}`

// refusal is a post and the answer it must get.
type refusal struct {
	name       string
	url, path  string
	ct         string
	body       []byte
	cred       credential
	want       int
	wantAnswer string
}

// TestRefused: a post without valid authentication, too large, or that the
// mapping cannot read is refused, with the status that says why, and
// nothing of it reaches the state; the log says why without a number or a
// secret.
func TestRefused(t *testing.T) {
	many := `{"results":[` + strings.Repeat(`{"messageId":"m","status":"DELIVERED"},`, mapping.MaxBodyElements) + `{"messageId":"m","status":"DELIVERED"}]}`
	huge := []byte(`{"message_id":"m","status":"DELIVERED","reason":"` + strings.Repeat("x", mapping.MaxBody) + `"}`)
	for _, kind := range campaign.AuthKinds {
		t.Run(kind, func(t *testing.T) {
			o := inTempState(t)
			cfg := config(kind, o)
			srv := serve(t, cfg)
			listed := config(kind, o)
			listed.Reports, listed.Replies = listReports, nil
			lsrv := serve(t, listed)
			good := credential{kind: kind, secret: secret}
			cases := []refusal{
				{"no credential", srv.url, "/reports", "application/json", []byte(oneReport), credential{kind: kind}, 401, "not authenticated"},
				{"a wrong secret", srv.url, "/reports", "application/json", []byte(oneReport), credential{kind: kind, secret: secret + "x"}, 401, "not authenticated"},
				{"a secret's prefix", srv.url, "/reports", "application/json", []byte(oneReport), credential{kind: kind, secret: secret[:len(secret)-1]}, 401, "not authenticated"},
				{"malformed JSON", srv.url, "/reports", "application/json", []byte(`{"message_id":`), good, 400, "not JSON"},
				{"a form without its type", srv.url, "/reports", "", []byte("message_id=m&status=DELIVERED"), good, 400, "not JSON"},
				{"no status", srv.url, "/reports", "application/json", []byte(`{"message_id":"m","to":"+33612340016"}`), good, 400, "no status at /status"},
				{"a reply without text", srv.url, "/replies", "application/json", []byte(`{"from":"+33612340016"}`), good, 400, "no text at /text"},
				{"a reply from no number", srv.url, "/replies", "application/json", []byte(`{"from":"ACME","text":"STOP"}`), good, 400, "not a phone number"},
				{"over a megabyte", srv.url, "/reports", "application/json", huge, good, 413, "larger than 1048576 bytes"},
				{"too many reports", lsrv.url, "/reports", "application/json", []byte(many), good, 413, "more than 10000"},
				{"replies the project does not map", lsrv.url, "/replies", "application/json", []byte(`{"from":"+33612340016","text":"STOP"}`), good, 404, "maps none"},
				{"another path", srv.url, "/report", "application/json", []byte(oneReport), good, 404, "not found"},
				{"a path of a number", srv.url, "/+33612340016", "application/json", []byte(oneReport), good, 404, "not found"},
			}
			if kind == campaign.AuthHMAC {
				other := receive.Sign(secret, []byte(oneReport+" "))
				cases = append(cases,
					refusal{"the signature of another body", srv.url, "/reports", "application/json", []byte(oneReport), credential{kind: kind, signature: other}, 401, "not authenticated"},
					refusal{"a signature in capitals", srv.url, "/reports", "application/json", []byte(oneReport),
						credential{kind: kind, signature: strings.ToUpper(receive.Sign(secret, []byte(oneReport)))}, 401, "not authenticated"})
			} else {
				cases = append(cases, refusal{"over a megabyte, unauthenticated: never read", srv.url, "/reports", "application/json", huge, credential{kind: kind}, 401, "not authenticated"})
			}
			for _, c := range cases {
				status, answer := post(t, c.url, c.path, c.ct, c.body, c.cred)
				if status != c.want || !strings.Contains(answer, c.wantAnswer) {
					t.Errorf("%s: %d %q, want %d %q", c.name, status, answer, c.want, c.wantAnswer)
				}
			}
			// A GET of a post's path is refused too.
			resp, err := http.Get(srv.url + "/reports")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
				t.Errorf("GET /reports: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
			}
			if calls, _, _ := o.seen(); calls != 0 {
				t.Errorf("%d refused posts reached the state", calls)
			}
			// The same report, authenticated, is new to the state: none of
			// the refused posts left anything of it there.
			if status, answer := post(t, srv.url, "/reports", "application/json", []byte(oneReport), good); status != 200 || !strings.Contains(answer, `"duplicates":0`) {
				t.Errorf("the report posted right after: %d %s", status, answer)
			}
			checkLog(t, srv.log.String()+lsrv.log.String())
		})
	}
}

// checkLog holds a server's log to what it may say: a line per request,
// never the secret, a signature, a number or a body.
func checkLog(t *testing.T, log string) {
	t.Helper()
	if !strings.Contains(log, "msg=request") || !strings.Contains(log, "status=") {
		t.Errorf("the log has no request lines:\n%s", log)
	}
	for _, never := range []string{secret, receive.Sign(secret, []byte(oneReport)), "33612340016", "msg_A-1", "token="} {
		if strings.Contains(log, never) {
			t.Errorf("the log holds %q:\n%s", never, log)
		}
	}
}

// TestBodies: JSON and form bodies, one report or a list, reach the state
// as the mapping reads them: numbers in E.164, statuses by their meaning.
func TestBodies(t *testing.T) {
	for _, tt := range []struct {
		name     string
		reports  *mapping.Reports
		ct, body string
		want     string
	}{
		{"one JSON report", sandboxReports, "application/json", oneReport, "msg_A-1 +33612340016 delivered DELIVERED"},
		{"a JSON list", listReports, "application/json; charset=utf-8",
			`{"results":[{"messageId":"m1","to":"33612340001","status":"DELIVERED"},{"messageId":"m2","to":"0033612340002","status":"QUEUED"},{"messageId":"m3","to":"06 12 34 00 03","status":"DELIVERED"}]}`,
			"m1 +33612340001 delivered DELIVERED|m2 +33612340002 pending QUEUED|m3  delivered DELIVERED"},
		{"a form", twilioReports, "application/x-www-form-urlencoded",
			"MessageSid=SM1&MessageStatus=undelivered&To=%2B14155550101&ErrorCode=30005&AccountSid=AC1", "SM1 +14155550101 undelivered undelivered 30005"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := inTempState(t)
			cfg := config(campaign.AuthBearer, o)
			cfg.Reports = tt.reports
			srv := serve(t, cfg)
			n := strings.Count(tt.want, "|") + 1
			// The state holds no message of them: each is recorded,
			// unmatched, then a duplicate when posted again.
			for _, dup := range []int{0, n} {
				status, answer := post(t, srv.url, "/reports", tt.ct, []byte(tt.body), credential{kind: campaign.AuthBearer, secret: secret})
				if want := fmt.Sprintf(`{"anomalies":0,"duplicates":%d,"reports":%d,"resolved":0,"unmatched":%d}`, dup, n, n-dup); status != 200 || strings.TrimSpace(answer) != want {
					t.Errorf("answered %d %s, want %s", status, answer, want)
				}
			}
			_, reports, _ := o.seen()
			var got []string
			for _, r := range reports[:n] {
				got = append(got, strings.TrimSpace(fmt.Sprintf("%s %s %s %s %s", r.ProviderID, r.Phone, r.Delivery, r.ProviderStatus, r.Reason)))
			}
			if strings.Join(got, "|") != tt.want {
				t.Errorf("recorded %q, want %q", strings.Join(got, "|"), tt.want)
			}
		})
	}
}

// TestRepliesReachTheState: a reply's number in E.164 and its text whole.
func TestRepliesReachTheState(t *testing.T) {
	o := inTempState(t)
	srv := serve(t, config(campaign.AuthQuery, o))
	post(t, srv.url, "/replies", "application/json", []byte(`{"from":"33612340016","text":" Stop ","at":"2026-03-01T12:00:01Z"}`), credential{kind: campaign.AuthQuery, secret: secret})
	_, _, replies := o.seen()
	if rec := o.results; len(rec) != 1 || len(rec[0].Replies) != 1 || rec[0].Replies[0].Kind != "stop" {
		t.Errorf("recorded %+v, want a stop", rec)
	}
	if len(replies) != 1 || replies[0].Phone != "+33612340016" || replies[0].Text != " Stop " || replies[0].At.Format(time.RFC3339) != "2026-03-01T12:00:01Z" {
		t.Errorf("replies: %+v", replies)
	}
}

// TestNationalNumbers: a provider that writes numbers without their
// country code (a US provider's "4155550123") is read in the mapping's
// default_region: its STOP opts out the number it came from and its report
// names its recipient. Without the region a reply of such a number is
// refused, saying what to set ("6045550123" would be read as a number of
// Malaysia: a provider whose numbers lack their country code needs it).
func TestNationalNumbers(t *testing.T) {
	o := inTempState(t)
	cfg := config(campaign.AuthBearer, o)
	cfg.Replies = &mapping.Replies{Number: rawjson.MustPointer("/from"), Text: rawjson.MustPointer("/text"), DefaultRegion: "US"}
	reports := *twilioReports
	reports.DefaultRegion = "US"
	cfg.Reports = &reports
	srv := serve(t, cfg)
	cred := credential{kind: campaign.AuthBearer, secret: secret}
	if status, answer := post(t, srv.url, "/replies", "application/json", []byte(`{"from":"(604) 555-0123","text":"STOP"}`), cred); status != 200 {
		t.Fatalf("reply: %d %s", status, answer)
	}
	if status, answer := post(t, srv.url, "/reports", "application/x-www-form-urlencoded", []byte("MessageSid=SM1&MessageStatus=delivered&To=4155550101"), cred); status != 200 {
		t.Fatalf("report: %d %s", status, answer)
	}
	_, reps, replies := o.seen()
	if len(replies) != 1 || replies[0].Phone != "+16045550123" || o.results[0].Replies[0].Kind != "stop" {
		t.Errorf("replies %+v, results %+v: want a stop of +16045550123", replies, o.results)
	}
	if len(reps) != 1 || reps[0].Phone != "+14155550101" {
		t.Errorf("reports %+v: want +14155550101", reps)
	}

	none := inTempState(t)
	plain := serve(t, config(campaign.AuthBearer, none))
	status, answer := post(t, plain.url, "/replies", "application/json", []byte(`{"from":"4155550123","text":"STOP"}`), cred)
	if status != 400 || !strings.Contains(answer, "default_region") {
		t.Errorf("without a region: %d %s, want 400 naming default_region", status, answer)
	}
	if calls, _, _ := none.seen(); calls != 0 {
		t.Errorf("a reply of no number reached the state")
	}
}

// TestNotRecorded: when the state cannot record a post (here: closed),
// the answer is 503 with Retry-After, so that the provider posts it again.
func TestNotRecorded(t *testing.T) {
	o := inTempState(t)
	srv := serve(t, config(campaign.AuthBearer, o))
	o.inner.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.url+"/reports", strings.NewReader(oneReport))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(answer), "post it again") {
		t.Errorf("answered %d (Retry-After %q) %s", resp.StatusCode, resp.Header.Get("Retry-After"), answer)
	}
	if !strings.Contains(srv.log.String(), "recording failed") {
		t.Errorf("the log does not say recording failed:\n%s", srv.log.String())
	}
}

// TestNoSecretNoServer: a server without a secret, or with one that can
// be guessed, is never made.
func TestNoSecretNoServer(t *testing.T) {
	for _, s := range []string{"", "short"} {
		cfg := config(campaign.AuthHMAC, &observed{})
		cfg.Auth.Secret = s
		if _, err := receive.New(cfg); err == nil || (s == "" && !errors.Is(err, receive.ErrNoSecret)) {
			t.Errorf("secret %q: %v", s, err)
		}
	}
	cfg := config(campaign.AuthHMAC, &observed{})
	cfg.Reports, cfg.Replies = nil, nil
	if _, err := receive.New(cfg); err == nil {
		t.Error("a server with nothing to receive")
	}
}

// TestHealthz: a load balancer's question, answered without credentials.
func TestHealthz(t *testing.T) {
	srv := serve(t, config(campaign.AuthHMAC, &observed{}))
	resp, err := http.Get(srv.url + receive.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz: %d", resp.StatusCode)
	}
}

// TestAnsweredOnlyOnceRecorded: no answer leaves before Record returns;
// and a server told to stop finishes the request in hand, then refuses
// new connections, and Serve returns nil.
func TestAnsweredOnlyOnceRecorded(t *testing.T) {
	o := inTempState(t)
	o.gate = make(chan struct{})
	srv := serve(t, config(campaign.AuthHMAC, o))
	answered := make(chan int, 1)
	go func() {
		status, _ := post(t, srv.url, "/reports", "application/json", []byte(oneReport), credential{kind: campaign.AuthHMAC, secret: secret})
		answered <- status
	}()
	waitFor(t, func() bool { calls, _, _ := o.seen(); return calls == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- srv.stop() }()
	select {
	case s := <-answered:
		t.Fatalf("answered %d before the report was recorded", s)
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) with a request in hand", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(o.gate)
	if status := <-answered; status != http.StatusOK {
		t.Errorf("answered %d once recorded", status)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := http.Get(srv.url + receive.HealthPath); err == nil {
		t.Error("a stopped server still answers")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
