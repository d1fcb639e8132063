package sandbox_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

var (
	basicB64     = "Basic " + base64.StdEncoding.EncodeToString([]byte(clientID+":"+clientSecret))
	basicLiteral = "Basic " + clientID + ":" + clientSecret
)

func TestToken(t *testing.T) {
	const ct = "application/json"
	tests := []struct {
		name   string
		auth   string
		ct     string
		body   string
		status int
		code   string
		hours  int // for 200: the token's lifetime
	}{
		{name: "base64 credentials", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials"}`, status: 200, hours: 24},
		{name: "literal credentials", auth: basicLiteral, ct: ct, body: `{"grant_type":"client_credentials","valid_hour":5}`, status: 200, hours: 5},
		{name: "lower-case scheme", auth: "basic " + base64.StdEncoding.EncodeToString([]byte(clientID+":"+clientSecret)), ct: ct, body: `{"grant_type":"client_credentials"}`, status: 200, hours: 24},
		{name: "charset parameter", auth: basicB64, ct: "application/json; charset=utf-8", body: `{"grant_type":"client_credentials","valid_hour":1}`, status: 200, hours: 1},
		{name: "valid_hour 168", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","valid_hour":168}`, status: 200, hours: 168},
		{name: "no credentials", ct: ct, body: `{"grant_type":"client_credentials"}`, status: 401, code: api.CodeInvalidClient},
		{name: "wrong secret", auth: "Basic " + base64.StdEncoding.EncodeToString([]byte(clientID+":nope")), ct: ct, body: `{"grant_type":"client_credentials"}`, status: 401, code: api.CodeInvalidClient},
		{name: "wrong literal secret", auth: "Basic " + clientID + ":nope", ct: ct, body: `{"grant_type":"client_credentials"}`, status: 401, code: api.CodeInvalidClient},
		{name: "bearer scheme", auth: "Bearer " + clientSecret, ct: ct, body: `{"grant_type":"client_credentials"}`, status: 401, code: api.CodeInvalidClient},
		{name: "text/plain", auth: basicB64, ct: "text/plain", body: `{"grant_type":"client_credentials"}`, status: 415, code: api.CodeUnsupportedMedia},
		{name: "no content type", auth: basicB64, body: `{"grant_type":"client_credentials"}`, status: 415, code: api.CodeUnsupportedMedia},
		{name: "malformed JSON", auth: basicB64, ct: ct, body: `{"grant_type":`, status: 400, code: api.CodeMalformedJSON},
		{name: "empty body", auth: basicB64, ct: ct, body: ``, status: 400, code: api.CodeMalformedJSON},
		{name: "array", auth: basicB64, ct: ct, body: `[]`, status: 400, code: api.CodeMalformedJSON},
		{name: "null", auth: basicB64, ct: ct, body: `null`, status: 400, code: api.CodeMalformedJSON},
		{name: "trailing data", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials"} {}`, status: 400, code: api.CodeMalformedJSON},
		{name: "unknown field", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","scope":"all"}`, status: 400, code: api.CodeMalformedJSON},
		{name: "no grant_type", auth: basicB64, ct: ct, body: `{}`, status: 400, code: api.CodeUnsupportedGrantType},
		{name: "wrong grant_type", auth: basicB64, ct: ct, body: `{"grant_type":"password"}`, status: 400, code: api.CodeUnsupportedGrantType},
		{name: "grant_type number", auth: basicB64, ct: ct, body: `{"grant_type":1}`, status: 400, code: api.CodeMalformedJSON},
		{name: "valid_hour 0", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","valid_hour":0}`, status: 400, code: api.CodeInvalidField},
		{name: "valid_hour 169", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","valid_hour":169}`, status: 400, code: api.CodeInvalidField},
		{name: "valid_hour -1", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","valid_hour":-1}`, status: 400, code: api.CodeInvalidField},
		{name: "valid_hour string", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","valid_hour":"24"}`, status: 400, code: api.CodeInvalidField},
		{name: "valid_hour fraction", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","valid_hour":1.5}`, status: 400, code: api.CodeInvalidField},
		{name: "valid_hour exponent", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","valid_hour":1e1}`, status: 400, code: api.CodeInvalidField},
		{name: "valid_hour 24.0", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","valid_hour":24.0}`, status: 400, code: api.CodeInvalidField},
		{name: "valid_hour null", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","valid_hour":null}`, status: 400, code: api.CodeInvalidField},
		{name: "body over 1 MiB", auth: basicB64, ct: ct, body: `{"grant_type":"client_credentials","x":"` + strings.Repeat("a", 1<<20) + `"}`, status: 413, code: api.CodeRequestTooLarge},
	}
	e := start(t, sandbox.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.post(t, api.TokenPath, tt.auth, tt.ct, tt.body)
			if r.status != tt.status || r.err.Code != tt.code {
				t.Fatalf("got %d %q (%s), want %d %q", r.status, r.err.Code, r.body, tt.status, tt.code)
			}
			if tt.status == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
			}
			if tt.status != 200 {
				return
			}
			var tr api.TokenResponse
			if err := json.Unmarshal(r.body, &tr); err != nil {
				t.Fatal(err)
			}
			// 128 random bits are at least 22 characters of base64 or 26 of base32.
			if len(tr.AccessToken) < 26 {
				t.Errorf("token %d characters long", len(tr.AccessToken))
			}
			if want := epoch.Add(time.Duration(tt.hours) * time.Hour).Format(api.ValidTillLayout); tr.ValidTill != want {
				t.Errorf("valid_till %q, want %q", tr.ValidTill, want)
			}
			if r.header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", r.header.Get("Cache-Control"))
			}
		})
	}
}

func TestTokensAreNewAndEarlierOnesStayValid(t *testing.T) {
	e := start(t, sandbox.Config{})
	seen := map[string]bool{}
	var toks []string
	for i := 0; i < 5; i++ {
		tok := e.token(t)
		if seen[tok] {
			t.Fatalf("token repeated")
		}
		seen[tok] = true
		toks = append(toks, tok)
	}
	for i, tok := range toks {
		if _, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, i, 1), Body: "hi"}); err != nil {
			t.Errorf("token %d: %v", i, err)
		}
	}
}

func TestTokenExpiry(t *testing.T) {
	tests := []struct {
		name  string
		ttl   time.Duration
		hours int
		life  time.Duration
	}{
		{name: "valid_hour", hours: 2, life: 2 * time.Hour},
		{name: "default", life: 24 * time.Hour},
		{name: "token TTL", ttl: 90 * time.Second, hours: 5, life: 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, sandbox.Config{TokenTTL: tt.ttl})
			tok, err := e.client.IssueToken(context.Background(), tt.hours)
			if err != nil {
				t.Fatal(err)
			}
			if want := epoch.Add(tt.life); !tok.ValidTill.Equal(want) {
				t.Errorf("valid_till %v, want %v", tok.ValidTill, want)
			}
			req := api.SendRequest{From: "ACME", To: numbers(t, 0, 1), Body: "hi"}
			e.clock.Add(tt.life - time.Second)
			if _, err := e.client.Send(context.Background(), tok.Value, req); err != nil {
				t.Fatalf("just before expiry: %v", err)
			}
			e.clock.Add(time.Second)
			_, err = e.client.Send(context.Background(), tok.Value, req)
			if ae := asAPIError(t, err); ae.Status != 401 || ae.Code != api.CodeTokenExpired || apply.StatusOf(ae) != state.Unsent {
				t.Errorf("at expiry: %v", err)
			}
			if n := len(e.srv.Messages()); n != 1 {
				t.Errorf("outbox has %d records, want 1", n)
			}
		})
	}
}

func TestSendAuth(t *testing.T) {
	e := start(t, sandbox.Config{TokenTTL: time.Minute})
	expired := e.token(t)
	e.clock.Add(time.Minute)
	valid := e.token(t)
	body := sendBody(t, "ACME", numbers(t, 0, 1), "hi")
	tests := []struct {
		name string
		auth string
		code string
	}{
		{"missing", "", api.CodeTokenInvalid},
		{"empty bearer", "Bearer ", api.CodeTokenInvalid},
		{"basic", basicB64, api.CodeTokenInvalid},
		{"unknown", "Bearer sbx_" + strings.Repeat("A", 26), api.CodeTokenInvalid},
		{"token with a suffix", "Bearer " + valid + "x", api.CodeTokenInvalid},
		{"expired", "Bearer " + expired, api.CodeTokenExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.post(t, api.SendPath, tt.auth, "application/json", body)
			if r.status != 401 || r.err.Code != tt.code {
				t.Errorf("got %d %q, want 401 %q", r.status, r.err.Code, tt.code)
			}
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
			}
		})
	}
	if r := e.post(t, api.SendPath, "Bearer "+valid, "application/json", body); r.status != 200 {
		t.Errorf("valid token: %d %s", r.status, r.body)
	}
	if n := len(e.srv.Messages()); n != 1 {
		t.Errorf("outbox has %d records, want 1", n)
	}
}

func TestSendRules(t *testing.T) {
	ok := numbers(t, 0, 3)
	type want struct {
		status int
		code   string
		msg    string // the message contains
	}
	bad := func(msg string) want { return want{400, api.CodeInvalidField, msg} }
	tests := []struct {
		name string
		ct   string // default application/json
		body string
		want want
	}{
		{name: "alphanumeric sender", body: sendBody(t, "ACME Ltd 26", ok, "hi"), want: want{status: 200}},
		{name: "one-letter sender", body: sendBody(t, "A", ok, "hi"), want: want{status: 200}},
		{name: "short code", body: sendBody(t, "12345", ok, "hi"), want: want{status: 200}},
		{name: "3-digit short code", body: sendBody(t, "123", ok, "hi"), want: want{status: 200}},
		{name: "E.164 sender", body: sendBody(t, "+14155550101", ok, "hi"), want: want{status: 200}},
		{name: "1600 characters of UCS-2", body: sendBody(t, "ACME", ok, strings.Repeat("é", 1600)), want: want{status: 200}},
		{name: "1000 recipients", body: sendBody(t, "ACME", numbers(t, 0, 1000), "hi"), want: want{status: 200}},

		{name: "text/plain", ct: "text/plain", body: sendBody(t, "ACME", ok, "hi"), want: want{415, api.CodeUnsupportedMedia, "Content-Type"}},
		{name: "form", ct: "application/x-www-form-urlencoded", body: "from=ACME", want: want{415, api.CodeUnsupportedMedia, "Content-Type"}},
		{name: "over 1 MiB", body: sendBody(t, "ACME", ok, strings.Repeat("a", 1<<20)), want: want{413, api.CodeRequestTooLarge, "1048576"}},
		{name: "malformed", body: `{"from":"ACME","to":[`, want: want{400, api.CodeMalformedJSON, ""}},
		{name: "not an object", body: `"hi"`, want: want{400, api.CodeMalformedJSON, ""}},
		{name: "unknown field", body: `{"from":"ACME","to":["+33612340000"],"body":"hi","schedule":"now"}`, want: want{400, api.CodeMalformedJSON, "schedule"}},
		{name: "to of numbers", body: `{"from":"ACME","to":[33612340000],"body":"hi"}`, want: want{400, api.CodeMalformedJSON, "to"}},
		{name: "trailing data", body: sendBody(t, "ACME", ok, "hi") + "{}", want: want{400, api.CodeMalformedJSON, ""}},

		{name: "no from", body: `{"to":["+33612340000"],"body":"hi"}`, want: bad("from")},
		{name: "empty from", body: sendBody(t, "", ok, "hi"), want: bad("from")},
		{name: "12-character sender", body: sendBody(t, "ACME Limited", ok, "hi"), want: bad("from")},
		{name: "sender with a dash", body: sendBody(t, "AC-ME", ok, "hi"), want: bad("from")},
		{name: "sender with a non-ASCII letter", body: sendBody(t, "Café", ok, "hi"), want: bad("from")},
		{name: "spaces only", body: sendBody(t, "   ", ok, "hi"), want: bad("from")},
		{name: "2-digit short code", body: sendBody(t, "12", ok, "hi"), want: bad("from")},
		{name: "9-digit sender", body: sendBody(t, "123456789", ok, "hi"), want: bad("from")},
		{name: "bad E.164 sender", body: sendBody(t, "+12", ok, "hi"), want: bad("from")},

		{name: "no to", body: `{"from":"ACME","body":"hi"}`, want: bad("to: must list 1 to 1000")},
		{name: "empty to", body: sendBody(t, "ACME", []string{}, "hi"), want: bad("to: must list 1 to 1000")},
		{name: "1001 recipients", body: sendBody(t, "ACME", numbers(t, 0, 1001), "hi"), want: want{413, api.CodeTooManyRecipients, "1001"}},
		{name: "not E.164", body: sendBody(t, "ACME", append(numbers(t, 0, 3), "+0447400123456"), "hi"), want: bad(`to[3]: "+0447400123456" is not an E.164 number`)},
		{name: "short number (the right shape, no such number)", body: sendBody(t, "ACME", append(numbers(t, 0, 3), "+12"), "hi"), want: bad(`to[3]: "+12" is not a valid phone number`)},
		{name: "no plus", body: sendBody(t, "ACME", []string{"33612340000"}, "hi"), want: bad(`to[0]: "33612340000" is not an E.164 number`)},
		{name: "spaces", body: sendBody(t, "ACME", []string{"+33 6 12 34 00 00"}, "hi"), want: bad(`to[0]`)},
		{name: "16 digits", body: sendBody(t, "ACME", []string{"+3361234000000000"}, "hi"), want: bad(`to[0]`)},
		{name: "empty number", body: sendBody(t, "ACME", []string{"+33612340000", ""}, "hi"), want: bad(`to[1]: "" is not an E.164 number`)},
		{name: "unknown country code", body: sendBody(t, "ACME", []string{"+99912345678"}, "hi"), want: bad(`to[0]: "+99912345678" is not a valid phone number`)},
		{name: "invalid for region", body: sendBody(t, "ACME", []string{"+447700900123"}, "hi"), want: bad(`to[0]: "+447700900123" is not a valid phone number`)},
		{name: "national prefix kept", body: sendBody(t, "ACME", []string{"+330612340000"}, "hi"), want: bad(`to[0]`)},
		{name: "duplicate", body: sendBody(t, "ACME", append(ok, ok[1]), "hi"), want: bad(`to[3]: "` + ok[1] + `" repeats to[1]`)},

		{name: "no body", body: `{"from":"ACME","to":["+33612340000"]}`, want: bad("body")},
		{name: "empty body", body: sendBody(t, "ACME", ok, ""), want: bad("body")},
		{name: "1601 characters", body: sendBody(t, "ACME", ok, strings.Repeat("é", 1601)), want: bad("body: 1601 characters, at most 1600")},
	}
	e := start(t, sandbox.Config{})
	tok := e.token(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := tt.ct
			if ct == "" {
				ct = "application/json"
			}
			before := len(e.srv.Messages())
			r := e.post(t, api.SendPath, "Bearer "+tok, ct, tt.body)
			if r.status != tt.want.status || r.err.Code != tt.want.code || !strings.Contains(r.err.Message, tt.want.msg) {
				t.Fatalf("got %d %q %q, want %d %q containing %q", r.status, r.err.Code, r.err.Message, tt.want.status, tt.want.code, tt.want.msg)
			}
			if got := len(e.srv.Messages()) - before; r.status != 200 && got != 0 {
				t.Errorf("a refused request recorded %d messages", got)
			}
		})
	}
}

