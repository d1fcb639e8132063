package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/sandbox"
)

const (
	clientID     = "sandbox-client"
	clientSecret = "Sandbox-Secret-4f9a2c81"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// env is a sandbox behind a loopback httptest server, with a client.
type env struct {
	srv    *sandbox.Server
	hs     *httptest.Server
	client *api.Client
	clock  *clock
	log    *syncBuffer
	outbox *syncBuffer
}

// start serves a sandbox made from cfg, filling in credentials, a clock
// (unless cfg.Now is set), a log and an outbox.
func start(t testing.TB, cfg sandbox.Config) *env {
	t.Helper()
	e := &env{clock: &clock{t: epoch}, log: &syncBuffer{}, outbox: &syncBuffer{}}
	cfg.ClientID, cfg.ClientSecret = clientID, clientSecret
	if cfg.Now == nil {
		cfg.Now = e.clock.Now
	}
	if cfg.Outbox == nil {
		cfg.Outbox = e.outbox
	}
	cfg.Log = slog.New(slog.NewTextHandler(e.log, nil))
	srv, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	t.Cleanup(srv.Close) // after the server: reports stop last
	e.hs = httptest.NewServer(srv)
	t.Cleanup(e.hs.Close)
	e.client = &api.Client{BaseURL: e.hs.URL, ClientID: clientID, ClientSecret: clientSecret, Timeout: 10 * time.Second, Now: e.clock.Now}
	return e
}

// token issues a token with the client.
func (e *env) token(t testing.TB) string {
	t.Helper()
	tok, err := e.client.IssueToken(context.Background(), 0)
	if err != nil {
		t.Fatalf("issue token: %v", err)
	}
	return tok.Value
}

// reply is a raw HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
	err    api.ErrorDetail
}

// post sends body to path with the Authorization auth and Content-Type ct
// ("" leaves a header out).
func (e *env) post(t testing.TB, path, auth, ct, body string) reply {
	t.Helper()
	return e.do(t, http.MethodPost, path, auth, ct, strings.NewReader(body))
}

func (e *env) do(t testing.TB, method, path, auth, ct string, body io.Reader) reply {
	t.Helper()
	req, err := http.NewRequest(method, e.hs.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := e.hs.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: b}
	if resp.StatusCode >= 300 {
		var er api.ErrorResponse
		if err := json.Unmarshal(b, &er); err != nil || er.Error.Code == "" || er.Error.Message == "" {
			t.Errorf("%s %s: %d body %q is not the error shape", method, path, resp.StatusCode, b)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("error Content-Type %q", ct)
		}
		r.err = er.Error
	}
	return r
}

// numbers returns n distinct valid mobile numbers starting at the i-th.
func numbers(t testing.TB, i, n int) []string {
	t.Helper()
	out := make([]string, n)
	for k := range out {
		out[k] = fmt.Sprintf("+3361234%04d", i+k)
	}
	if _, err := e164.NewNormalizer("").Normalize(out[0]); err != nil {
		t.Fatalf("test number %s: %v", out[0], err)
	}
	return out
}

func sendBody(t testing.TB, from string, to []string, body string) string {
	t.Helper()
	b, err := json.Marshal(api.SendRequest{From: from, To: to, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func asAPIError(t testing.TB, err error) *api.Error {
	t.Helper()
	e, ok := err.(*api.Error)
	if !ok {
		t.Fatalf("error %v (%T) is not an *api.Error", err, err)
	}
	return e
}

// outboxLines decodes the outbox writer's JSON lines.
func outboxLines(t testing.TB, s string) []sandbox.Message {
	t.Helper()
	var out []sandbox.Message
	dec := json.NewDecoder(strings.NewReader(s))
	for dec.More() {
		var m sandbox.Message
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("outbox line: %v", err)
		}
		out = append(out, m)
	}
	if strings.Count(s, "\n") != len(out) {
		t.Errorf("outbox has %d lines for %d records", strings.Count(s, "\n"), len(out))
	}
	return out
}

// stopRun cancels a sandbox.Run and waits for it to return cleanly.
func stopRun(t *testing.T, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
