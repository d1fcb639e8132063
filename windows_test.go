package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
)

// testClock is the time the commands see; Sleep moves it on at once.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return true
}

// windowCampaign has recipients in Europe (Paris), the Americas (New York,
// São Paulo, and Idaho, whose prefix spans Boise and Los Angeles) and Asia
// (Tokyo), and one without a known zone.
const windowCampaign = `version: 1
name: winter
sender: ACME
recipients:
  - numbers: ["+12125550101", "+12125550102", "+33612345678", "+33612345679", "+819012345678", "+5511987654321", "+12085550100", "+80012345678"]
body: Our winter sale starts today.
batch_size: 2
send_window:
  days: [mon, tue, wed, thu, fri]
  from: "09:00"
  to: "20:00"
`

type cliRun struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, srv *testharness.Server, clock *testClock, args ...string) cliRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := cli.Run(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string {
			switch k {
			case "SMSFORM_BASE_URL":
				return srv.URL
			case "SMSFORM_CLIENT_ID":
				return testharness.ClientID
			case "SMSFORM_CLIENT_SECRET":
				return testharness.ClientSecret
			case "SMSFORM_TOKEN_DIR":
				return filepath.Join(t.TempDir(), "tokens")
			}
			return ""
		},
		Clock: clock,
	})
	code := exitCode(err, &stderr)
	return cliRun{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// outbox counts each recipient's messages in the sandbox's outbox.
func outbox(srv *testharness.Server) map[string]int {
	got := map[string]int{}
	for _, m := range srv.Messages() {
		got[m.To]++
	}
	return got
}

func sameSet(got map[string]int, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		if got[w] != 1 {
			return false
		}
	}
	return true
}

