package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/testharness"
)

// estimateSizes are the estimate rows' campaign: recipients measured, a
// first run's recipients (whose apply measures the latency), the sandbox's
// latency, the campaign's concurrency and rate.
type estimateSizes struct {
	recipients, earlier int
	latency             time.Duration
	concurrency         int
	rate                string
}

// estimateRows measures how well time is foretold: plan's estimate of the
// sending time, once an earlier apply measured the provider's latency,
// against the apply that follows; and apply's time left at a quarter of
// the run, against the time the rest really took.
func estimateRows(t *testing.T, smsform, dir string) []row {
	t.Helper()
	sz := estimateSizes{recipients: 120, earlier: 20, latency: 20 * time.Millisecond, concurrency: 4, rate: "400/s"}
	if *full {
		sz = estimateSizes{recipients: 2_000, earlier: 200, latency: 100 * time.Millisecond, concurrency: 8, rate: "200/s"}
	}
	const id, secret = "bench", "bench-secret"
	url, stop := startSandbox(t, smsform, id, secret, "--latency", sz.latency.String())
	defer stop()
	statePath := filepath.Join(dir, "estimate.smsstate")
	env := []string{"SMSFORM_CLIENT_ID=" + id, "SMSFORM_CLIENT_SECRET=" + secret, "SMSFORM_BASE_URL=" + url,
		"SMSFORM_TOKEN_DIR=" + filepath.Join(dir, "estimate-tokens"), "CI=true", "SMSFORM_STATE=" + statePath}

	// An earlier run of the campaign measures the provider's latency; the
	// campaign then grows (another list, the same name and state).
	first := estimateCampaign(t, filepath.Join(dir, "estimate-first"), sz.earlier, sz, url, 11)
	run(t, smsform, env, "apply", "--auto-approve", "--json", first)
	second := estimateCampaign(t, filepath.Join(dir, "estimate-second"), sz.recipients, sz, url, 12)
	est := planEstimate(t, run(t, smsform, env, "plan", "--json", second).stdout)
	if !est.Measured {
		t.Fatal("plan did not estimate with the latency the earlier apply measured")
	}
	events := applyTimed(t, smsform, env, "apply", "--auto-approve", "--json", second)
	sending, sent := sendingPhase(t, events.stdout)
	t.Logf("estimate: %d requests at %s measured, %s; apply sent %d batches in %s", est.Requests, est.Latency, est.Sending, sent, sending)
	left, rest, ok := leftAtQuarter(events)

	what := fmt.Sprintf("%s personalised recipients, sandbox at %s, concurrency %d, rate %s", count(sz.recipients), sz.latency, sz.concurrency, sz.rate)
	ratio := est.Sending.Seconds() / sending.Seconds()
	rows := []row{{figure: "plan's estimate of sending " + what + ", latency measured before", smsform: secs(est.Sending),
		comparison: secs(sending) + " apply", ratio: ratio, target: "0.8–1.2", pass: ratio >= 0.8 && ratio <= 1.2}}
	if !ok {
		// A tiny run ends before the pace is measured (5 s).
		return append(rows, row{figure: "  apply's time left at 25%", smsform: "n/a", comparison: secs(rest) + " rest", target: "(pace not known yet)", pass: !*full})
	}
	ratio = left.Seconds() / rest.Seconds()
	return append(rows, row{figure: "  apply's time left at 25% vs the rest's real time", smsform: secs(left),
		comparison: secs(rest) + " rest", ratio: ratio, target: "0.8–1.2", pass: ratio >= 0.8 && ratio <= 1.2})
}

// estimateCampaign writes a personalised campaign named "estimate" in dir,
// of n recipients, at the sizes' concurrency and rate.
func estimateCampaign(t *testing.T, dir string, n int, sz estimateSizes, url string, seed uint64) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := testharness.Generate(dir, testharness.Spec{Name: "estimate", Recipients: n, Personalised: true, BatchSize: 100,
		Concurrency: sz.concurrency, BaseURL: url, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(g.Campaign, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "rate: %s\n", sz.rate); err != nil {
		t.Fatal(err)
	}
	return g.Campaign
}

// planned is what plan --json says of the sending time.
type planned struct {
	Sending, Latency time.Duration
	Requests         int
	Measured         bool
}

func planEstimate(t *testing.T, out string) planned {
	t.Helper()
	var doc struct {
		Estimate *struct {
			SendingSeconds  float64 `json:"sending_seconds"`
			LatencySeconds  float64 `json:"latency_seconds"`
			LatencyMeasured bool    `json:"latency_measured"`
			Requests        int     `json:"requests"`
		} `json:"estimate"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Estimate == nil {
		t.Fatalf("plan --json has no estimate (%v):\n%s", err, firstLines(out, 5))
	}
	e := doc.Estimate
	return planned{Sending: time.Duration(e.SendingSeconds * float64(time.Second)), Latency: time.Duration(e.LatencySeconds * float64(time.Second)),
		Requests: e.Requests, Measured: e.LatencyMeasured}
}

// timedEvent is an apply --json event and when it was read.
type timedEvent struct {
	at time.Time
	e  apply.Event
}

// timedRun is apply --json's events, each as it came.
type timedRun struct {
	events []timedEvent
	stdout string
}

// applyTimed runs the binary, reading its events as they are written.
func applyTimed(t *testing.T, smsform string, env []string, args ...string) timedRun {
	t.Helper()
	cmd := exec.Command(smsform, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var r timedRun
	var all strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		at := time.Now()
		all.WriteString(sc.Text() + "\n")
		var e apply.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			r.events = append(r.events, timedEvent{at: at, e: e})
		}
	}
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	r.stdout = all.String()
	return r
}

// leftAtQuarter replays a run's events through apply's progress, as they
// came, and returns the time left it would show once a quarter of the
// recipients are done, and the time the rest then really took (to the last
// batch's answer); ok is false when the progress showed none by then.
func leftAtQuarter(r timedRun) (left, rest time.Duration, ok bool) {
	var now, quarter, last time.Time
	total, done := 0, 0
	var prog *report.Progress
	for _, te := range r.events {
		now = te.at
		switch te.e.Type {
		case "start":
			total = te.e.Recipients
			prog = report.NewProgress(io.Discard, io.Discard, report.ProgressOptions{Total: total, Now: func() time.Time { return now }})
		case "batch_sent", "batch_failed", "batch_in_doubt":
			prog.Event(te.e)
			done += te.e.Recipients
			last = now
			if quarter.IsZero() && done*4 >= total {
				quarter = now
				left, ok = prog.Left(now)
			}
		}
	}
	return left, last.Sub(quarter), ok
}
