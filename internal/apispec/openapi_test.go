package apispec_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/sandbox"
)

// specPath is the OpenAPI description of the API as the sandbox serves it.
const specPath = "../../api/openapi.yaml"

const (
	clientID     = "sandbox-client"
	clientSecret = "Sandbox-Secret-4f9a2c81"
)

var basicB64 = "Basic " + base64.StdEncoding.EncodeToString([]byte(clientID+":"+clientSecret))

// env is a sandbox behind a loopback httptest server, with a client and a
// settable clock.
type env struct {
	hs        *httptest.Server
	client    *api.Client
	clock     *clock
	rawClient *http.Client // for hand-made requests
}

func start(t *testing.T, cfg sandbox.Config) *env {
	t.Helper()
	e := &env{clock: &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	cfg.ClientID, cfg.ClientSecret, cfg.Now = clientID, clientSecret, e.clock.Now
	srv, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	e.hs = httptest.NewServer(srv)
	t.Cleanup(e.hs.Close)
	e.client = &api.Client{BaseURL: e.hs.URL, ClientID: clientID, ClientSecret: clientSecret, Timeout: 10 * time.Second, Now: e.clock.Now}
	return e
}

// token issues a token with the client.
func (e *env) token(t *testing.T) string {
	t.Helper()
	tok, err := e.client.IssueToken(context.Background(), 0)
	if err != nil {
		t.Fatalf("issue token: %v", err)
	}
	return tok.Value
}

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

// numbers returns n distinct valid French mobile numbers starting at the
// i-th (the sandbox refuses numbers that are not valid).
func numbers(_ *testing.T, i, n int) []string {
	out := make([]string, n)
	for k := range out {
		out[k] = fmt.Sprintf("+3361234%04d", i+k)
	}
	return out
}

// conformance checks each request and response that passes through it
// against the OpenAPI description.
type conformance struct {
	t      *testing.T
	router routers.Router
	base   http.RoundTripper

	mu      sync.Mutex
	reqErr  error // of the last request
	checked map[string]bool
}

func newConformance(t *testing.T, baseURL string) *conformance {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(specPath)
	if err != nil {
		t.Fatalf("load %s: %v", specPath, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s is not valid OpenAPI: %v", specPath, err)
	}
	doc.Servers = openapi3.Servers{{URL: baseURL}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &conformance{t: t, router: router, base: http.DefaultTransport, checked: map[string]bool{}}
}

// authenticate checks that the request carries the scheme the operation
// asks for; whether the credential is right is the server's business.
func authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	scheme, _, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, in.SecurityScheme.Scheme) {
		return fmt.Errorf("authorization scheme %q, want %s", scheme, in.SecurityScheme.Scheme)
	}
	return nil
}

func (c *conformance) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	check := req.Clone(req.Context())
	check.Body = io.NopCloser(bytes.NewReader(body))

	route, params, err := c.router.FindRoute(check)
	if err != nil {
		c.t.Errorf("%s %s: not in the OpenAPI description: %v", req.Method, req.URL.Path, err)
		return c.base.RoundTrip(req)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: check, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: authenticate, MultiError: true},
	}
	reqErr := openapi3filter.ValidateRequest(req.Context(), in)
	c.mu.Lock()
	c.reqErr = reqErr
	c.mu.Unlock()

	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		c.t.Errorf("%s %s → %d %s: response does not conform: %v", req.Method, req.URL.Path, resp.StatusCode, clip(respBody), err)
	}
	c.mu.Lock()
	c.checked[fmt.Sprintf("%s %s %d", req.Method, route.Path, resp.StatusCode)] = true
	c.mu.Unlock()
	return resp, nil
}

