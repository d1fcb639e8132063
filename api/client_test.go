package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/smsform/smsform/internal/rawjson"
)

const (
	testID     = "client-id"
	testSecret = "s3cr3t-Secret-Value"
	testToken  = "tok_SECRETTOKENVALUE0123456789"
)

var testReq = SendRequest{From: "ACME", To: []string{"+447700900123", "+14155550101"}, Body: "hello"}

// checkSafe fails when err's text carries a credential or a recipient.
func checkSafe(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	for _, bad := range []string{testSecret, testToken, "7700900123", "4155550101", base64.StdEncoding.EncodeToString([]byte(testID + ":" + testSecret))} {
		if strings.Contains(msg, bad) {
			t.Errorf("error text %q contains %q", msg, bad)
		}
	}
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *api.Error", err, err)
	}
	return e
}

func TestSendClassifiesResponses(t *testing.T) {
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantErr    bool
		status     int
		code       string
		retryAfter time.Duration
		msgHas     string
	}{
		{
			name: "success",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"request_id":"req_1","accepted":2,"segments":2}`)
			},
		},
		{
			name: "401 expired",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", "Bearer")
				WriteError(w, 401, CodeTokenExpired, "token expired")
			},
			wantErr: true, status: 401, code: CodeTokenExpired,
		},
		{
			name: "401 without body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(401)
			},
			wantErr: true, status: 401, msgHas: "Unauthorized",
		},
		{
			name: "429 seconds",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "7")
				WriteError(w, 429, CodeRateLimited, "slow down")
			},
			wantErr: true, status: 429, code: CodeRateLimited, retryAfter: 7 * time.Second,
		},
		{
			name: "503 http date",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", time.Now().Add(1*time.Hour).UTC().Format(http.TimeFormat))
				w.WriteHeader(503)
			},
			wantErr: true, status: 503,
		},
		{
			name: "400 echoes a number",
			handler: func(w http.ResponseWriter, r *http.Request) {
				WriteError(w, 400, CodeInvalidField, `to[1]: "+14155550101" is not valid, token `+testToken)
			},
			wantErr: true, status: 400, code: CodeInvalidField, msgHas: "to[1]",
		},
		{
			name: "413",
			handler: func(w http.ResponseWriter, r *http.Request) {
				WriteError(w, 413, CodeTooManyRecipients, "too many")
			},
			wantErr: true, status: 413, code: CodeTooManyRecipients,
		},
		{
			name:    "500",
			handler: func(w http.ResponseWriter, r *http.Request) { WriteError(w, 500, CodeInternal, "boom") },
			wantErr: true, status: 500, code: CodeInternal,
		},
		{
			name: "502 html",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(502)
				io.WriteString(w, "<html>bad gateway</html>")
			},
			wantErr: true, status: 502, msgHas: "Bad Gateway",
		},
		{
			name:    "504",
			handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(504) },
			wantErr: true, status: 504,
		},
		{
			name: "404 wrong base URL",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.NotFound(w, r)
			},
			wantErr: true, status: 404, msgHas: "404 page not found",
		},
		{
			name:    "405",
			handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(405) },
			wantErr: true, status: 405,
		},
		{
			name: "408 not acted",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(408)
			},
			wantErr: true, status: 408, retryAfter: 2 * time.Second,
		},
		{
			name: "307 not followed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "https://elsewhere.example/api/v1/send/bulk_sms?key=secret")
				w.WriteHeader(307)
			},
			wantErr: true, status: 307, msgHas: `asks for "https://elsewhere.example/api/v1/send/bulk_sms"`,
		},
		{
			name: "303 after acting",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "/status/1")
				w.WriteHeader(303)
			},
			wantErr: true, status: 303,
		},
		{
			name:    "418 other 4xx",
			handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(418) },
			wantErr: true, status: 418,
		},
		{
			name: "drop after reading",
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
			},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				if r.URL.Path != SendPath || r.Method != http.MethodPost {
					t.Errorf("request %s %s", r.Method, r.URL.Path)
				}
				if r.Header.Get("Authorization") != "Bearer "+testToken {
					t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
				}
				tt.handler(w, r)
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, ClientID: testID, ClientSecret: testSecret, Timeout: 5 * time.Second}
			resp, err := c.Send(context.Background(), testToken, testReq)
			if got.Load() != 1 {
				t.Errorf("server saw %d requests, want 1 (the client must not retry)", got.Load())
			}
			checkSafe(t, err)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Send: %v", err)
				}
				if resp.RequestID != "req_1" || resp.Status != 200 {
					t.Errorf("response %+v", resp)
				}
				return
			}
			if err == nil {
				t.Fatalf("Send succeeded, want an error")
			}
			e := asError(t, err)
			// Every answer, and a connection dropped once the request was
			// read, means the request reached the provider.
			if !e.Reached || e.Status != tt.status || e.Code != tt.code {
				t.Errorf("got reached %v status %d code %q, want reached %d %q (%v)", e.Reached, e.Status, e.Code, tt.status, tt.code, err)
			}
			if tt.retryAfter != 0 && e.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.retryAfter)
			}
			if tt.name == "503 http date" && (e.RetryAfter < 59*time.Minute || e.RetryAfter > time.Hour) {
				t.Errorf("RetryAfter = %v, want about 1h", e.RetryAfter)
			}
			if !strings.Contains(err.Error(), tt.msgHas) {
				t.Errorf("error %q does not contain %q", err, tt.msgHas)
			}
		})
	}
}

func TestSendConnectionRefusedNeverLeaves(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &Client{BaseURL: "http://" + addr, Timeout: 2 * time.Second}
	_, err = c.Send(context.Background(), testToken, testReq)
	e := asError(t, err)
	if e.Reached || e.Status != 0 || e.Err == nil {
		t.Errorf("got %+v, want a transport error of a request that never left", e)
	}
	checkSafe(t, err)
}

func TestSendHangAfterReadingReached(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := &Client{BaseURL: srv.URL, Timeout: 300 * time.Millisecond}
	start := time.Now()
	_, err := c.Send(context.Background(), testToken, testReq)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Send took %v, want about the 300ms timeout", d)
	}
	e := asError(t, err)
	if !e.Reached || e.Status != 0 {
		t.Errorf("got reached %v status %d, want a request that reached the provider and no answer (%v)", e.Reached, e.Status, err)
	}
}

func TestSendBodyThatNeverEndsIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, `{"request_id":"req_1",`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Timeout: 300 * time.Millisecond}
	start := time.Now()
	resp, err := c.Send(context.Background(), testToken, testReq)
	// The status line said 200: the provider took the messages, whatever
	// became of the body.
	if err != nil || resp.Status != 200 || time.Since(start) > 3*time.Second {
		t.Errorf("got %+v, %v after %v; want sent, within about the 300ms timeout", resp, err, time.Since(start))
	}
}

func TestSendEndless2xxBodyStopsAtTheLimit(t *testing.T) {
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		chunk := []byte(strings.Repeat("{", 32<<10))
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	start := time.Now()
	_, err := (&Client{BaseURL: srv.URL, Timeout: 20 * time.Second}).Send(context.Background(), testToken, testReq)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Send took %v on an endless body, want it to stop at the read limit", d)
	}
	if err != nil {
		t.Errorf("got %v, want sent: the status said 200", err)
	}
}

func TestSendContext(t *testing.T) {
	t.Run("cancelled before writing", func(t *testing.T) {
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := (&Client{BaseURL: srv.URL}).Send(ctx, testToken, testReq)
		if e := asError(t, err); e.Reached || !errors.Is(err, context.Canceled) {
			t.Errorf("got reached %v (%v), want a request that never left, wrapping context.Canceled", e.Reached, err)
		}
		if hits.Load() != 0 {
			t.Errorf("server saw %d requests", hits.Load())
		}
	})
	t.Run("cancelled after writing", func(t *testing.T) {
		read := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			close(read)
			<-r.Context().Done()
		}))
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-read; cancel() }()
		_, err := (&Client{BaseURL: srv.URL}).Send(ctx, testToken, testReq)
		if e := asError(t, err); !e.Reached || e.Status != 0 {
			t.Errorf("got reached %v status %d (%v), want a request that reached the provider and no answer", e.Reached, e.Status, err)
		}
	})
}

func TestRedirectIsNotFollowed(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, `{"request_id":"evil","accepted":2,"segments":2,"access_token":"x","valid_till":"2030-01-01 00:00:00"}`)
	}))
	defer other.Close()
	for _, status := range []int{301, 302, 307, 308} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path+"?leak=1", status)
		}))
		c := &Client{BaseURL: srv.URL, ClientID: testID, ClientSecret: testSecret}
		_, err := c.Send(context.Background(), testToken, testReq)
		e := asError(t, err)
		if !e.Reached || !e.WrongPlace() || e.Status != status || !strings.Contains(err.Error(), "does not follow redirects") {
			t.Errorf("%d: got %v", status, err)
		}
		if strings.Contains(err.Error(), "leak=1") {
			t.Errorf("error %q shows the Location's query", err)
		}
		checkSafe(t, err)
		_, err = c.IssueToken(context.Background(), 1)
		if e := asError(t, err); e.Status != status {
			t.Errorf("%d: token: got %v", status, err)
		}
		checkSafe(t, err)
		srv.Close()
	}
	// Even a caller's own client that would follow redirects must not.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, HTTP: &http.Client{}}
	if _, err := c.Send(context.Background(), testToken, testReq); err == nil {
		t.Error("Send followed a redirect")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) != 0 {
		t.Errorf("the other host received %d requests (Authorization %q)", len(leaked), leaked)
	}
}

// TestRedirectMasksNumbers: a Location naming the recipient, in any form
// a URL may write a number in, is quoted with the number masked and the
// host and the rest of the path as they were.
func TestRedirectMasksNumbers(t *testing.T) {
	for _, tt := range []struct{ loc, want string }{
		{"https://sms.example.com/v2/send/%2B447400123564/+447400123459", "https://sms.example.com/v2/send/+[number]/+[number]"},
		{"https://sms.example.com/v2/send/447400123459?to=%2B447400123564#447400123459", "https://sms.example.com/v2/send/+[number]"},
		{"https://sms.example.com/v2/send/+44%207400%20123459/status", "https://sms.example.com/v2/send/+[number]/status"},
		{"https://sms.example.com/v2/send/%34%34%37%34%30%30%31%32%33%34%35%39", "https://sms.example.com/v2/send/+[number]"},
		{"https://sms.example.com/v2/to/(07400)%20123-459", "https://sms.example.com/v2/to/(+[number]"},
		{"https://sms.example.com/v2/to/0044.7400.123459.json", "https://sms.example.com/v2/to/+[number].json"},
		{"https://me:447400123459@sms.example.com:8443/v2/send/%2b447400123459", "https://sms.example.com:8443/v2/send/+[number]"},
		{"http://192.168.100.200:8080/send/447400123459", "http://192.168.100.200:8080/send/+[number]"},
		{"/v2/send/%2B447400123459", "/v2/send/+[number]"},
		{"tel:+447400123459", "tel:+[number]"},
		// Nothing that may be a number: the path as it was written.
		{"https://sms.example.com/api/v2.1/batch/12345/status%20now", "https://sms.example.com/api/v2.1/batch/12345/status%20now"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", tt.loc)
			w.WriteHeader(http.StatusFound)
		}))
		_, err := (&Client{BaseURL: srv.URL}).Send(context.Background(), testToken, testReq)
		srv.Close()
		if e := asError(t, err); e.Status != http.StatusFound {
			t.Errorf("%s: got %v, want HTTP 302", tt.loc, err)
			continue
		}
		if want := "asks for " + strconv.Quote(tt.want) + ";"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not say %s", tt.loc, err, want)
		}
		u, _ := url.Parse(tt.want)
		checkNoNumber(t, err.Error(), u.Host)
	}
	// A Location Go's client cannot parse: the answer is still a redirect
	// that came back (not "no response"), and neither the number nor the
	// key in its query shows.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "https://sms.example.com/send/+447400123459/%zz?key=s3cr3t-k3y")
		w.WriteHeader(http.StatusFound)
	}))
	_, err := (&Client{BaseURL: srv.URL}).Send(context.Background(), testToken, testReq)
	srv.Close()
	if e := asError(t, err); e.Status != http.StatusFound || !e.Reached || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("an unparsable Location: %v (%+v), want HTTP 302 without the key", err, e)
	}
	checkNoNumber(t, err.Error(), "")
	// A malformed escape (which Go's client would not let through) is left
	// as it is, and does not hide a number after it.
	if got, want := maskPathNumbers("/a%2/%zz/100%/%2B447400123459%"), "/a%2/%zz/100%/+[number]%"; got != want {
		t.Errorf("maskPathNumbers = %q, want %q", got, want)
	}
}

// checkNoNumber fails when msg, or msg percent-decoded, holds 7 digits
// joined by nothing but separators (what might be someone's number)
// anywhere but in host, which is quoted as it is.
func checkNoNumber(t *testing.T, msg, host string) {
	t.Helper()
	rest := msg
	if host != "" {
		rest = strings.ReplaceAll(msg, host, "")
	}
	decoded, _ := percentDecode(rest)
	digits := regexp.MustCompile(`[0-9](?:[^0-9a-zA-Z]{0,3}[0-9]){6,}`)
	for _, s := range []string{rest, string(decoded)} {
		if m := digits.FindString(s); m != "" {
			t.Errorf("error %q holds %q", msg, m)
		}
	}
}

func TestIssueToken(t *testing.T) {
	tests := []struct {
		name    string
		literal bool   // what the server expects
		basic   string // what the client is told
		hours   int
		respond string
		status  int
		wantErr string
	}{
		{name: "base64", hours: 5, basic: BasicBase64, respond: `{"access_token":"abc","valid_till":"2030-01-02 03:04:05"}`},
		{name: "literal", literal: true, basic: BasicLiteral, respond: `{"access_token":"abc","valid_till":"2030-01-02 03:04:05"}`},
		{name: "empty token", hours: 1, respond: `{"access_token":"","valid_till":"2030-01-02 03:04:05"}`, wantErr: "empty access_token"},
		{name: "no valid_till", hours: 1, respond: `{"access_token":"abc"}`, wantErr: "no valid_till"},
		{name: "RFC 3339 valid_till", hours: 1, respond: `{"access_token":"abc","valid_till":"2030-01-02T03:04:05Z"}`},
		{name: "RFC 3339 with an offset", hours: 1, respond: `{"access_token":"abc","valid_till":"2030-01-02T05:04:05.000+02:00"}`},
		{name: "malformed valid_till", hours: 1, respond: `{"access_token":"abc","valid_till":"02/01/2030 03:04:05"}`, wantErr: "malformed valid_till"},
		{name: "not JSON", hours: 1, respond: `<html>`, wantErr: "no token issued: token response is not a JSON object"},
		{name: "token with newline", hours: 1, respond: `{"access_token":"a\nb","valid_till":"2030-01-02 03:04:05"}`, wantErr: "characters"},
		{name: "bad credentials", basic: BasicBase64, hours: 1, status: 401, respond: `{"error":{"code":"invalid_client","message":"bad secret ` + testSecret + `"}}`, wantErr: "invalid_client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				want := "Basic " + base64.StdEncoding.EncodeToString([]byte(testID+":"+testSecret))
				if tt.literal {
					want = "Basic " + testID + ":" + testSecret
				}
				if got := r.Header.Get("Authorization"); got != want {
					t.Errorf("Authorization = %q, want %q", got, want)
				}
				if r.URL.Path != TokenPath || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("request %s %s", r.URL.Path, r.Header.Get("Content-Type"))
				}
				body, _ := io.ReadAll(r.Body)
				wantBody := `{"grant_type":"client_credentials"}`
				if tt.hours > 0 {
					wantBody = `{"grant_type":"client_credentials","valid_hour":` + strconv.Itoa(tt.hours) + `}`
				}
				if string(body) != wantBody {
					t.Errorf("body %s, want %s", body, wantBody)
				}
				if tt.status != 0 {
					w.WriteHeader(tt.status)
				}
				io.WriteString(w, tt.respond)
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL + "/", ClientID: testID, ClientSecret: testSecret, Basic: tt.basic}
			tok, err := c.IssueToken(context.Background(), tt.hours)
			checkSafe(t, err)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			if tok.Value != "abc" || !tok.ValidTill.Equal(want) || tok.ValidTill.Location() != time.UTC {
				t.Errorf("token %+v", tok)
			}
		})
	}
	if _, err := (&Client{BaseURL: "http://127.0.0.1:1"}).IssueToken(context.Background(), 169); err == nil {
		t.Error("IssueToken(169) did not fail")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"1", time.Second},
		{" 120 ", 2 * time.Minute},
		{"-5", 0},
		{"1.5", 0},
		{"soon", 0},
		{"99999999999999999", 24 * time.Hour},
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second},
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0},
		{"Sunday, 01-Mar-26 12:01:00 GMT", time.Minute},
		{"Sun Mar  1 12:00:10 2026", 10 * time.Second},
		{"Sun, 01 Mar 2036 12:00:00 GMT", 24 * time.Hour},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzFindRequestID(f *testing.F) {
	for _, s := range []string{
		`{"request_id":"req_1","accepted":2,"segments":4}`, `{"id":12345}`, `{"message_id":"m-1"}`,
		`{"data":{"id":"d-1"}}`, `{"data":[{"message_id":"x"}]}`, `[{"id":"a"}]`,
		`{"request_id":""}`, `{}`, `[]`, `null`, `"x"`, `{"request_id":{}}`, `<html>`, "", "OK",
	} {
		f.Add([]byte(s), "")
	}
	f.Add([]byte(`{"result":{"ids":["a","b"]}}`), "/result/ids/0")
	f.Add([]byte(`{"a/b":{"~x":"y"}}`), "/a~1b/~0x")
	f.Fuzz(func(t *testing.T, b []byte, pointer string) {
		var p *rawjson.Pointer
		if pointer != "" {
			ptr, err := rawjson.ParsePointer(pointer)
			if err != nil {
				return
			}
			p = &ptr
		}
		var doc []byte
		if json.Valid(b) {
			doc = b
		}
		id := findRequestID(doc, p)
		if id != "" && !json.Valid(b) {
			t.Errorf("an id %q from a body that is not JSON: %q", id, b)
		}
		if doc == nil {
			return
		}
		// The same id as the answer decoded whole would give.
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			if want := decodedRequestID(v, p); id != want && utf8.Valid(doc) {
				t.Errorf("id %q, decoded %q, from %q", id, want, doc)
			}
		}
	})
}

// decodedRequestID is findRequestID over a decoded answer: the oracle of
// the text version.
func decodedRequestID(v any, p *rawjson.Pointer) string {
	text := func(x any) string {
		switch x := x.(type) {
		case string:
			return x
		case json.Number:
			return x.String()
		}
		return ""
	}
	if p != nil {
		// The decoded answer written out again, and looked up there:
		// rawjson's own fuzz holds Lookup to a decoded walk.
		re, _ := json.Marshal(v)
		x, err := p.Lookup(re)
		if err != nil {
			return ""
		}
		return rawjson.Text(x)
	}
	field := func(v any, k string) any { m, _ := v.(map[string]any); return m[k] }
	first := func(v any) any {
		if l, ok := v.([]any); ok && len(l) > 0 {
			return l[0]
		}
		return nil
	}
	for _, scope := range []any{v, field(v, "data"), first(field(v, "data")), first(v)} {
		for _, k := range []string{"request_id", "id", "message_id"} {
			if id := text(field(scope, k)); id != "" {
				return id
			}
		}
	}
	return ""
}

func FuzzErrorReason(f *testing.F) {
	for _, s := range []string{
		`{"error":{"code":"invalid_field","message":"to[0] is not valid"}}`,
		`{"error":"invalid_request","error_description":"grant_type is missing"}`,
		`{"message":"Forbidden","code":403}`, `{"detail":"Not found"}`, `{"errors":[{"message":"bad"}]}`,
		`Service Unavailable`, `<html><body>502</body></html>`, `{}`, `[]`, `null`, "",
		`{"error":{"error":{"error":"deep"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		errorReason(b) // must not panic, whatever the shape
	})
}

func FuzzParseToken(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"abc","valid_till":"2030-01-02 03:04:05"}`,
		`{"access_token":"","valid_till":"2030-01-02 03:04:05"}`,
		`{"access_token":"abc","valid_till":"2030-13-02 03:04:05"}`,
		`{"access_token":"abc","valid_till":"2030-01-02T03:04:05Z"}`,
		`{"access_token":"a b","valid_till":"2030-01-02 03:04:05"}`,
		`{}`, `null`, `<html>`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := parseToken(b)
		if err != nil {
			if tok.Value != "" {
				t.Errorf("returned a token with an error")
			}
			return
		}
		if tok.Value == "" || tok.ValidTill.IsZero() || tok.ValidTill.Location() != time.UTC {
			t.Errorf("accepted %q as %+v", b, tok)
		}
	})
}

// TestIssueTokenBasicAuto: with the Basic form left open, the client sends
// base64 first and the literal form once on a 401, and says which worked.
func TestIssueTokenBasicAuto(t *testing.T) {
	for _, tt := range []struct {
		name     string
		accepts  string // what the server takes: base64, literal, or neither
		want     string
		requests int
	}{
		{"base64 provider", BasicBase64, BasicBase64, 1},
		{"literal provider", BasicLiteral, BasicLiteral, 2},
		{"wrong secret", "", "", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				forms := map[string]string{
					"Basic " + base64.StdEncoding.EncodeToString([]byte(testID+":"+testSecret)): BasicBase64,
					"Basic " + testID + ":" + testSecret:                                        BasicLiteral,
				}
				if tt.accepts == "" || forms[r.Header.Get("Authorization")] != tt.accepts {
					w.WriteHeader(401)
					io.WriteString(w, `{"error":"invalid_client","error_description":"client authentication failed"}`)
					return
				}
				io.WriteString(w, `{"access_token":"abc","valid_till":"2030-01-02 03:04:05"}`)
			}))
			defer srv.Close()
			tok, err := (&Client{BaseURL: srv.URL, ClientID: testID, ClientSecret: testSecret}).IssueToken(context.Background(), 1)
			if int(n.Load()) != tt.requests {
				t.Errorf("%d requests, want %d", n.Load(), tt.requests)
			}
			if tt.want == "" {
				if e := asError(t, err); e.Status != 401 || !strings.Contains(err.Error(), "client authentication failed") {
					t.Errorf("got %v, want the provider's 401 and its reason", err)
				}
				return
			}
			if err != nil || tok.Basic != tt.want {
				t.Errorf("got %+v, %v; want the %s form remembered", tok, err, tt.want)
			}
		})
	}
}

// TestIssueTokenExpiredOnArrival: a valid_till already past is no token,
// and the message says whose clock is wrong when the Date header tells.
func TestIssueTokenExpiredOnArrival(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, till, date, want string
	}{
		{"provider clock", "2026-11-23 11:00:00", "Mon, 23 Nov 2026 11:30:00 GMT", "the provider issues tokens that are already expired"},
		{"our clock", "2026-11-23 11:00:00", "Mon, 23 Nov 2026 10:30:00 GMT", "check this machine's clock"},
		{"no date", "2026-11-23 11:00:00", "", "already in the past"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Date"] = []string{tt.date}
				io.WriteString(w, `{"access_token":"abc","valid_till":"`+tt.till+`"}`)
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, ClientID: testID, ClientSecret: testSecret, Now: func() time.Time { return now }}
			_, err := c.IssueToken(context.Background(), 1)
			if e := asError(t, err); e.Status != 200 || !strings.Contains(err.Error(), "no token issued") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want no token issued: %s", err, tt.want)
			}
		})
	}
}

// TestIssueTokenJustLapsed: a token of a second's life that lapses on the
// way by this machine's clock, though not by the provider's Date, is asked
// for once more; one that lapses again is no token.
func TestIssueTokenJustLapsed(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 300e6, time.UTC)
	for _, tt := range []struct {
		name     string
		tills    []string // valid_till of each answer in turn
		requests int
		ok       bool
	}{
		{"the second one lives", []string{"2026-11-23 12:00:00", "2026-11-23 12:00:01"}, 2, true},
		{"the second one lapses too", []string{"2026-11-23 12:00:00", "2026-11-23 12:00:00"}, 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := min(int(n.Add(1)), len(tt.tills)) - 1
				w.Header()["Date"] = []string{"Mon, 23 Nov 2026 11:59:59 GMT"}
				io.WriteString(w, `{"access_token":"abc","valid_till":"`+tt.tills[i]+`"}`)
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, ClientID: testID, ClientSecret: testSecret, Now: func() time.Time { return now }}
			tok, err := c.IssueToken(context.Background(), 1)
			if int(n.Load()) != tt.requests || (err == nil) != tt.ok || tt.ok && tok.Value != "abc" {
				t.Errorf("%d requests, token %+v, %v; want %d requests, a token: %v", n.Load(), tok, err, tt.requests, tt.ok)
			}
		})
	}
}

// TestSendSuccessShapes: the spec shows no success payload, so any 2xx is
// sent, whatever its body; the status is kept as given and a request id is
// found where providers put one.
func TestSendSuccessShapes(t *testing.T) {
	for _, tt := range []struct {
		name        string
		status      int
		contentType string
		body        string
		pointer     string
		wantID      string
	}{
		{"sandbox", 200, "application/json", `{"request_id":"req_1","accepted":2,"segments":2}`, "", "req_1"},
		{"empty object", 200, "application/json", `{}`, "", ""},
		{"status only", 200, "application/json", `{"status":"accepted"}`, "", ""},
		{"message_id", 200, "application/json", `{"message_id":"m-77"}`, "", "m-77"},
		{"numeric id", 201, "application/json", `{"id":1234567890123}`, "", "1234567890123"},
		{"20-digit id", 201, "application/json", `{"id":12345678901234567890}`, "", "12345678901234567890"},
		{"under data", 200, "application/json", `{"data":{"id":"d-1","status":"queued"}}`, "", "d-1"},
		{"list under data", 202, "application/json", `{"data":[{"message_id":"x-1"},{"message_id":"x-2"}]}`, "", "x-1"},
		{"empty list", 200, "application/json", `[]`, "", ""},
		{"accepted", 202, "application/json", `{"batch":"b"}`, "", ""},
		{"no content", 204, "", ``, "", ""},
		{"text", 200, "text/plain", `OK`, "", ""},
		{"html", 200, "text/html", `<html>queued</html>`, "", ""},
		{"JSON with the wrong type", 200, "application/json", `{"id":{"x":1}}`, "", ""},
		{"pointer", 200, "application/json", `{"result":{"refs":["r-9"]}}`, "/result/refs/0", "r-9"},
		{"pointer to nothing", 200, "application/json", `{"id":"top"}`, "/result/ref", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL}
			if tt.pointer != "" {
				p := rawjson.MustPointer(tt.pointer)
				c.RequestIDField = &p
			}
			resp, err := c.Send(context.Background(), testToken, testReq)
			if err != nil || resp.Status != tt.status || resp.RequestID != tt.wantID {
				t.Errorf("got %+v, %v; want sent with status %d and request id %q", resp, err, tt.status, tt.wantID)
			}
		})
	}
}

// TestErrorReasons: the provider's own words are kept whatever the shape of
// its error body, bounded and without numbers or secrets.
func TestErrorReasons(t *testing.T) {
	for _, tt := range []struct {
		name, body, code, msg string
	}{
		{"ours", `{"error":{"code":"invalid_field","message":"body is too long"}}`, "invalid_field", "body is too long"},
		{"oauth", `{"error":"invalid_request","error_description":"from is not an approved sender"}`, "invalid_request", "from is not an approved sender"},
		{"message and code", `{"message":"Insufficient balance","code":4021}`, "4021", "Insufficient balance"},
		{"detail", `{"detail":"Sender ID not registered"}`, "", "Sender ID not registered"},
		{"errors list", `{"errors":[{"code":"E1","message":"first"},{"message":"second"}]}`, "E1", "first"},
		{"text", `Sender blocked for +14155550101 with token ` + testToken, "", "Sender blocked for +[number] with token [redacted]"},
		{"long", strings.Repeat("x", 1000), "", strings.Repeat("x", 300) + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(400)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			_, err := (&Client{BaseURL: srv.URL}).Send(context.Background(), testToken, testReq)
			e := asError(t, err)
			checkSafe(t, err)
			if e.Code != tt.code || e.Message != tt.msg || e.Status != 400 {
				t.Errorf("got code %q message %q (HTTP %d), want %q %q", e.Code, e.Message, e.Status, tt.code, tt.msg)
			}
		})
	}
}

// TestParseValidTill: valid_till in the spec's form and in RFC 3339, read
// into UTC.
func TestParseValidTill(t *testing.T) {
	want := time.Date(2026, 11, 26, 13, 0, 0, 0, time.UTC)
	for _, in := range []string{
		"2026-11-26 13:00:00", "2026-11-26T13:00:00Z", "2026-11-26T13:00:00+00:00", "2026-11-26T13:00:00.000Z",
		"2026-11-26T14:00:00+01:00", "2026-11-26T08:30:00-04:30", "2026-11-26 13:00:00Z", "2026-11-26t13:00:00z",
		"2026-11-26T13:00:00", "2026-11-26T15:00:00.000000+02:00",
	} {
		got, ok := parseValidTill(in)
		if !ok || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("parseValidTill(%q) = %v, %v; want %v in UTC", in, got, ok, want)
		}
	}
	if got, ok := parseValidTill("2026-11-26 13:00:00.250"); !ok || got.Nanosecond() != 250e6 {
		t.Errorf("fractions: %v %v", got, ok)
	}
	for _, bad := range []string{"", "2026-11-26", "26/11/2026 13:00:00", "2026-11-26T13:00:00+0100", "2026-11-26 25:00:00", "tomorrow"} {
		if got, ok := parseValidTill(bad); ok {
			t.Errorf("parseValidTill(%q) = %v, want refused", bad, got)
		}
	}
}