func TestMaxRecipientsAndBody(t *testing.T) {
	e := start(t, sandbox.Config{MaxRecipients: 2, MaxBody: 5})
	tok := e.token(t)
	tests := []struct {
		to     int
		body   string
		status int
	}{
		{2, "hello", 200},
		{3, "hello", 413},
		{1, "hello!", 400},
	}
	for _, tt := range tests {
		r := e.post(t, api.SendPath, "Bearer "+tok, "application/json", sendBody(t, "ACME", numbers(t, 0, tt.to), tt.body))
		if r.status != tt.status {
			t.Errorf("%d recipients, body %q: %d %s, want %d", tt.to, tt.body, r.status, r.body, tt.status)
		}
	}
}

func TestSendRecordsOutbox(t *testing.T) {
	e := start(t, sandbox.Config{})
	tok := e.token(t)
	bodies := []string{"Hi, the sale starts today.", strings.Repeat("x", 161), "Grüße 👋"}
	var want []sandbox.Message
	for i, body := range bodies {
		to := numbers(t, 10*i, i+1)
		r := e.post(t, api.SendPath, "Bearer "+tok, "application/json", sendBody(t, "ACME", to, body))
		var resp api.SandboxSendResponse
		if err := json.Unmarshal([]byte(r.body), &resp); err != nil || r.status != 200 {
			t.Fatalf("send: %d %s", r.status, r.body)
		}
		if resp.RequestID == "" || resp.Accepted != len(to) || resp.Segments != sms.Analyze(body).Segments*len(to) || len(resp.Messages) != len(to) {
			t.Fatalf("response %+v for %d recipients of %q", resp, len(to), body)
		}
		// The answer names each recipient, as sent, with its message id.
		for k, n := range to {
			if m := resp.Messages[k]; m.To != n || !strings.HasPrefix(m.MessageID, "msg_") {
				t.Errorf("answer's message %d: %+v, want %s with a message id", k, m, n)
			}
			want = append(want, sandbox.Message{RequestID: resp.RequestID, MessageID: resp.Messages[k].MessageID, To: n, From: "ACME", Body: body, At: epoch})
		}
	}
	if got := e.srv.Messages(); !reflect.DeepEqual(got, want) {
		t.Errorf("Messages() = %+v\nwant %+v", got, want)
	}
	if got := outboxLines(t, e.outbox.String()); !messagesEqual(got, want) {
		t.Errorf("outbox file = %+v\nwant %+v", got, want)
	}
	if !strings.Contains(e.outbox.String(), `"at":"2026-03-01T12:00:00Z"`) {
		t.Errorf("outbox times are not RFC 3339 UTC: %s", e.outbox.String())
	}
	r := e.do(t, http.MethodGet, sandbox.MessagesPath, basicB64, "", nil)
	var listed []sandbox.Message
	if err := json.Unmarshal(r.body, &listed); err != nil || r.status != 200 {
		t.Fatalf("GET %s: %d %v", sandbox.MessagesPath, r.status, err)
	}
	if !messagesEqual(listed, want) {
		t.Errorf("GET %s = %+v", sandbox.MessagesPath, listed)
	}
	st := e.srv.Stats()
	if st.Accepted != 3 || st.Messages != 6 || st.Status[200] != 5 || st.SendRequests != 3 || st.TokenRequests != 1 {
		t.Errorf("stats %+v", st)
	}
}

