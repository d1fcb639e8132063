package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/cli"
)

// fakeProvider is a provider of the test's own on loopback: it issues a
// token, hands each send to answer, and keeps its own count of what it
// delivered, the ground truth every case below is held to.
type fakeProvider struct {
	mu        sync.Mutex
	requests  int
	delivered map[string]int // number → times delivered
	refused   map[string]bool
	sizes     []int // recipients of each send request
	// answer decides a send (n counts from 1): deliver names the
	// recipients delivered; it writes the answer, or nothing to hang up.
	answer func(w http.ResponseWriter, n int, to []string, deliver func(...string))
}

func (p *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case api.TokenPath:
		validToken(w, r)
	case api.SendPath:
		var req api.SendRequest
		json.NewDecoder(r.Body).Decode(&req)
		p.mu.Lock()
		p.requests++
		n := p.requests
		p.sizes = append(p.sizes, len(req.To))
		p.mu.Unlock()
		p.answer(w, n, req.To, func(to ...string) {
			p.mu.Lock()
			defer p.mu.Unlock()
			for _, t := range to {
				p.delivered[t]++
			}
		})
	default:
		http.NotFound(w, r)
	}
}

// bulkAnswer writes a per-recipient answer: each recipient echoed without
// its + (as many providers store numbers) with the status statusOf gives,
// and delivers those it gives PENDING.
func bulkAnswer(to []string, deliver func(...string), statusOf func(i int) string) string {
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i, t := range to {
		st := statusOf(i)
		if st == "PENDING" {
			deliver(t)
		}
		if st == "" {
			continue // not mentioned
		}
		if b.Len() > len(`{"messages":[`) {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"to":%q,"messageId":"m-%s","status":{"groupName":%q,"description":"%s by the network"}}`,
			strings.TrimPrefix(t, "+"), t[len(t)-4:], st, strings.ToLower(st))
	}
	b.WriteString("]}")
	return b.String()
}

const resultsBlock = `provider:
  results:
    list: /messages
    number: /to
    status: /status/groupName
    reason: /status/description
    sent: [PENDING]
    retry: [THROTTLED]
    duplicate: [DUPLICATE]
    failed: [REJECTED]
`

var perRecipientNumbers = []string{"+447400123459", "+447400123564", "+447400123670", "+447400123781"}

// TestProviderPerRecipient applies a campaign of four recipients against
// each behaviour of a provider that answers recipient by recipient (and a
// few of any provider), through the command line, and holds the state to
// what the provider did: nobody delivered twice, nobody recorded sent that
// the provider refused or never mentioned.
func TestProviderPerRecipient(t *testing.T) {
	for _, tt := range []struct {
		name     string
		extra    string   // campaign lines
		args     []string // more apply flags
		answer   func(w http.ResponseWriter, n int, to []string, deliver func(...string))
		then     func(t *testing.T, run func(args ...string) (int, string, string, error)) // more commands after the first apply
		want     map[string]string                                                         // number → status in the state ("" unrecorded)
		reason   map[string]string                                                         // number → substring of its reason
		ids      map[string]string                                                         // number → provider id/batch id/status, nil: not checked
		requests int                                                                       // send requests, 0: not checked
		sizes    []int                                                                     // recipients per request, nil: not checked
		stderr   string
		check    func(t *testing.T, err error, stdout string)
	}{
		{
			name:  "rejections inside a 200",
			extra: resultsBlock,
			answer: func(w http.ResponseWriter, _ int, to []string, deliver func(...string)) {
				io.WriteString(w, bulkAnswer(to, deliver, func(i int) string { return map[bool]string{true: "REJECTED", false: "PENDING"}[i%2 == 1] }))
			},
			want:   map[string]string{"+447400123459": "sent", "+447400123564": "failed", "+447400123670": "sent", "+447400123781": "failed"},
			reason: map[string]string{"+447400123564": "REJECTED: rejected by the network"},
		},
		{
			name:  "throttled inside a 200, sent again until accepted",
			extra: resultsBlock,
			answer: func(w http.ResponseWriter, n int, to []string, deliver func(...string)) {
				io.WriteString(w, bulkAnswer(to, deliver, func(i int) string {
					if n < 3 && i == 0 {
						return "THROTTLED"
					}
					return "PENDING"
				}))
			},
			want:  map[string]string{"+447400123459": "sent", "+447400123564": "sent", "+447400123670": "sent", "+447400123781": "sent"},
			sizes: []int{4, 1, 1},
		},
		{
			name:  "each message's id and the request's are kept, a status nobody named is in doubt",
			extra: strings.Replace(resultsBlock, "    reason:", "    id: /messageId\n    reason:", 1) + "  batch_id: /bulkId\n",
			answer: func(w http.ResponseWriter, _ int, to []string, deliver func(...string)) {
				body := bulkAnswer(to, deliver, func(i int) string { return []string{"PENDING", "REJECTED", "PENDING", "Pending"}[i] })
				io.WriteString(w, `{"bulkId":"bulk-1",`+body[1:])
			},
			want:   map[string]string{"+447400123459": "sent", "+447400123564": "failed", "+447400123670": "sent", "+447400123781": "in_doubt"},
			reason: map[string]string{"+447400123781": `status "Pending", which provider.results`},
			ids: map[string]string{"+447400123459": "m-3459/bulk-1/", "+447400123564": "m-3564/bulk-1/REJECTED", "+447400123670": "m-3670/bulk-1/",
				"+447400123781": "m-3781/bulk-1/Pending"},
		},
		{
			name:  "a recipient missing from the list is in doubt",
			extra: resultsBlock,
			answer: func(w http.ResponseWriter, _ int, to []string, deliver func(...string)) {
				deliver(to[3]) // delivered, but not said
				io.WriteString(w, bulkAnswer(to, deliver, func(i int) string { return map[bool]string{true: "", false: "PENDING"}[i == 3] }))
			},
			want:   map[string]string{"+447400123459": "sent", "+447400123564": "sent", "+447400123670": "sent", "+447400123781": "in_doubt"},
			reason: map[string]string{"+447400123781": "does not mention this recipient"},
		},
		{
			name:  "an answer without the list is in doubt",
			extra: resultsBlock,
			answer: func(w http.ResponseWriter, _ int, to []string, deliver func(...string)) {
				deliver(to...)
				io.WriteString(w, `{"status":"queued"}`)
			},
			want:   map[string]string{"+447400123459": "in_doubt", "+447400123564": "in_doubt", "+447400123670": "in_doubt", "+447400123781": "in_doubt"},
			reason: map[string]string{"+447400123459": "no list of recipients at /messages"},
		},
		{
			name: "409 after a resolve is never resent and never failed",
			answer: func(w http.ResponseWriter, n int, to []string, deliver func(...string)) {
				if n == 1 { // acted on, then the connection dropped
					deliver(to...)
					if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
						c.Close()
					}
					return
				}
				w.WriteHeader(409)
				io.WriteString(w, `{"error":{"code":"duplicate_request","message":"request already processed"}}`)
			},
			then: func(t *testing.T, run func(args ...string) (int, string, string, error)) {
				run("state", "resolve", "--in-doubt", "--as", "unsent")
				if code, _, stderr, _ := run("apply", "--auto-approve", "--json"); code != 3 {
					t.Errorf("apply after the resolve: exit %d, want 3\n%s", code, stderr)
				}
				run("state", "resolve", "--failed", "--as", "unsent") // must not touch them
				run("apply", "--auto-approve", "--json")
			},
			want:     map[string]string{"+447400123459": "in_doubt", "+447400123564": "in_doubt", "+447400123670": "in_doubt", "+447400123781": "in_doubt"},
			reason:   map[string]string{"+447400123459": "the provider reports it already has this message: send: HTTP 409 duplicate_request: request already processed"},
			requests: 2,
		},
		{
			name:  "413 halves the batch down to the provider's cap",
			extra: resultsBlock,
			answer: func(w http.ResponseWriter, _ int, to []string, deliver func(...string)) {
				if len(to) > 1 {
					w.WriteHeader(413)
					io.WriteString(w, `{"message":"at most 1 recipient per request"}`)
					return
				}
				io.WriteString(w, bulkAnswer(to, deliver, func(int) string { return "PENDING" }))
			},
			want:   map[string]string{"+447400123459": "sent", "+447400123564": "sent", "+447400123670": "sent", "+447400123781": "sent"},
			sizes:  []int{4, 2, 1, 1, 1, 1},
			stderr: "set provider.max_recipients",
			check: func(t *testing.T, _ error, stdout string) {
				if n := strings.Count(stdout, `"type":"warning"`); n != 1 {
					t.Errorf("%d warning events, want 1", n)
				}
			},
		},
		{
			name:  "provider.max_recipients is never exceeded",
			extra: "provider:\n  max_recipients: 3\n",
			answer: func(w http.ResponseWriter, _ int, to []string, deliver func(...string)) {
				deliver(to...)
				io.WriteString(w, `{}`)
			},
			want:  map[string]string{"+447400123459": "sent", "+447400123564": "sent", "+447400123670": "sent", "+447400123781": "sent"},
			sizes: []int{3, 1},
		},
		{
			name:  "a provider gone silent stops the run after 3 requests",
			extra: "batch_size: 1\n",
			args:  []string{"--request-timeout", "150ms"},
			answer: func(w http.ResponseWriter, _ int, to []string, deliver func(...string)) {
				deliver(to...)
				time.Sleep(time.Second) // longer than the client waits
			},
			want:     map[string]string{"+447400123459": "in_doubt", "+447400123564": "in_doubt", "+447400123670": "in_doubt", "+447400123781": ""},
			requests: 3,
			stderr:   "the provider stopped answering",
			check: func(t *testing.T, err error, _ string) {
				if !errors.As(err, new(*apply.SilentError)) {
					t.Errorf("error %v is not an apply.SilentError", err)
				}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakeProvider{delivered: map[string]int{}, answer: tt.answer}
			srv := httptest.NewServer(p)
			defer srv.Close()
			dir := t.TempDir()
			path := filepath.Join(dir, "c.yaml")
			writeFile(t, path, fmt.Sprintf("version: 1\nname: perrecipient\nsender: ACME\nrecipients:\n  - numbers: [%q, %q, %q, %q]\nbody: \"Hello.\"\n%s",
				perRecipientNumbers[0], perRecipientNumbers[1], perRecipientNumbers[2], perRecipientNumbers[3], tt.extra))
			env := map[string]string{"SMSFORM_BASE_URL": srv.URL, "SMSFORM_CLIENT_ID": confID, "SMSFORM_CLIENT_SECRET": confSecret,
				"SMSFORM_TOKEN_DIR": filepath.Join(dir, "tokens"), "CI": "true"}
			run := func(args ...string) (int, string, string, error) {
				args = append(args[:1:1], append([]string{path}, args[1:]...)...)
				if args[0] == "state" {
					args = append([]string{"state", args[2], path}, args[3:]...)
				}
				var stdout, stderr strings.Builder
				err := cli.Run(context.Background(), args, cli.Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }})
				return exitCode(err, &stderr), stdout.String(), stderr.String(), err
			}
			_, stdout, stderr, err := run(append([]string{"apply", "--auto-approve", "--json"}, tt.args...)...)
			if tt.stderr != "" && !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr does not say %q:\n%s", tt.stderr, stderr)
			}
			if tt.check != nil {
				tt.check(t, err, stdout)
			}
			if tt.then != nil {
				tt.then(t, run)
			}
			_, list, _, lerr := run("state", "list", "--json", "--show-numbers")
			p.mu.Lock() // handlers of requests given up on may still run
			defer p.mu.Unlock()
			var doc struct {
				Recipients []struct {
					Phone, Status, Reason string
					ProviderID            string `json:"provider_id"`
					ProviderBatchID       string `json:"provider_batch_id"`
					ProviderStatus        string `json:"provider_status"`
				}
			}
			if lerr != nil || json.Unmarshal([]byte(list), &doc) != nil {
				t.Fatalf("state list: %v\n%s", lerr, list)
			}
			got := map[string]string{}
			for _, r := range doc.Recipients {
				got[r.Phone] = r.Status
				if want := tt.reason[r.Phone]; !strings.Contains(r.Reason, want) {
					t.Errorf("%s: reason %q, want it to hold %q", r.Phone, r.Reason, want)
				}
				if want, ok := tt.ids[r.Phone]; ok && want != r.ProviderID+"/"+r.ProviderBatchID+"/"+r.ProviderStatus {
					t.Errorf("%s: provider id/batch/status %s/%s/%s, want %s", r.Phone, r.ProviderID, r.ProviderBatchID, r.ProviderStatus, want)
				}
				if r.Status == "sent" && p.delivered[r.Phone] == 0 {
					t.Errorf("%s recorded sent, but the provider did not deliver it", r.Phone)
				}
			}
			for _, ph := range perRecipientNumbers {
				if got[ph] != tt.want[ph] {
					t.Errorf("%s: state %q, want %q", ph, got[ph], tt.want[ph])
				}
				if p.delivered[ph] > 1 {
					t.Errorf("%s delivered %d times", ph, p.delivered[ph])
				}
			}
			if tt.requests != 0 && p.requests != tt.requests {
				t.Errorf("%d send requests, want %d", p.requests, tt.requests)
			}
			if tt.sizes != nil && fmt.Sprint(p.sizes) != fmt.Sprint(tt.sizes) {
				t.Errorf("requests of %v recipients, want %v", p.sizes, tt.sizes)
			}
		})
	}
}