func (c *conformance) lastRequestErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reqErr
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// TestOpenAPI sends the client's requests and hand-made bad ones to the
// sandbox and checks both sides against api/openapi.yaml: the client's
// requests conform, every response the sandbox gives conforms, and the
// description refuses what the server refuses where a schema can say so.
func TestOpenAPI(t *testing.T) {
	type reqCheck int
	const (
		conforms reqCheck = iota
		violates
		either // valid by schema, refused by a rule a schema cannot state
	)
	tests := []struct {
		name   string
		cfg    sandbox.Config
		call   func(t *testing.T, e *env, tok string) error
		status int
		req    reqCheck
	}{
		{name: "client token base64", status: 200, call: func(t *testing.T, e *env, _ string) error {
			_, err := e.client.IssueToken(context.Background(), 12)
			return err
		}},
		{name: "client token literal", status: 200, call: func(t *testing.T, e *env, _ string) error {
			c := *e.client
			c.Basic = api.BasicLiteral
			_, err := c.IssueToken(context.Background(), 0)
			return err
		}},
		{name: "client send", status: 200, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 100), Body: "Hi, the spring sale starts today."})
			return err
		}},
		{name: "client send E.164 sender", status: 200, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "+14155550101", To: numbers(t, 0, 1), Body: "Grüße 👋"})
			return err
		}},
		{name: "client send, minimal body", cfg: sandbox.Config{SuccessBody: "minimal"}, status: 200, call: func(t *testing.T, e *env, tok string) error {
			r, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 2), Body: "hi"})
			if err == nil && (r.Status != 200 || r.RequestID == "") {
				t.Errorf("minimal body: %+v, want status 200 and the message_id as request id", r)
			}
			return err
		}},
		{name: "client send, 202", cfg: sandbox.Config{SuccessStatus: 202}, status: 200, call: func(t *testing.T, e *env, tok string) error {
			r, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 2), Body: "hi"})
			if err == nil && (r.Status != 202 || r.RequestID == "") {
				t.Errorf("202: %+v", r)
			}
			return err
		}},
		{name: "client send, 204", cfg: sandbox.Config{SuccessStatus: 204}, status: 200, call: func(t *testing.T, e *env, tok string) error {
			r, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 2), Body: "hi"})
			if err == nil && r.Status != 204 {
				t.Errorf("204: %+v", r)
			}
			return err
		}},
		{name: "client send, per-recipient results", cfg: sandbox.Config{SuccessBody: "results", RejectRate: 0.3, ThrottleRate: 0.3},
			status: 200, call: func(t *testing.T, e *env, tok string) error {
				c := *e.client
				status := rawjson.MustPointer("/status/groupName")
				c.Results = &mapping.Results{Lists: []mapping.List{{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/to"), Status: &status}}}
				r, err := c.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 20), Body: "hi"})
				if err == nil && (len(r.Answer.Elements) != 20 || r.Answer.Problem != "" || r.RequestID == "") {
					t.Errorf("results: %+v", r)
				}
				return err
			}},
		{name: "send repeated within the dedupe window", cfg: sandbox.Config{DedupeWindow: time.Minute}, status: 409, call: func(t *testing.T, e *env, tok string) error {
			req := api.SendRequest{From: "ACME", To: numbers(t, 0, 2), Body: "hi"}
			if _, err := e.client.Send(context.Background(), tok, req); err != nil {
				return err
			}
			_, err := e.client.Send(context.Background(), tok, req)
			return err
		}},
		{name: "client send short code", status: 200, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "12345", To: numbers(t, 0, 1), Body: "hi"})
			return err
		}},
		{name: "token wrong secret", status: 401, call: func(t *testing.T, e *env, _ string) error {
			c := *e.client
			c.ClientSecret = "wrong"
			_, err := c.IssueToken(context.Background(), 1)
			return err
		}},
		{name: "token valid_hour 169", status: 400, req: violates, call: func(t *testing.T, e *env, _ string) error {
			return e.raw(api.TokenPath, basicB64, "application/json", `{"grant_type":"client_credentials","valid_hour":169}`)
		}},
		{name: "token valid_hour string", status: 400, req: violates, call: func(t *testing.T, e *env, _ string) error {
			return e.raw(api.TokenPath, basicB64, "application/json", `{"grant_type":"client_credentials","valid_hour":"24"}`)
		}},
		{name: "token grant_type", status: 400, req: violates, call: func(t *testing.T, e *env, _ string) error {
			return e.raw(api.TokenPath, basicB64, "application/json", `{"grant_type":"password"}`)
		}},
		{name: "token text/plain", status: 415, req: violates, call: func(t *testing.T, e *env, _ string) error {
			return e.raw(api.TokenPath, basicB64, "text/plain", `{"grant_type":"client_credentials"}`)
		}},
		{name: "token over 1 MiB", status: 413, req: violates, call: func(t *testing.T, e *env, _ string) error {
			return e.raw(api.TokenPath, basicB64, "application/json", `{"grant_type":"client_credentials","pad":"`+strings.Repeat("a", 1<<20)+`"}`)
		}},
		{name: "send bad number", status: 400, req: violates, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: []string{"+33612340000", "+12"}, Body: "hi"})
			return err
		}},
		{name: "send duplicate", status: 400, req: violates, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: []string{"+33612340000", "+33612340000"}, Body: "hi"})
			return err
		}},
		{name: "send sender too long", status: 400, req: violates, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME Limited", To: numbers(t, 0, 1), Body: "hi"})
			return err
		}},
		{name: "send empty body", status: 400, req: violates, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 1)})
			return err
		}},
		{name: "send unknown field", status: 400, req: violates, call: func(t *testing.T, e *env, tok string) error {
			return e.raw(api.SendPath, "Bearer "+tok, "application/json", `{"from":"ACME","to":["+33612340000"],"body":"hi","x":1}`)
		}},
		{name: "send number invalid for its country", status: 400, req: either, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: []string{"+447700900123"}, Body: "hi"})
			return err
		}},
		{name: "send unknown token", status: 401, call: func(t *testing.T, e *env, _ string) error {
			_, err := e.client.Send(context.Background(), "sbx_unknown", api.SendRequest{From: "ACME", To: numbers(t, 0, 1), Body: "hi"})
			return err
		}},
		{name: "send expired token", cfg: sandbox.Config{TokenTTL: time.Minute}, status: 401, call: func(t *testing.T, e *env, tok string) error {
			e.clock.Add(time.Hour)
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 1), Body: "hi"})
			return err
		}},
		{name: "send without token", status: 401, req: violates, call: func(t *testing.T, e *env, _ string) error {
			return e.raw(api.SendPath, "", "application/json", `{"from":"ACME","to":["+33612340000"],"body":"hi"}`)
		}},
		{name: "send too many recipients", status: 413, req: violates, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 1001), Body: "hi"})
			return err
		}},
		{name: "send over 1 MiB", status: 413, req: violates, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 1), Body: strings.Repeat("a", 1<<20)})
			return err
		}},
		{name: "send text/plain", status: 415, req: violates, call: func(t *testing.T, e *env, tok string) error {
			return e.raw(api.SendPath, "Bearer "+tok, "text/plain", `{"from":"ACME","to":["+33612340000"],"body":"hi"}`)
		}},
		{name: "send rate limited", cfg: sandbox.Config{RateLimit: 1}, status: 429, call: func(t *testing.T, e *env, tok string) error {
			e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 1), Body: "hi"})
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 1), Body: "hi"})
			return err
		}},
		{name: "send server error", cfg: sandbox.Config{ErrorRate: 1}, status: 500, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 1), Body: "hi"})
			return err
		}},
		{name: "send unavailable", cfg: sandbox.Config{FailRate: 1}, status: 503, call: func(t *testing.T, e *env, tok string) error {
			_, err := e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 1), Body: "hi"})
			return err
		}},
		{name: "outbox", status: 200, call: func(t *testing.T, e *env, tok string) error {
			e.client.Send(context.Background(), tok, api.SendRequest{From: "ACME", To: numbers(t, 0, 2), Body: "hi"})
			return e.get(sandbox.MessagesPath, basicB64)
		}},
		{name: "outbox without credentials", status: 401, req: violates, call: func(t *testing.T, e *env, _ string) error {
			return e.get(sandbox.MessagesPath, "")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, tt.cfg)
			tok := e.token(t)
			c := newConformance(t, e.hs.URL)
			e.client.HTTP = &http.Client{Transport: c}
			e.rawClient = &http.Client{Transport: c}
			err := tt.call(t, e, tok)
			var status int
			var ae *api.Error
			var rs rawStatus
			switch {
			case errors.As(err, &ae):
				status = ae.Status
			case errors.As(err, &rs):
				status = int(rs)
			case err != nil:
				t.Fatal(err)
			default:
				status = 200 // success, whichever 2xx (the calls check which)
			}
			if status != tt.status {
				t.Errorf("status %d (%v), want %d", status, err, tt.status)
			}
			switch reqErr := c.lastRequestErr(); {
			case tt.req == conforms && reqErr != nil:
				t.Errorf("request does not conform: %v", reqErr)
			case tt.req == violates && reqErr == nil:
				t.Errorf("the description accepts a request the server refuses with %d", status)
			}
		})
	}
}

// rawStatus is the status of a raw request that was not 200.
type rawStatus int

func (r rawStatus) Error() string { return fmt.Sprintf("HTTP %d", int(r)) }

// raw posts a hand-made request through e.rawClient.
func (e *env) raw(path, auth, ct, body string) error {
	req, err := http.NewRequest(http.MethodPost, e.hs.URL+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", ct)
	return e.roundTrip(req)
}

func (e *env) get(path, auth string) error {
	req, err := http.NewRequest(http.MethodGet, e.hs.URL+path, nil)
	if err != nil {
		return err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return e.roundTrip(req)
}

func (e *env) roundTrip(req *http.Request) error {
	resp, err := e.rawClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return rawStatus(resp.StatusCode)
	}
	return nil
}