func messagesEqual(a, b []sandbox.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].RequestID != b[i].RequestID || a[i].MessageID != b[i].MessageID || a[i].To != b[i].To || a[i].From != b[i].From || a[i].Body != b[i].Body || !a[i].At.Equal(b[i].At) {
			return false
		}
	}
	return true
}

func TestEmptyOutboxListsAnArray(t *testing.T) {
	e := start(t, sandbox.Config{})
	if r := e.do(t, http.MethodGet, sandbox.MessagesPath, basicB64, "", nil); r.status != 200 || strings.TrimSpace(string(r.body)) != "[]" {
		t.Errorf("got %d %q", r.status, r.body)
	}
}

// TestMessagesNeedClientCredentials: the outbox lists phone numbers, so
// only a caller with the client credentials may read it, in either form
// the token endpoint accepts.
func TestMessagesNeedClientCredentials(t *testing.T) {
	e := start(t, sandbox.Config{})
	tok := e.token(t)
	to := numbers(t, 0, 2)
	if _, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: to, Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name, auth string
		status     int
	}{
		{"base64", basicB64, 200},
		{"literal", basicLiteral, 200},
		{"lower-case scheme", "basic " + b64(clientID+":"+clientSecret), 200},
		{"none", "", 401},
		{"wrong secret", "Basic " + b64(clientID+":wrong"), 401},
		{"wrong secret literal", "Basic " + clientID + ":wrong", 401},
		{"id only", "Basic " + b64(clientID), 401},
		{"empty", "Basic ", 401},
		{"a valid API token", "Bearer " + tok, 401},
		{"the secret as a bearer token", "Bearer " + clientSecret, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodGet, sandbox.MessagesPath, tt.auth, "", nil)
			if r.status != tt.status {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.status)
			}
			if tt.status == 200 {
				var listed []sandbox.Message
				if err := json.Unmarshal(r.body, &listed); err != nil || len(listed) != 2 {
					t.Errorf("listed %s (%v)", r.body, err)
				}
				return
			}
			if r.err.Code != api.CodeInvalidClient || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("code %q, WWW-Authenticate %q", r.err.Code, r.header.Get("WWW-Authenticate"))
			}
			for _, n := range to {
				if strings.Contains(string(r.body), n) {
					t.Errorf("401 body %s holds a number", r.body)
				}
			}
		})
	}
	if log := e.log.String(); strings.Contains(log, clientSecret) || strings.Contains(log, to[0]) {
		t.Errorf("log holds the secret or a number:\n%s", log)
	}
}

