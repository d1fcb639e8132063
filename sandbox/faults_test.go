package sandbox_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// Each fault alone, at rate 1: what the client sees and what the outbox holds.
func TestFaults(t *testing.T) {
	tests := []struct {
		name       string
		cfg        sandbox.Config
		status     int
		code       string
		outcome    state.Status
		retryAfter time.Duration
		recorded   bool
		dropped    bool
	}{
		{name: "fail", cfg: sandbox.Config{FailRate: 1}, status: 503, code: api.CodeUnavailable, outcome: state.Unsent, retryAfter: time.Second},
		{name: "ambiguous", cfg: sandbox.Config{AmbiguousRate: 1}, outcome: state.InDoubt, recorded: true, dropped: true},
		{name: "error", cfg: sandbox.Config{ErrorRate: 1}, status: 500, code: api.CodeInternal, outcome: state.InDoubt, recorded: true},
		{name: "rate limit 0/s is off", cfg: sandbox.Config{RateLimit: 0}, recorded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, tt.cfg)
			tok := e.token(t)
			to := numbers(t, 0, 3)
			for i := 0; i < 3; i++ {
				_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: to, Body: "hi"})
				if tt.status == 0 && !tt.dropped {
					if err != nil {
						t.Fatal(err)
					}
					continue
				}
				ae := asAPIError(t, err)
				if ae.Status != tt.status || ae.Code != tt.code || apply.StatusOf(ae) != tt.outcome || ae.RetryAfter != tt.retryAfter {
					t.Errorf("got %v, want status %d code %q %v retry after %v", err, tt.status, tt.code, tt.outcome, tt.retryAfter)
				}
			}
			wantRecords := 0
			if tt.recorded {
				wantRecords = 9
			}
			if got := len(e.srv.Messages()); got != wantRecords {
				t.Errorf("Messages() has %d records, want %d", got, wantRecords)
			}
			if got := len(outboxLines(t, e.outbox.String())); got != wantRecords {
				t.Errorf("outbox has %d lines, want %d", got, wantRecords)
			}
			st := e.srv.Stats()
			if tt.dropped && st.Dropped != 3 {
				t.Errorf("stats %+v, want 3 dropped", st)
			}
			if tt.status != 0 && st.Status[tt.status] != 3 {
				t.Errorf("stats %+v, want 3 × %d", st, tt.status)
			}
		})
	}
}

// A mix of faults drawn from a seed: the same seed gives the same run, and
// the outbox holds exactly the requests the server acted on.
func TestSeededFaults(t *testing.T) {
	cfg := sandbox.Config{FailRate: 0.3, AmbiguousRate: 0.1, ErrorRate: 0.1, Seed: 42}
	run := func() (outcomes []string, e *env, acted map[string]bool) {
		e = start(t, cfg)
		tok := e.token(t)
		acted = map[string]bool{}
		for i := 0; i < 60; i++ {
			to := numbers(t, 2*i, 2)
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: to, Body: "hi"})
			outcome := "ok"
			if err != nil {
				ae := asAPIError(t, err)
				outcome = fmt.Sprintf("%d/%v", ae.Status, apply.StatusOf(ae))
			}
			outcomes = append(outcomes, outcome)
			if outcome != "503/unsent" {
				for _, n := range to {
					acted[n] = true
				}
			}
		}
		return outcomes, e, acted
	}
	first, e, acted := run()
	second, _, _ := run()
	if !reflect.DeepEqual(first, second) {
		t.Errorf("same seed, different runs:\n%v\n%v", first, second)
	}
	counts := map[string]int{}
	for _, o := range first {
		counts[o]++
	}
	// Each kind must occur for the test to mean anything.
	for _, o := range []string{"ok", "503/unsent", "500/in_doubt", "0/in_doubt"} {
		if counts[o] == 0 {
			t.Errorf("no %q among %v", o, counts)
		}
	}
	msgs := e.srv.Messages()
	got := map[string]bool{}
	for _, m := range msgs {
		if got[m.To] {
			t.Errorf("%s recorded twice", m.To)
		}
		got[m.To] = true
	}
	if !reflect.DeepEqual(got, acted) {
		t.Errorf("outbox holds %d recipients, want the %d of requests not refused", len(got), len(acted))
	}
	st := e.srv.Stats()
	if st.Status[503] != counts["503/unsent"] || st.Status[500] != counts["500/in_doubt"] || st.Dropped != counts["0/in_doubt"] || st.Status[200] != counts["ok"]+1 {
		t.Errorf("stats %+v disagree with outcomes %v", st, counts)
	}
	t.Logf("outcomes of 60 requests with seed 42: %v", counts)
}

func TestRateLimit(t *testing.T) {
	e := start(t, sandbox.Config{RateLimit: 3})
	tok := e.token(t)
	send := func() error {
		_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 1), Body: "hi"})
		return err
	}
	for second := 0; second < 3; second++ {
		for i := 0; i < 3; i++ {
			if err := send(); err != nil {
				t.Fatalf("second %d, request %d: %v", second, i, err)
			}
		}
		for i := 0; i < 2; i++ {
			ae := asAPIError(t, send())
			if ae.Status != 429 || ae.Code != api.CodeRateLimited || apply.StatusOf(ae) != state.Unsent || ae.RetryAfter != time.Second {
				t.Errorf("second %d: got %v, want 429 with Retry-After 1s", second, ae)
			}
		}
		e.clock.Add(time.Second)
	}
	if n := len(e.srv.Messages()); n != 9 {
		t.Errorf("outbox has %d records, want 9", n)
	}
}

