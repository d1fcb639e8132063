package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/cli"
)

// provider is how one imagined provider answers: every row of
// TestProviderConformance is a behaviour the messaging API's description
// allows (or a real provider shows), served by a real HTTP server on
// loopback, never our sandbox.
type provider struct {
	token func(w http.ResponseWriter, r *http.Request) // nil: a valid token for base64 Basic
	send  func(w http.ResponseWriter, r *http.Request, n int)
}

// answer writes status, body and headers given as "Name: value" pairs.
func answer(status int, body string, headers ...string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		for _, h := range headers {
			k, v, _ := strings.Cut(h, ": ")
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// thenOK answers first, then 200 {} from the second request on.
func thenOK(first func(http.ResponseWriter, *http.Request, int)) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			first(w, r, n)
			return
		}
		io.WriteString(w, `{}`)
	}
}

func validToken(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintf(w, `{"access_token":"tok-conformance","valid_till":%q}`, time.Now().Add(time.Hour).UTC().Format(api.ValidTillLayout))
}

const (
	confID     = "conformance-id"
	confSecret = "conformance-secret"
)

// TestProviderConformance applies a two-recipient campaign (one batch)
// end to end, through the command line, against each provider behaviour,
// and checks the exit code, what the state records (through apply's JSON
// events and state list) and what the person is told.
func TestProviderConformance(t *testing.T) {
	type want struct {
		exit                  int
		sent, failed, inDoubt int
		status                int    // http_status of the batch event
		requestID             string // of the batch event
		reason, stderr        string // substrings
		noState               bool   // nothing was written: no state file
		sendRequests          int    // 0: do not check
		campaignExtra         string
		tokenRetries          int // retry events without a batch: waits for a token
	}
	rows := []struct {
		name string
		p    provider
		w    want
	}{
		// Success: any 2xx is sent, whatever the body.
		{"200 sandbox shape", provider{send: answer(200, `{"request_id":"r-1","accepted":2,"segments":2}`)}, want{sent: 2, status: 200, requestID: "r-1"}},
		{"200 empty object", provider{send: answer(200, `{}`)}, want{sent: 2, status: 200}},
		{"200 status only", provider{send: answer(200, `{"status":"accepted"}`)}, want{sent: 2, status: 200}},
		{"200 message_id", provider{send: answer(200, `{"message_id":"m-7"}`)}, want{sent: 2, status: 200, requestID: "m-7"}},
		{"200 under data", provider{send: answer(200, `{"data":{"id":"d-3","state":"queued"}}`)}, want{sent: 2, status: 200, requestID: "d-3"}},
		{"200 list", provider{send: answer(200, `[]`)}, want{sent: 2, status: 200}},
		{"201 numeric id", provider{send: answer(201, `{"id":90210}`, "Content-Type: application/json")}, want{sent: 2, status: 201, requestID: "90210"}},
		{"202 accepted", provider{send: answer(202, `{"batch":"later"}`)}, want{sent: 2, status: 202}},
		{"204 no content", provider{send: answer(204, ``)}, want{sent: 2, status: 204}},
		{"200 text", provider{send: answer(200, "OK\n", "Content-Type: text/plain")}, want{sent: 2, status: 200}},
		{"200 request_id_field", provider{send: answer(200, `{"result":{"refs":["x-9"]}}`)},
			want{sent: 2, status: 200, requestID: "x-9", campaignExtra: "  request_id_field: /result/refs/0\n"}},
		// Refusals: the provider's words, whatever their shape.
		{"400 error object", provider{send: answer(400, `{"error":{"code":"body_too_long","message":"body exceeds 612 characters"}}`)},
			want{exit: 3, failed: 2, status: 400, reason: "body exceeds 612 characters"}},
		{"400 oauth", provider{send: answer(400, `{"error":"invalid_request","error_description":"from is not an approved sender"}`)},
			want{exit: 3, failed: 2, status: 400, reason: "from is not an approved sender"}},
		{"422 message and code", provider{send: answer(422, `{"message":"Insufficient balance","code":4021}`)},
			want{exit: 3, failed: 2, status: 422, reason: "Insufficient balance"}},
		{"400 detail", provider{send: answer(400, `{"detail":"Sender ID not registered"}`)},
			want{exit: 3, failed: 2, status: 400, reason: "Sender ID not registered"}},
		{"400 text", provider{send: answer(400, "Message rejected: content filter\n", "Content-Type: text/plain")},
			want{exit: 3, failed: 2, status: 400, reason: "Message rejected: content filter"}},
		{"403 after a success fails the batch", provider{send: func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 1 {
				io.WriteString(w, `{}`)
				return
			}
			answer(403, `{"error":{"code":"blocked","message":"destination blocked"}}`)(w, r, n)
		}}, want{exit: 3, sent: 1, failed: 1, reason: "destination blocked", campaignExtra: "batch_size: 1\n"}},
		// Statuses that say nothing about the recipients: the run stops, no one failed.
		{"404 wrong base URL", provider{send: answer(404, "404 page not found\n")},
			want{exit: 1, stderr: "check the base URL", sendRequests: 1}},
		{"405", provider{send: answer(405, ``)}, want{exit: 1, stderr: "check the base URL", sendRequests: 1}},
		{"403 before any success", provider{send: answer(403, `{"error":"forbidden","error_description":"account lacks the sms scope"}`)},
			want{exit: 1, stderr: "lack the permission to send", sendRequests: 1}},
		{"307 not followed", provider{send: answer(307, ``, "Location: https://eu.example.com/api/v1/send/bulk_sms")},
			want{exit: 1, stderr: `asks for "https://eu.example.com/api/v1/send/bulk_sms"`, sendRequests: 1}},
		// Not acted on: retried.
		{"408 then 200", provider{send: thenOK(answer(408, ``, "Retry-After: 0"))}, want{sent: 2, status: 200, sendRequests: 2}},
		{"503 then 200", provider{send: thenOK(answer(503, `{"detail":"busy"}`, "Retry-After: 0"))}, want{sent: 2, status: 200, sendRequests: 2}},
		// May have acted: in doubt.
		{"500", provider{send: answer(500, `{"error":{"code":"internal","message":"oops"}}`)}, want{exit: 3, inDoubt: 2, status: 500}},
		{"303 after acting", provider{send: answer(303, ``, "Location: /status/1")}, want{exit: 3, inDoubt: 2, status: 303}},
		// The token endpoint.
		{"token answer unreadable", provider{token: func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "<html>welcome</html>") }},
			want{exit: 1, stderr: "no token issued", noState: true, sendRequests: -1}},
		{"token refused 400 with reason", provider{token: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"unsupported_grant_type","error_description":"grant not enabled for this client"}`)
		}}, want{exit: 1, stderr: "grant not enabled for this client", noState: true, sendRequests: -1}},
		{"token valid_hour refused", provider{token: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"invalid_request","error_description":"valid_hour must be at most 12"}`)
		}}, want{exit: 1, stderr: "valid_hour must be at most 12\nhint: the token endpoint refused the request itself (400), not the credentials: the likely cause is valid_hour or grant_type",
			noState: true, sendRequests: -1}},
		{"token valid_till in RFC 3339", provider{token: func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `{"access_token":"tok-conformance","valid_till":%q}`, time.Now().Add(time.Hour).Format("2006-01-02T15:04:05.000-07:00"))
		}, send: answer(200, `{}`)}, want{sent: 2, status: 200}},
		{"token valid_till in RFC 3339, already past", provider{token: func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `{"access_token":"tok-conformance","valid_till":%q}`, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		}}, want{exit: 1, stderr: "already expired", noState: true, sendRequests: -1}},
		{"token already expired", provider{token: func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `{"access_token":"t","valid_till":%q}`, time.Now().Add(-time.Hour).UTC().Format(api.ValidTillLayout))
		}}, want{exit: 1, stderr: "provider issues tokens that are already expired", noState: true, sendRequests: -1}},
		{"token endpoint takes the literal form", provider{token: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Basic "+confID+":"+confSecret {
				w.WriteHeader(401)
				return
			}
			validToken(w, r)
		}, send: answer(200, `{}`)}, want{sent: 2, status: 200}},
		{"token endpoint busy, then a token", provider{token: func() func(http.ResponseWriter, *http.Request) {
			var n atomic.Int32
			return func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(503)
					return
				}
				validToken(w, r)
			}
		}(), send: answer(200, `{}`)}, want{sent: 2, status: 200, tokenRetries: 1}},
		{"wrong credentials", provider{token: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"invalid_client"}`)
		}}, want{exit: 1, stderr: "provider.basic_auth", noState: true, sendRequests: -1}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			var sends atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case api.TokenPath:
					if row.p.token != nil {
						row.p.token(w, r)
						return
					}
					if r.Header.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte(confID+":"+confSecret)) {
						w.WriteHeader(401)
						return
					}
					validToken(w, r)
				case api.SendPath:
					if r.Header.Get("Authorization") != "Bearer tok-conformance" && row.p.token == nil {
						w.WriteHeader(401)
						return
					}
					row.p.send(w, r, int(sends.Add(1)))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()

			dir := t.TempDir()
			campaign := "version: 1\nname: conformance\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123459\", \"+447400123564\"]\nbody: \"Hello.\"\n"
			if extra := row.w.campaignExtra; strings.HasPrefix(extra, "  ") {
				campaign += "provider:\n" + extra
			} else {
				campaign += extra
			}
			writeFile(t, filepath.Join(dir, "c.yaml"), campaign)
			env := map[string]string{
				"SMSFORM_BASE_URL": srv.URL, "SMSFORM_CLIENT_ID": confID, "SMSFORM_CLIENT_SECRET": confSecret,
				"SMSFORM_TOKEN_DIR": filepath.Join(dir, "tokens"), "CI": "true",
			}
			var stdout, stderr strings.Builder
			err := cli.Run(context.Background(), []string{"apply", filepath.Join(dir, "c.yaml"), "--auto-approve", "--json"},
				cli.Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }})
			code := exitCode(err, &stderr)
			if code != row.w.exit {
				t.Errorf("exit %d, want %d\nstderr: %s", code, row.w.exit, stderr.String())
			}
			if row.w.stderr != "" && !strings.Contains(stderr.String(), row.w.stderr) {
				t.Errorf("stderr does not say %q:\n%s", row.w.stderr, stderr.String())
			}
			if strings.Contains(stderr.String()+stdout.String(), confSecret) || strings.Contains(stderr.String()+stdout.String(), "447400123") {
				t.Errorf("output shows the secret or a number:\n%s\n%s", stdout.String(), stderr.String())
			}
			switch n := int(sends.Load()); {
			case row.w.sendRequests > 0 && n != row.w.sendRequests:
				t.Errorf("%d send requests, want %d", n, row.w.sendRequests)
			case row.w.sendRequests < 0 && n != 0:
				t.Errorf("%d send requests, want none", n)
			}
			statePath := filepath.Join(dir, "c.smsstate")
			if row.w.noState {
				if _, err := os.Stat(statePath); !os.IsNotExist(err) {
					t.Errorf("a state file was left behind (%v)", err)
				}
				return
			}

			// What apply reported, batch by batch.
			var sent, failed, inDoubt, tokenRetries int
			sc := bufio.NewScanner(strings.NewReader(stdout.String()))
			for sc.Scan() {
				var e struct {
					Type       string `json:"type"`
					Recipients int    `json:"recipients"`
					HTTPStatus int    `json:"http_status"`
					RequestID  string `json:"request_id"`
					Reason     string `json:"reason"`
				}
				if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
					t.Fatalf("event %q: %v", sc.Text(), err)
				}
				var batch struct {
					Batch string `json:"batch"`
				}
				json.Unmarshal(sc.Bytes(), &batch)
				switch e.Type {
				case "retry":
					if batch.Batch == "" {
						tokenRetries++
					}
				case "batch_sent", "batch_failed", "batch_in_doubt":
					if row.w.status != 0 && e.HTTPStatus != row.w.status {
						t.Errorf("%s: http_status %d, want %d", e.Type, e.HTTPStatus, row.w.status)
					}
					if e.Type == "batch_sent" && e.RequestID != row.w.requestID {
						t.Errorf("request_id %q, want %q", e.RequestID, row.w.requestID)
					}
					if e.Type == "batch_failed" && !strings.Contains(e.Reason, row.w.reason) {
						t.Errorf("reason %q, want it to hold %q", e.Reason, row.w.reason)
					}
				}
			}

			if tokenRetries != row.w.tokenRetries {
				t.Errorf("%d retry events for the token, want %d", tokenRetries, row.w.tokenRetries)
			}

			// What the state records.
			var list strings.Builder
			if err := cli.Run(context.Background(), []string{"state", "list", "--state", statePath, "--json"},
				cli.Env{Stdout: &list, Stderr: io.Discard, Getenv: func(string) string { return "" }}); err != nil {
				if row.w.sent+row.w.failed+row.w.inDoubt == 0 && strings.Contains(err.Error(), "no state") {
					return
				}
				t.Fatalf("state list: %v", err)
			}
			var doc struct {
				Counts     map[string]int `json:"counts"`
				Recipients []struct {
					Status, Reason string
				} `json:"recipients"`
			}
			if err := json.Unmarshal([]byte(list.String()), &doc); err != nil {
				t.Fatal(err)
			}
			sent, failed, inDoubt = doc.Counts["sent"], doc.Counts["failed"], doc.Counts["in_doubt"]
			if sent != row.w.sent || failed != row.w.failed || inDoubt != row.w.inDoubt {
				t.Errorf("state: %d sent, %d failed, %d in doubt; want %d, %d, %d", sent, failed, inDoubt, row.w.sent, row.w.failed, row.w.inDoubt)
			}
			for _, r := range doc.Recipients {
				if r.Status == "failed" && !strings.Contains(r.Reason, row.w.reason) {
					t.Errorf("state keeps reason %q, want it to hold %q", r.Reason, row.w.reason)
				}
			}
		})
	}
}
