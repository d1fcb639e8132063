package apply_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// projectRig is a project with a frequency cap of 1 per 24 h, its state a
// file shared by its campaigns, against the sandbox over HTTP.
type projectRig struct {
	dir   string
	loc   string
	srv   *testharness.Server
	clock *fakeClock
	auth  *api.Authenticated
}

func newProjectRig(t *testing.T) *projectRig {
	return newProjectRigOf(t, "version: 1\nstate: st/\nfrequency_cap: {max: 1, per: 24h}\n")
}

// newProjectRigOf is a project whose project file is project.
func newProjectRigOf(t *testing.T, project string) *projectRig {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "st"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "smsform.yaml"), []byte(project), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testharness.Start(t, sandbox.Config{})
	client := &api.Client{BaseURL: srv.URL, ClientID: testharness.ClientID, ClientSecret: testharness.ClientSecret, Timeout: 5 * time.Second}
	return &projectRig{dir: dir, loc: filepath.Join(dir, "st", "smsform.smsstate"), srv: srv, clock: &fakeClock{},
		auth: &api.Authenticated{Client: client}}
}

// campaign writes and loads a campaign of the project.
func (r *projectRig) campaign(t *testing.T, name string, phones ...string) *campaign.Campaign {
	t.Helper()
	return r.campaignWith(t, name, "", phones...)
}

