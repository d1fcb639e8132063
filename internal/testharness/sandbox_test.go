package testharness_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
)

// TestReportsAcrossRestart: the harness signs reports with ReportsSecret,
// sums the reports of a sandbox and of the one that replaced it, and
// WaitReports returns once the receiver acknowledged them all.
func TestReportsAcrossRestart(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{} // message id → posts with a good signature
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(testharness.ReportsSecret))
		mac.Write(body)
		var rep sandbox.Report
		if r.Header.Get(sandbox.SignatureHeader) != hex.EncodeToString(mac.Sum(nil)) || json.Unmarshal(body, &rep) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got[rep.MessageID]++
		mu.Unlock()
	}))
	t.Cleanup(rc.Close)

	srv := testharness.Start(t, sandbox.Config{ReportsTo: rc.URL, ReportDelay: 10 * time.Millisecond, ReportBackoff: 10 * time.Millisecond})
	phones := testharness.Phones(6)
	send := func(to []string) {
		t.Helper()
		c := &api.Client{BaseURL: srv.URL, ClientID: testharness.ClientID, ClientSecret: testharness.ClientSecret, Timeout: 10 * time.Second}
		tok, err := c.IssueToken(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Send(context.Background(), tok.Value, api.SendRequest{From: "ACME", To: to, Body: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	send(phones[:3])
	srv.Restart()
	send(phones[3:])

	rs := srv.WaitReports(20 * time.Second)
	if rs.Counts.Delivered != 6 || rs.Counts.Reports != 6 || len(rs.Callbacks) != 6 {
		t.Fatalf("counts %+v, %d callbacks: want 6 reports from the two sandboxes", rs.Counts, len(rs.Callbacks))
	}
	mu.Lock()
	defer mu.Unlock()
	for i, cb := range rs.Callbacks {
		if cb.Report.To != phones[i] || got[cb.Report.MessageID] != 1 {
			t.Errorf("callback %d: %+v, received %d times", i, cb.Report, got[cb.Report.MessageID])
		}
	}
}