// TestWindowsEndToEnd applies a campaign with recipients in Europe, the
// Americas and Asia through the command line, against the sandbox over
// HTTP with a state file, at fixed moments: each apply sends exactly those
// whose window is open, exits 5 while some wait, and nobody is sent twice
// (the sandbox's outbox is the ground truth).
func TestWindowsEndToEnd(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	dir := t.TempDir()
	camp := filepath.Join(dir, "winter.yaml")
	if err := os.WriteFile(camp, []byte(windowCampaign), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{now: time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC)} // Monday

	// plan --at shows another moment without changing anything.
	r := runCLI(t, srv, clock, "plan", camp, "--at", "2026-11-23T17:00:00Z")
	if r.code != 0 || !strings.Contains(r.stdout, "When, as at 2026-11-23 17:00 UTC") ||
		!strings.Contains(r.stdout, "1 recipient: window opens 09:00 Asia/Tokyo, in 7 h (2026-11-24 00:00 UTC)") {
		t.Fatalf("plan --at: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, srv, clock, "plan", camp, "--json")
	var doc struct {
		Schedule struct {
			At     time.Time
			Groups []struct {
				When       string
				Recipients int
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, r.stdout)
	}
	if !doc.Schedule.At.Equal(clock.Now()) || len(doc.Schedule.Groups) != 5 || doc.Schedule.Groups[0].When != "now" || doc.Schedule.Groups[0].Recipients != 2 {
		t.Errorf("plan --json schedule: %+v", doc.Schedule)
	}
	if len(srv.Messages()) != 0 {
		t.Fatal("plan sent something")
	}

	paris := []string{"+33612345678", "+33612345679"}
	// 11:30 UTC: only Paris (12:30) is open.
	r = runCLI(t, srv, clock, "apply", camp, "--auto-approve")
	if r.code != 5 || !sameSet(outbox(srv), paris...) {
		t.Fatalf("apply at 11:30: exit %d, outbox %v\n%s", r.code, outbox(srv), r.stderr)
	}
	for _, want := range []string{
		// Before sending: what this run sends now, and what waits.
		"smsform: sending 2 recipients now; 5 recipients wait for their send window or not_before (the first may go 2026-11-23 12:00 UTC): a later apply sends them, or apply --wait",
		"nothing more may be sent now: 5 recipients wait; next: window opens 09:00 America/Sao_Paulo, in 30 min (2026-11-23T12:00:00Z)",
		"hint: nothing was recorded for them: run apply again once the window opens",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	// 17:00 UTC: New York, São Paulo and Idaho are open too; Tokyo is not.
	clock.now = time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC)
	r = runCLI(t, srv, clock, "apply", camp, "--auto-approve")
	americas := append([]string{"+12125550101", "+12125550102", "+5511987654321", "+12085550100"}, paris...)
	if r.code != 5 || !sameSet(outbox(srv), americas...) {
		t.Fatalf("apply at 17:00: exit %d, outbox %v\n%s", r.code, outbox(srv), r.stderr)
	}

	// Tuesday 00:30 UTC: Tokyo; then everyone has had it once.
	clock.now = time.Date(2026, 11, 24, 0, 30, 0, 0, time.UTC)
	r = runCLI(t, srv, clock, "apply", camp, "--auto-approve")
	if r.code != 0 || !sameSet(outbox(srv), append(americas, "+819012345678")...) {
		t.Fatalf("apply at 00:30: exit %d, outbox %v\n%s", r.code, outbox(srv), r.stderr)
	}
	r = runCLI(t, srv, clock, "apply", camp, "--auto-approve")
	if r.code != 0 || !strings.Contains(r.stdout, "Nothing to send") || len(srv.Messages()) != 7 {
		t.Errorf("rerun: exit %d, %d messages\n%s", r.code, len(srv.Messages()), r.stdout)
	}
}

// TestWindowsWaitEndToEnd applies a reviewed plan on a Saturday with
// --wait: the run sleeps (on the test's clock) until each window opens on
// Monday, reports each wait as a JSON event, and ends with everyone sent.
func TestWindowsWaitEndToEnd(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	dir := t.TempDir()
	camp := filepath.Join(dir, "winter.yaml")
	if err := os.WriteFile(camp, []byte(windowCampaign), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{now: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)} // Saturday
	planFile := filepath.Join(dir, "winter.plan")
	if r := runCLI(t, srv, clock, "plan", camp, "--out", planFile); r.code != 0 {
		t.Fatalf("plan --out: exit %d\n%s", r.code, r.stderr)
	}
	r := runCLI(t, srv, clock, "apply", planFile, "--wait", "--json")
	if r.code != 0 {
		t.Fatalf("apply --wait: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var waits []time.Time
	for line := range strings.Lines(r.stdout) {
		var e struct {
			Type  string
			Until time.Time
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		if e.Type == "wait" {
			waits = append(waits, e.Until)
		}
	}
	want := []time.Time{ // Monday: Tokyo, Paris, São Paulo, New York, Idaho (Los Angeles)
		time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 17, 0, 0, 0, time.UTC),
	}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	for i := range want {
		if !waits[i].Equal(want[i]) {
			t.Errorf("wait %d until %s, want %s", i, waits[i], want[i])
		}
	}
	if got := outbox(srv); len(got) != 7 {
		t.Errorf("outbox %v, want the 7 recipients with a known zone once each", got)
	}
	for to, n := range outbox(srv) {
		if n != 1 {
			t.Errorf("%s messaged %d times", to, n)
		}
	}
}

// TestWindowsSavedPlanCheckedAtSendTime: a saved plan is held to the
// windows when it is applied, not when it was made. Applied when only Tokyo
// is open, it sends Tokyo alone and goes on from there when applied again;
// applied before any window opens, it records nothing and can be applied
// again later.
func TestWindowsSavedPlanCheckedAtSendTime(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	dir := t.TempDir()
	camp := filepath.Join(dir, "winter.yaml")
	if err := os.WriteFile(camp, []byte(windowCampaign), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{now: time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC)}
	planFile := filepath.Join(dir, "winter.plan")
	if r := runCLI(t, srv, clock, "plan", camp, "--out", planFile); r.code != 0 {
		t.Fatalf("plan --out: exit %d\n%s", r.code, r.stderr)
	}
	// Tuesday 03:00 UTC: night in Paris, New York and São Paulo, 20:00 in
	// Boise (closed, though Los Angeles is open), noon in Tokyo.
	clock.now = time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	r := runCLI(t, srv, clock, "apply", planFile)
	if r.code != 5 || len(srv.Messages()) != 1 || outbox(srv)["+819012345678"] != 1 {
		t.Fatalf("apply at 03:00: exit %d, outbox %v\n%s", r.code, outbox(srv), r.stderr)
	}
	if !strings.Contains(r.stderr, "apply the plan again (smsform apply "+planFile+"): it sends the recipients it has not attempted yet") {
		t.Errorf("hint does not say the plan goes on from there:\n%s", r.stderr)
	}

	// A fresh plan, applied before any window opens: nothing is recorded,
	// so the plan can be applied again later.
	clock.now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC) // Saturday
	if r := runCLI(t, srv, clock, "plan", camp, "--out", planFile); r.code != 0 {
		t.Fatalf("plan --out: exit %d\n%s", r.code, r.stderr)
	}
	r = runCLI(t, srv, clock, "apply", planFile)
	if r.code != 5 || len(srv.Messages()) != 1 || !strings.Contains(r.stderr, "the plan is not used up") {
		t.Fatalf("apply on Saturday: exit %d, %d messages\n%s", r.code, len(srv.Messages()), r.stderr)
	}
	clock.now = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) // Monday: Paris open
	r = runCLI(t, srv, clock, "apply", planFile)
	if r.code != 5 || !sameSet(outbox(srv), "+819012345678", "+33612345678", "+33612345679") {
		t.Fatalf("apply on Monday: exit %d, outbox %v\n%s", r.code, outbox(srv), r.stderr)
	}
}

// TestWindowsConfirmSaysNothingNow: on a terminal, before asking for "yes",
// apply says when nothing may be sent now.
func TestWindowsConfirmSaysNothingNow(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	dir := t.TempDir()
	camp := filepath.Join(dir, "winter.yaml")
	if err := os.WriteFile(camp, []byte(windowCampaign), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{now: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)} // Saturday
	var stdout, stderr bytes.Buffer
	err := cli.Run(context.Background(), []string{"apply", camp}, cli.Env{
		Stdin: strings.NewReader("no\n"), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string {
			switch k {
			case "SMSFORM_BASE_URL":
				return srv.URL
			case "SMSFORM_CLIENT_ID":
				return testharness.ClientID
			case "SMSFORM_CLIENT_SECRET":
				return testharness.ClientSecret
			case "SMSFORM_TOKEN_DIR":
				return filepath.Join(dir, "tokens")
			}
			return ""
		},
		IsTerminal: func(any) bool { return true },
		Clock:      clock,
	})
	if err == nil || !strings.Contains(err.Error(), "apply cancelled") {
		t.Fatalf("err = %v, want the prompt cancelled", err)
	}
	if !strings.Contains(stderr.String(), "Nothing may be sent now (see When above): apply would stop at once (exit 5)") {
		t.Errorf("no note before the prompt:\n%s", stderr.String())
	}
	if len(srv.Messages()) != 0 {
		t.Error("something was sent")
	}
}
