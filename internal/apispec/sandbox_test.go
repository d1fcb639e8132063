package apispec_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/sandbox"
)

// schemas loads the components of api/openapi.yaml.
func schemas(t *testing.T) openapi3.Schemas {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(specPath)
	if err != nil {
		t.Fatalf("load %s: %v", specPath, err)
	}
	return doc.Components.Schemas
}

// conformsTo checks a JSON body against the named component schema.
func conformsTo(t *testing.T, s openapi3.Schemas, name string, body []byte) {
	t.Helper()
	ref, ok := s[name]
	if !ok {
		t.Fatalf("no schema %s", name)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", name, clip(body), err)
	}
	if err := ref.Value.VisitJSON(v); err != nil {
		t.Errorf("%s does not conform to %s: %v", clip(body), name, err)
	}
}

// TestSandboxAnswers: the sandbox's own success bodies, which the send
// operation leaves open (any 2xx, any body), are what the description's
// components say, and a body of another shape is refused by them.
func TestSandboxAnswers(t *testing.T) {
	s := schemas(t)
	for shape, schema := range map[string]string{"sandbox": "SandboxSendResponse", "results": "SandboxResultsResponse"} {
		t.Run(shape, func(t *testing.T) {
			cfg := sandbox.Config{SuccessBody: shape}
			if shape == "results" {
				cfg.RejectRate, cfg.ThrottleRate = 0.3, 0.3
			}
			e := start(t, cfg)
			body := `{"from":"ACME","to":["+33612340000","+33612340001","+33612340002","+33612340003"],"body":"hi"}`
			req, _ := http.NewRequest(http.MethodPost, e.hs.URL+api.SendPath, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.token(t))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			conformsTo(t, s, schema, got)
			var v any
			json.Unmarshal(got, &v)
			v.(map[string]any)["extra"] = 1
			if s[schema].Value.VisitJSON(v) == nil {
				t.Errorf("%s accepts an answer with a key the sandbox never writes", schema)
			}
		})
	}
}

// TestSandboxReports: the reports and replies the sandbox posts are the
// SandboxReport and SandboxReply of the description, and /sandbox/reports
// answers as it says.
func TestSandboxReports(t *testing.T) {
	s := schemas(t)
	var mu sync.Mutex
	var posts []struct {
		path string
		body []byte
	}
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, struct {
			path string
			body []byte
		}{r.URL.Path, b})
		mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	e := start(t, sandbox.Config{
		ReportsTo: rc.URL + "/reports", RepliesTo: rc.URL + "/replies", ReportsSecret: "s",
		UndeliveredRate: 0.3, StopRate: 0.5, DuplicateRate: 0.3, Seed: 3,
	})
	c := newConformance(t, e.hs.URL)
	e.client.HTTP = &http.Client{Transport: c}
	e.rawClient = &http.Client{Transport: c}
	if _, err := e.client.Send(context.Background(), e.token(t), api.SendRequest{From: "ACME", To: numbers(t, 0, 20), Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, e.hs.URL)
	if err := e.get(sandbox.ReportsPath, basicB64); err != nil {
		t.Errorf("GET %s: %v", sandbox.ReportsPath, err)
	}
	if err := e.get(sandbox.ReportsPath, ""); err == nil {
		t.Errorf("GET %s without credentials succeeded", sandbox.ReportsPath)
	}
	mu.Lock()
	defer mu.Unlock()
	replies := 0
	for _, p := range posts {
		if p.path == "/replies" {
			replies++
			conformsTo(t, s, "SandboxReply", p.body)
		} else {
			conformsTo(t, s, "SandboxReport", p.body)
		}
	}
	if replies == 0 {
		t.Error("no reply to check")
	}
}

// waitSettled waits until the sandbox at url has every report and reply
// acknowledged, as its /sandbox/reports says.
func waitSettled(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, url+sandbox.ReportsPath, nil)
		req.Header.Set("Authorization", basicB64)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var rs sandbox.Reports
		err = json.NewDecoder(resp.Body).Decode(&rs)
		resp.Body.Close()
		if err == nil && rs.Counts.Reports > 0 && rs.Counts.Pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reports still pending after 20 s: %+v, %v", rs.Counts, err)
		}
	}
}