func TestLatency(t *testing.T) {
	const latency = 200 * time.Millisecond
	e := start(t, sandbox.Config{Latency: latency, Now: time.Now})
	begin := time.Now()
	tok := e.token(t)
	if d := time.Since(begin); d < latency {
		t.Errorf("token came after %v, want at least %v", d, latency)
	}
	req := api.SendRequest{From: "ACME", To: numbers(t, 0, 2), Body: "hi"}
	begin = time.Now()
	if _, err := e.client.Send(context.Background(), tok, req); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d < latency {
		t.Errorf("response came after %v, want at least %v", d, latency)
	}

	// Latency above the client's timeout: the API acted, the client is in doubt.
	impatient := *e.client
	impatient.Timeout = latency / 4
	_, err := impatient.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 2, 2), Body: "hi"})
	if ae := asAPIError(t, err); apply.StatusOf(ae) != state.InDoubt {
		t.Errorf("got %v, want in doubt", err)
	}
	if n := len(e.srv.Messages()); n != 4 {
		t.Errorf("outbox has %d records, want 4", n)
	}
}

// The client's classification of every outcome against the real server.
func TestClientOutcomes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	tests := []struct {
		name    string
		cfg     sandbox.Config
		prepare func(e *env, tok string) (string, api.SendRequest) // token and request to send
		status  int
		code    string
		outcome state.Status
		retry   time.Duration
	}{
		{name: "connection refused", prepare: func(e *env, tok string) (string, api.SendRequest) {
			e.client.BaseURL = refused
			return tok, okReq()
		}, outcome: state.Unsent},
		{name: "expired token", cfg: sandbox.Config{TokenTTL: time.Minute}, prepare: func(e *env, tok string) (string, api.SendRequest) {
			e.clock.Add(time.Hour)
			return tok, okReq()
		}, status: 401, code: api.CodeTokenExpired, outcome: state.Unsent},
		{name: "unknown token", prepare: func(e *env, tok string) (string, api.SendRequest) { return "sbx_nope", okReq() },
			status: 401, code: api.CodeTokenInvalid, outcome: state.Unsent},
		{name: "invalid number", prepare: func(e *env, tok string) (string, api.SendRequest) {
			r := okReq()
			r.To = append(r.To, "+12")
			return tok, r
		}, status: 400, code: api.CodeInvalidField, outcome: state.Failed},
		{name: "too many recipients", cfg: sandbox.Config{MaxRecipients: 1}, prepare: func(e *env, tok string) (string, api.SendRequest) { return tok, okReq() },
			status: 413, code: api.CodeTooManyRecipients, outcome: state.Unsent},
		{name: "repeat within the dedupe window", cfg: sandbox.Config{DedupeWindow: time.Minute}, prepare: func(e *env, tok string) (string, api.SendRequest) {
			e.client.Send(context.Background(), tok, okReq())
			return tok, okReq()
		}, status: 409, code: api.CodeDuplicateRequest, outcome: state.InDoubt},
		{name: "rate limited", cfg: sandbox.Config{RateLimit: 1}, prepare: func(e *env, tok string) (string, api.SendRequest) {
			e.client.Send(context.Background(), tok, okReq())
			return tok, okReq()
		}, status: 429, code: api.CodeRateLimited, outcome: state.Unsent, retry: time.Second},
		{name: "unavailable", cfg: sandbox.Config{FailRate: 1}, prepare: func(e *env, tok string) (string, api.SendRequest) { return tok, okReq() },
			status: 503, code: api.CodeUnavailable, outcome: state.Unsent, retry: time.Second},
		{name: "server error", cfg: sandbox.Config{ErrorRate: 1}, prepare: func(e *env, tok string) (string, api.SendRequest) { return tok, okReq() },
			status: 500, code: api.CodeInternal, outcome: state.InDoubt},
		{name: "dropped", cfg: sandbox.Config{AmbiguousRate: 1}, prepare: func(e *env, tok string) (string, api.SendRequest) { return tok, okReq() },
			outcome: state.InDoubt},
		{name: "slower than the client's timeout", cfg: sandbox.Config{Latency: time.Second}, prepare: func(e *env, tok string) (string, api.SendRequest) {
			e.client.Timeout = 100 * time.Millisecond
			return tok, okReq()
		}, outcome: state.InDoubt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, tt.cfg)
			tok, req := tt.prepare(e, e.token(t))
			_, err := e.client.Send(context.Background(), tok, req)
			ae := asAPIError(t, err)
			if ae.Status != tt.status || ae.Code != tt.code || apply.StatusOf(ae) != tt.outcome || ae.RetryAfter != tt.retry {
				t.Errorf("got status %d code %q %v retry %v (%v), want %d %q %v %v", ae.Status, ae.Code, apply.StatusOf(ae), ae.RetryAfter, err, tt.status, tt.code, tt.outcome, tt.retry)
			}
			for _, n := range req.To {
				if len(n) > 6 && strings.Contains(err.Error(), n) {
					t.Errorf("error %q shows a recipient", err)
				}
			}
			if strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), clientSecret) {
				t.Errorf("error %q shows a credential", err)
			}
		})
	}
}