// campaignWith is campaign with more keys (extra: YAML lines).
func (r *projectRig) campaignWith(t *testing.T, name, extra string, phones ...string) *campaign.Campaign {
	t.Helper()
	yaml := fmt.Sprintf("version: 1\nname: %s\nsender: ACME\nrecipients:\n  - numbers: [\"%s\"]\nbody: \"from %s, reply STOP to opt out\"\nbatch_size: 2\n%s",
		name, strings.Join(phones, `", "`), name, extra)
	path := filepath.Join(r.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := campaign.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// open opens the project's state for campaign c, held to its cap.
func (r *projectRig) open(t *testing.T, c *campaign.Campaign) *state.State {
	t.Helper()
	st, err := state.Open(context.Background(), state.MustParseLocation(r.loc), state.Options{Campaign: c.Name, Shared: true, Gate: ledger.NewGate(plan.CapsOf(c)), Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func (r *projectRig) plan(t *testing.T, c *campaign.Campaign, st *state.State) *plan.Plan {
	t.Helper()
	p, err := plan.ComputeWith(context.Background(), c, st, plan.Options{Now: r.clock.Now(), Ledger: ledger.ViewOf(st)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (r *projectRig) run(c *campaign.Campaign, p *plan.Plan, st *state.State, wait bool) (*apply.Result, error) {
	return apply.Run(context.Background(), p, st, r.auth, apply.Options{From: c.Sender, Clock: r.clock, Wait: wait})
}

// deliveredBy counts the outbox's messages per number and body.
func (r *projectRig) deliveredBy() map[string]int {
	got := map[string]int{}
	for _, m := range r.srv.Messages() {
		from, _, _ := strings.Cut(m.Body, ",") // "from NAME, reply STOP…"
		got[m.To+" "+from]++
	}
	return got
}

// Two campaigns over overlapping lists, a cap of 1 per 24 h: the second
// sends only the numbers the first did not message, suppresses the one
// that opted out after its plan, and leaves the others for later (a
// ClosedError that says when); with --wait it waits for the cap and sends
// them once it allows. Every recipient is accounted for.
func TestRunLedger(t *testing.T) {
	ctx := context.Background()
	r := newProjectRig(t)
	t0 := time.Date(2026, 3, 28, 20, 0, 0, 0, time.UTC) // a daylight-saving night in Europe: the cap's window is in UTC
	r.clock.Set(t0)
	p := []string{"+447400123401", "+447400123402", "+447400123403", "+447400123404", "+447400123405", "+447400123406"}
	a := r.campaign(t, "a", p[:3]...)
	sa := r.open(t, a)
	if res, err := r.run(a, r.plan(t, a, sa), sa, false); err != nil || res.Sent != 3 {
		t.Fatalf("first campaign: %+v, %v", res, err)
	}

	r.clock.Set(t0.Add(time.Hour))
	b := r.campaign(t, "b", p...)
	sb := r.open(t, b)
	pb := r.plan(t, b, sb)
	if s := pb.Summary; s.ToSend != 6 || s.HeldByCap != 3 || !s.HeldByCapUntil.Equal(t0.Add(24*time.Hour)) {
		t.Errorf("plan: %+v", s)
	}
	if _, err := ledger.ChangeOptOuts(ctx, state.MustParseLocation(r.loc), []ledger.OptOutChange{{Phone: p[4], At: r.clock.Now(), By: "test"}}); err != nil {
		t.Fatal(err)
	}
	res, err := r.run(b, pb, sb, false)
	var closed *apply.ClosedError
	if !errors.As(err, &closed) || closed.Held != 3 || closed.Waiting != 0 || !closed.Next.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("second campaign: %v, want a ClosedError with 3 held back until %s", err, t0.Add(24*time.Hour))
	}
	if res.Sent != 2 || res.Suppressed != 1 || res.HeldByCap != 3 || res.Skipped != 0 || !res.HeldNext.Equal(t0.Add(24*time.Hour)) {
		t.Errorf("result %+v: want 2 sent, 1 suppressed, 3 held back", res)
	}
	counts, err := sb.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts[state.Sent] != 2 || counts[state.Suppressed] != 1 || counts[state.InDoubt] != 0 {
		t.Errorf("state: %v", counts)
	}
	if f, d := sb.Owed(); f != 0 || d != 0 {
		t.Errorf("owed %d, %d: suppressed is not owed", f, d)
	}

	// A day later with --wait, planned an hour after the first run: the
	// run waits for the cap, then sends the three.
	r.clock.Set(t0.Add(2 * time.Hour))
	pb = r.plan(t, b, sb)
	if s := pb.Summary; s.ToSend != 3 || s.OptedOut != 1 || s.AlreadySent != 2 {
		t.Errorf("plan again: %+v", s)
	}
	res, err = r.run(b, pb, sb, true)
	if err != nil || res.Sent != 3 || res.HeldByCap != 0 {
		t.Fatalf("with --wait: %+v, %v", res, err)
	}
	if r.clock.slept < 22*time.Hour {
		t.Errorf("slept %s, want until the cap allows (22 h)", r.clock.slept)
	}
	got := r.deliveredBy()
	for i, phone := range p {
		wantA, wantB := 0, 1
		if i < 3 {
			wantA = 1
		}
		if i == 4 {
			wantB = 0
		}
		if got[phone+" from a"] != wantA || got[phone+" from b"] != wantB {
			t.Errorf("%s: %d from a, %d from b; want %d, %d", phone, got[phone+" from a"], got[phone+" from b"], wantA, wantB)
		}
	}
}

// A batch whose recipients all opted out since the plan sends nothing and
// records them suppressed; the next batch goes as usual.
func TestRunLedgerAllSuppressed(t *testing.T) {
	ctx := context.Background()
	r := newProjectRig(t)
	r.clock.Set(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	c := r.campaign(t, "c", "+447400123411", "+447400123412", "+447400123413")
	st := r.open(t, c)
	p := r.plan(t, c, st)
	if _, err := ledger.ChangeOptOuts(ctx, state.MustParseLocation(r.loc), []ledger.OptOutChange{{Phone: "+447400123411"}, {Phone: "+447400123412"}}); err != nil {
		t.Fatal(err)
	}
	res, err := r.run(c, p, st, false)
	if err != nil || res.Sent != 1 || res.Suppressed != 2 || res.Batches != 1 {
		t.Fatalf("%+v, %v: want the second batch sent, the first suppressed whole", res, err)
	}
	if n := len(r.srv.Messages()); n != 1 {
		t.Errorf("outbox holds %d messages, want 1", n)
	}
}

// TestRunLawCap: Florida's limit of 3 marketing messages per person in 24
// hours holds across campaigns through the project's ledger, with no
// frequency_cap: three marketing campaigns (none naming a rule set) send
// to a Florida number, and a fourth, held to us, is held back, while a
// Georgia number goes; a transactional campaign's message counts for
// nobody's marketing cap and is not held to it.
func TestRunLawCap(t *testing.T) {
	r := newProjectRigOf(t, "version: 1\nstate: st/\n")
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC) // 10:00 in Miami and Atlanta
	r.clock.Set(t0)
	florida, georgia := "+13052345678", "+14042345678"
	send := func(c *campaign.Campaign) (*apply.Result, error) {
		st := r.open(t, c)
		return r.run(c, r.plan(t, c, st), st, false)
	}
	for i, name := range []string{"one", "two", "three"} {
		r.clock.Set(t0.Add(time.Duration(i) * time.Hour))
		if res, err := send(r.campaign(t, name, florida)); err != nil || res.Sent != 1 {
			t.Fatalf("marketing campaign %s: %+v, %v", name, res, err)
		}
	}
	r.clock.Set(t0.Add(4 * time.Hour))
	if res, err := send(r.campaignWith(t, "receipt", "kind: transactional\ncompliance: [us]\n", florida)); err != nil || res.Sent != 1 {
		t.Fatalf("a transactional campaign is not held to the marketing cap: %+v, %v", res, err)
	}
	fourth := r.campaignWith(t, "four", "compliance: [us]\n", florida, georgia)
	st := r.open(t, fourth)
	p := r.plan(t, fourth, st)
	if s := p.Summary; s.HeldByCap != 1 || !s.HeldByCapUntil.Equal(t0.Add(24*time.Hour)) {
		t.Errorf("plan of the fourth: %+v, want the Florida number held until 24 h after the first", s)
	}
	res, err := r.run(fourth, p, st, false)
	var closed *apply.ClosedError
	if !errors.As(err, &closed) || res.Sent != 1 || res.HeldByCap != 1 || !res.HeldNext.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("fourth: %+v, %v; want Georgia sent, Florida held until %s", res, err, t0.Add(24*time.Hour))
	}
	got := map[string]int{}
	for _, m := range r.srv.Messages() {
		got[m.To]++
	}
	if got[florida] != 4 || got[georgia] != 1 {
		t.Errorf("delivered %v: want Florida 4 (three marketing, one receipt), Georgia 1", got)
	}
}

// A canary (--limit) whose first recipients the frequency cap holds back
// sent nobody and ended as if the canary had gone (exit 0), and the next
// canary did the same. The held ones stay within the limit's count: the
// run ends waiting for the cap (a ClosedError, exit 5), and with --wait
// sends them once the cap allows.
func TestRunLimitHeldByCap(t *testing.T) {
	r := newProjectRig(t)
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	r.clock.Set(t0)
	a, b, c, d := "+447400100001", "+447400100002", "+447400100003", "+447400100004"
	first := r.campaign(t, "first", a, b)
	st := r.open(t, first)
	if res, err := r.run(first, r.plan(t, first, st), st, false); err != nil || res.Sent != 2 {
		t.Fatalf("first: %+v, %v", res, err)
	}
	r.clock.Set(t0.Add(time.Hour))
	second := r.campaign(t, "second", a, b, c, d)
	st2 := r.open(t, second)
	p := r.plan(t, second, st2)
	res, err := apply.Run(context.Background(), p, st2, r.auth, apply.Options{From: second.Sender, Clock: r.clock, Limit: 2})
	var closed *apply.ClosedError
	if !errors.As(err, &closed) || res.Sent+res.HeldByCap != 2 || errors.As(err, new(*apply.LimitError)) {
		t.Fatalf("canary of 2: %+v, %v; want its 2 sent or held by the cap, and a ClosedError", res, err)
	}
	got := r.deliveredBy()
	if got[a+" from second"]+got[b+" from second"] != 0 {
		t.Errorf("delivered %v: the cap's numbers messaged twice in 24 h", got)
	}
	// With --wait the canary waits for the cap, sends its 2 and stops at
	// the limit, the other 2 left.
	res, err = apply.Run(context.Background(), r.plan(t, second, st2), st2, r.auth, apply.Options{From: second.Sender, Clock: r.clock, Limit: 2, Wait: true})
	var le *apply.LimitError
	if !errors.As(err, &le) || res.Sent != 2 || le.Left != 2 {
		t.Fatalf("canary of 2 with --wait: %+v, %v; want 2 sent once the cap allows, 2 left", res, err)
	}
	got = r.deliveredBy()
	if got[a+" from second"] != 1 || got[b+" from second"] != 1 || got[c+" from second"]+got[d+" from second"] != 0 || !r.clock.Now().After(t0.Add(24*time.Hour-time.Second)) {
		t.Errorf("delivered %v at %s: want the canary's 2 once, after the cap's 24 h", got, r.clock.Now())
	}
}