// blockingWriter holds each Write until released.
type blockingWriter struct {
	writing chan struct{}
	release chan struct{}
	flushed chan struct{}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.writing <- struct{}{}
	<-w.release
	return len(p), nil
}

func (w *blockingWriter) Flush() error {
	w.flushed <- struct{}{}
	return nil
}

func TestOutboxIsWrittenBeforeTheResponse(t *testing.T) {
	w := &blockingWriter{writing: make(chan struct{}), release: make(chan struct{}), flushed: make(chan struct{}, 1)}
	e := start(t, sandbox.Config{Outbox: w})
	tok := e.token(t)
	done := make(chan error, 1)
	go func() {
		_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 2), Body: "hi"})
		done <- err
	}()
	<-w.writing
	select {
	case err := <-done:
		t.Fatalf("response arrived before the outbox was written (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(w.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.flushed:
	default:
		t.Error("Flush was not called")
	}
}

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	e := start(t, sandbox.Config{})
	tests := []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{http.MethodGet, "/api/v1/other", 404, api.CodeNotFound, ""},
		{http.MethodGet, api.TokenPath, 405, api.CodeMethodNotAllowed, "POST"},
		{http.MethodPut, api.SendPath, 405, api.CodeMethodNotAllowed, "POST"},
		{http.MethodPost, sandbox.MessagesPath, 405, api.CodeMethodNotAllowed, "GET"},
	}
	for _, tt := range tests {
		r := e.do(t, tt.method, tt.path, "", "", nil)
		if r.status != tt.status || r.err.Code != tt.code || r.header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d %q Allow %q", tt.method, tt.path, r.status, r.err.Code, r.header.Get("Allow"))
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []sandbox.Config{
		{},
		{ClientID: "a"},
		{ClientID: "a", ClientSecret: "b", FailRate: 1.5},
		{ClientID: "a", ClientSecret: "b", ErrorRate: -0.1},
		{ClientID: "a", ClientSecret: "b", FailRate: 0.6, AmbiguousRate: 0.6},
		{ClientID: "a", ClientSecret: "b", MaxRecipients: -1},
		{ClientID: "a", ClientSecret: "b", Latency: -time.Second},
	}
	for i, cfg := range tests {
		if _, err := sandbox.New(cfg); err == nil {
			t.Errorf("%d: New(%+v) succeeded", i, cfg)
		}
	}
}

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- sandbox.Run(ctx, "127.0.0.1:0", sandbox.Config{ClientID: clientID, ClientSecret: clientSecret}, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^listening on (http://127\.0\.0\.1:[0-9]+)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q", line)
	}
	c := &api.Client{BaseURL: m[1], ClientID: clientID, ClientSecret: clientSecret}
	tok, err := c.IssueToken(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, tok.Value, api.SendRequest{From: "ACME", To: numbers(t, 0, 2), Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	stopRun(t, cancel, done)
	if _, err := c.IssueToken(context.Background(), 1); err == nil {
		t.Error("server still answers after Run returned")
	}
	if err := sandbox.Run(context.Background(), "127.0.0.1:0", sandbox.Config{}, pw); err == nil {
		t.Error("Run without credentials succeeded")
	}
}

// TestForget checks that a sandbox told to forget keeps counting and
// writing its outbox file, but holds no message in memory.
func TestForget(t *testing.T) {
	e := start(t, sandbox.Config{Forget: true})
	tok := e.token(t)
	for i := range 3 {
		r := e.post(t, "/api/v1/send/bulk_sms", "Bearer "+tok, "application/json", sendBody(t, "ACME", numbers(t, 2*i, 2), "hi"))
		if r.status != 200 {
			t.Fatalf("send %d: %d %s", i, r.status, r.body)
		}
	}
	if got := e.srv.Messages(); len(got) != 0 {
		t.Errorf("kept %d messages in memory", len(got))
	}
	if st := e.srv.Stats(); st.Accepted != 3 || st.Messages != 6 {
		t.Errorf("stats %+v, want 3 accepted and 6 messages", st)
	}
	if n := strings.Count(e.outbox.String(), "\n"); n != 6 {
		t.Errorf("outbox file has %d lines, want 6", n)
	}
}