func okReq() api.SendRequest {
	return api.SendRequest{From: "ACME", To: []string{"+33612340001", "+33612340002"}, Body: "hi"}
}

// The log names requests but never a secret, a whole token or a number.
func TestLogHasNoSecrets(t *testing.T) {
	e := start(t, sandbox.Config{FailRate: 0.2, AmbiguousRate: 0.2, ErrorRate: 0.2, RateLimit: 5, Seed: 7})
	var tokens []string
	for i := 0; i < 3; i++ {
		tokens = append(tokens, e.token(t))
	}
	lit := *e.client
	lit.Basic = api.BasicLiteral
	if _, err := lit.IssueToken(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	wrong := *e.client
	wrong.ClientSecret = clientSecret + "-wrong"
	wrong.IssueToken(context.Background(), 1)
	var recipients []string
	for i := 0; i < 30; i++ {
		to := numbers(t, 3*i, 3)
		if i%5 == 0 {
			to = append(to, "+12", "+99912345678")
		}
		recipients = append(recipients, to...)
		e.client.Send(context.Background(), tokens[i%3], api.SendRequest{From: "+14155550101", To: to, Body: "secret offer"})
	}
	e.client.Send(context.Background(), "sbx_UNKNOWNTOKENVALUE1234567", okReq())

	log := e.log.String()
	if !strings.Contains(log, "path=/api/v1/send/bulk_sms") || !strings.Contains(log, "token=sbx_") {
		t.Fatalf("log does not name requests:\n%s", log)
	}
	forbidden := append([]string{
		clientSecret, clientSecret + "-wrong",
		base64.StdEncoding.EncodeToString([]byte(clientID + ":" + clientSecret)),
		"sbx_UNKNOWNTOKENVALUE1234567", "4155550101", "secret offer",
	}, tokens...)
	for _, r := range recipients {
		if len(r) > 6 {
			forbidden = append(forbidden, strings.TrimPrefix(r, "+"))
		}
	}
	for _, f := range forbidden {
		if strings.Contains(log, f) {
			t.Errorf("log contains %q", f)
		}
	}
}

// TestResultsAnswer: with the per-recipient answer, each recipient's fate
// is drawn from the seed (the same seed, the same fates), the answer lists
// every recipient (in E.164 without the +, as docs/sandbox.md says) with a
// message id, and the outbox holds only those delivered, with their ids.
func TestResultsAnswer(t *testing.T) {
	cfg := sandbox.Config{SuccessBody: "results", RejectRate: 0.2, ThrottleRate: 0.1, Seed: 7}
	run := func() (statuses []string, e *env) {
		e = start(t, cfg)
		tok := e.token(t)
		to := numbers(t, 0, 200)
		r := e.post(t, api.SendPath, "Bearer "+tok, "application/json", sendBody(t, "ACME", to, "hi"))
		delivered := map[string]string{} // number → message id
		for _, m := range e.srv.Messages() {
			delivered[m.To] = m.MessageID
		}
		var answer api.SandboxResultsResponse
		if err := json.Unmarshal(r.body, &answer); err != nil || r.status != 200 || len(answer.Messages) != len(to) {
			t.Fatalf("answer %d %s: %v", r.status, r.body, err)
		}
		ids := map[string]bool{}
		for i, m := range answer.Messages {
			if "+"+m.To != to[i] {
				t.Fatalf("result %d names %q, sent to %q: want the number without the +", i, m.To, to[i])
			}
			if m.MessageID == "" || ids[m.MessageID] {
				t.Fatalf("result %d: message id %q empty or repeated", i, m.MessageID)
			}
			ids[m.MessageID] = true
			st := m.Status.GroupName
			if got, ok := delivered[to[i]]; ok != (st == sandbox.ResultPending) || ok && got != m.MessageID {
				t.Errorf("%s: status %s, id %s; outbox has it %v with id %q", m.To, st, m.MessageID, ok, got)
			}
			statuses = append(statuses, st)
		}
		return statuses, e
	}
	first, e := run()
	again, _ := run()
	if !reflect.DeepEqual(first, again) {
		t.Error("the same seed drew other fates")
	}
	st := e.srv.Stats()
	if st.Rejected < 20 || st.Throttled < 8 || st.Messages+st.Rejected+st.Throttled != 200 || st.Messages != len(outboxLines(t, e.outbox.String())) {
		t.Errorf("stats %+v: want about 40 rejected, 20 throttled, the rest delivered and in the outbox", st)
	}
	if err := (sandbox.Config{RejectRate: 0.1}).Check(); err == nil || !strings.Contains(err.Error(), "results") {
		t.Errorf("a reject rate without the per-recipient answer: %v", err)
	}
}
