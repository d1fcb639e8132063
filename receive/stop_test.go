package receive_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// TestStopDuringApply: a STOP that receive acknowledged reaches the
// applies already running. Two campaigns of one project go to the same
// numbers at once, in opposite orders, while the sandbox's STOP replies to
// the messages of either reach smsform receive: the numbers one campaign
// reaches first, the other reaches last, long after their STOP. No batch
// whose intent was recorded after a number's STOP was acknowledged holds
// that number (only a batch already in flight may: "from its next
// batch"), and the numbers the running applies met after their STOP are
// recorded suppressed, not sent.
func TestStopDuringApply(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			// Whether a STOP lands while an apply still has its number
			// ahead is a race the test sets up but a loaded machine can
			// lose; a run that proved nothing is tried again, and only
			// three such runs fail the test. Every run is checked.
			for try := 1; ; try++ {
				stopped, suppressed := stopDuringApply(t, backend)
				if suppressed > 0 {
					t.Logf("%d numbers replied STOP; %d of their messages were held back by the applies running", len(stopped), suppressed)
					return
				}
				if try == 3 {
					t.Fatalf("in %d runs no running apply met a number after its STOP (%d STOPs in the last): the test proved nothing", try, len(stopped))
				}
				t.Logf("run %d: no running apply met a number after its STOP (%d STOPs); again", try, len(stopped))
			}
		})
	}
}

// stopDuringApply runs the scenario once and checks it: it returns the
// STOPs acknowledged and how many messages to their numbers the applies
// held back.
func stopDuringApply(t *testing.T, backend string) (map[string]time.Time, int) {
	t.Helper()
	p := newProject(t, backend, 300)
	autumn := reversedCampaign(t, p, "autumn")
	rc := p.receiveInProcess(t)
	p.startSandbox(t, rc.url, sandbox.Config{Latency: 50 * time.Millisecond})
	var wg sync.WaitGroup
	for _, c := range []string{p.campaign, autumn} {
		wg.Go(func() { p.applyFile(t, c) })
	}
	wg.Wait()
	rs := p.sb.WaitReports(time.Minute)
	stopped := stopsAcknowledged(rs)
	if len(stopped) == 0 {
		t.Fatalf("no STOP was acknowledged: %+v", rs.Counts)
	}
	suppressed := 0
	for _, name := range []string{campaignName, "autumn"} {
		suppressed += checkNothingAfterStop(t, p.loc, name, stopped)
	}
	return stopped, suppressed
}

// reversedCampaign writes a campaign named name into a folder of p's
// project, to p's numbers in the opposite order, and returns its file. It
// sends one batch at a time, half as fast as p's campaign: the numbers
// that campaign reaches first, this one reaches last and well after their
// STOP was posted, however slowly a loaded machine records it (with both
// at the same pace, a run under load once saw no STOP arrive before the
// second campaign passed its number).
func reversedCampaign(t *testing.T, p *project, name string) string {
	t.Helper()
	dir := filepath.Join(p.dir, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file, _ := testharness.WriteCampaign(t, dir, testharness.Campaign{Name: name, Recipients: len(p.phones), BatchSize: 10, Concurrency: 1})
	reversed := slices.Clone(p.phones)
	slices.Reverse(reversed)
	if err := os.WriteFile(filepath.Join(dir, "recipients.txt"), []byte(strings.Join(reversed, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// stopsAcknowledged is when receive first acknowledged a STOP from each
// number, by the sandbox's clock (this process's).
func stopsAcknowledged(rs sandbox.Reports) map[string]time.Time {
	out := map[string]time.Time{}
	for _, cb := range rs.Callbacks {
		if cb.Kind != "reply" || !cb.Acknowledged || cb.AcknowledgedAt == nil || !strings.EqualFold(strings.TrimSpace(cb.Reply.Text), "STOP") {
			continue
		}
		if at, ok := out[cb.Reply.From]; !ok || cb.AcknowledgedAt.Before(at) {
			out[cb.Reply.From] = *cb.AcknowledgedAt
		}
	}
	return out
}

// checkNothingAfterStop holds campaign's record to the STOPs: a number
// sent must have been sent by a batch whose intent came before its STOP
// was acknowledged. It returns how many of the STOP numbers the campaign
// recorded suppressed.
func checkNothingAfterStop(t *testing.T, loc, campaign string, stopped map[string]time.Time) int {
	t.Helper()
	ctx := context.Background()
	st, err := state.OpenSharedReadOnly(ctx, state.MustParseLocation(loc), campaign)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	intents := intentsOf(t, st)
	suppressed := 0
	err = st.Recipients(ctx, func(r state.Recipient) error {
		stop, ok := stopped[r.Phone]
		switch {
		case !ok:
		case r.Status == state.Suppressed:
			suppressed++
		case r.Status == state.Sent:
			// The attempt that sent it is the batch's that ended when
			// it was recorded sent.
			var intent time.Time
			for _, a := range intents[r.BatchID] {
				if a.finished.Equal(r.At) {
					intent = a.intent
				}
			}
			if intent.IsZero() {
				t.Errorf("%s: no attempt of batch %s ended when %s was sent", campaign, r.BatchID, e164.Mask(r.Phone))
			} else if intent.After(stop) {
				t.Errorf("%s: %s sent by a batch whose intent came %s after its STOP was acknowledged",
					campaign, e164.Mask(r.Phone), intent.Sub(stop))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return suppressed
}

// attemptTimes is when an attempt's intent was recorded, and when it ended.
type attemptTimes struct{ intent, finished time.Time }

// intentsOf reads the times of every attempt, by batch. A batch answered
// per recipient is an attempt split into parts recorded with the answer:
// a part's intent is its split attempt's.
func intentsOf(t *testing.T, st *state.State) map[string][]attemptTimes {
	t.Helper()
	out := map[string][]attemptTimes{}
	split := map[string]state.Attempt{}
	if err := st.Attempts(context.Background(), func(a state.Attempt) error {
		intent := a.StartedAt
		if s, ok := split[a.BatchID]; ok && a.StartedAt.Equal(s.FinishedAt) {
			intent = s.StartedAt
		}
		if a.State == state.AttemptSplit {
			split[a.BatchID] = a
		}
		out[a.BatchID] = append(out[a.BatchID], attemptTimes{intent, a.FinishedAt})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
