package apply_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// TestRunHoldsToTheLawsHours: a campaign held to the us rules, without a
// send window, applied at 20:30 in Miami and Atlanta: the Georgia number is
// sent, the Florida one waits for 8:00 and nothing is recorded for it; at
// 8:05 it goes. The sandbox's outbox is the ground truth.
func TestRunHoldsToTheLawsHours(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	const florida, georgia = "+13052345678", "+14042345678"
	dir := t.TempDir()
	path := filepath.Join(dir, "law.yaml")
	yaml := "version: 1\nname: law\nsender: ACME\nrecipients:\n  - numbers: [\"" + florida + "\", \"" + georgia + "\"]\n" +
		"compliance: [us]\nbody: Sale today. Reply STOP to opt out\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	camp, err := campaign.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(context.Background(), state.MustParseLocation(filepath.Join(dir, "law.smsstate")), state.Options{Campaign: camp.Name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	client := &api.Client{BaseURL: srv.URL, ClientID: testharness.ClientID, ClientSecret: testharness.ClientSecret, Timeout: 5 * time.Second}
	r := &windowRig{srv: srv, st: st, camp: camp, auth: &api.Authenticated{Client: client}}

	clock := &fakeClock{}
	clock.Set(time.Date(2026, 12, 2, 1, 30, 0, 0, time.UTC)) // Tuesday 20:30 EST
	res, err := r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock})
	var closed *apply.ClosedError
	if !errors.As(err, &closed) {
		t.Fatalf("err = %v, want a ClosedError", err)
	}
	if want := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC); !closed.Next.Equal(want) || !strings.Contains(closed.Label, "08:00 America/New_York") {
		t.Errorf("next %s (%s), want 08:00 America/New_York at %s", closed.Next, closed.Label, want)
	}
	if got := delivered(srv); len(got) != 1 || got[georgia] != 1 || res.Sent != 1 || res.Waiting != 1 {
		t.Fatalf("outbox %v, result %+v: want Georgia alone sent, Florida waiting", got, res)
	}
	counts, err := st.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if counts[state.Sent] != 1 || counts[state.InDoubt]+counts[state.Failed] != 0 {
		t.Errorf("state counts %+v: nothing is recorded for the number that waits", counts)
	}

	clock.Set(time.Date(2026, 12, 2, 13, 5, 0, 0, time.UTC))
	if res, err := r.run(t, context.Background(), r.plan(t), nil, apply.Options{Clock: clock}); err != nil || res.Sent != 1 {
		t.Fatalf("at 08:05: %+v, %v", res, err)
	}
	if got := delivered(srv); got[florida] != 1 || got[georgia] != 1 {
		t.Errorf("outbox %v, want each number once", got)
	}
}
