package apply_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/compliance"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/plan/planfile"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// startRig is a campaign file, a sandbox and a state path that does not
// exist yet: what smsform apply starts from.
type startRig struct {
	dir, path, state string
	srv              *testharness.Server
	camp             *campaign.Campaign
}

func newStartRig(t *testing.T) *startRig {
	t.Helper()
	dir := t.TempDir()
	path, _ := testharness.WriteCampaign(t, dir, testharness.Campaign{Recipients: 5, BatchSize: 2})
	camp, err := campaign.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return &startRig{dir: dir, path: path, state: filepath.Join(dir, "c.smsstate"), srv: testharness.Start(t, sandbox.Config{}), camp: camp}
}

func (r *startRig) request(secret string, saved *planfile.Saved) apply.Request {
	client := &api.Client{BaseURL: r.srv.URL, ClientID: testharness.ClientID, ClientSecret: secret}
	return apply.Request{Campaign: r.camp, Saved: saved, PlanFile: "plan.gz", State: state.MustParseLocation(r.state),
		Client: &api.Authenticated{Client: client}}
}

// apply starts and sends req as smsform apply --auto-approve does.
func (r *startRig) apply(t *testing.T, req apply.Request) *apply.Result {
	t.Helper()
	p, err := apply.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Send(context.Background(), apply.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Recorded() {
		t.Error("Recorded() = false after a run that sent")
	}
	return res
}

// save saves a plan of the campaign against the state as it is, as smsform
// plan --out does, and opens it as smsform apply PLANFILE does.
func (r *startRig) save(t *testing.T, statePath string) *planfile.Saved {
	t.Helper()
	st, err := state.OpenReadOnly(context.Background(), state.MustParseLocation(statePath), r.camp.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := plan.Compute(context.Background(), r.camp, st)
	if err != nil {
		t.Fatal(err)
	}
	s, err := planfile.NewSaved(context.Background(), p, "test", r.path, statePath, true, r.camp.Files())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plan.gz")
	if err := planfile.Save(file, s); err != nil {
		t.Fatal(err)
	}
	opened, err := planfile.OpenHeader(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opened.Close() })
	return opened
}

// forge edits batch 1 of a saved plan's file as someone who can write it
// could, and recomputes its id, the summary and the plan's id (ids are no
// protection); it returns the edited plan, opened as apply opens it.
func (r *startRig) forge(t *testing.T, saved *planfile.Saved, edit func(batch map[string]any)) *planfile.Saved {
	t.Helper()
	return r.forgeDoc(t, saved, true, func(doc map[string]any) {
		p := doc["plan"].(map[string]any)
		b := p["batches"].([]any)[0].(map[string]any)
		before := len(b["recipients"].([]any))
		edit(b)
		var phones []string
		for _, ph := range b["recipients"].([]any) {
			phones = append(phones, ph.(string))
		}
		b["id"] = plan.BatchID(b["body"].(string), phones)
		sum := p["summary"].(map[string]any)
		n, _ := sum["to_send"].(json.Number).Int64()
		sum["to_send"] = int(n) + len(phones) - before
	})
}

// forgeDoc edits a saved plan's file, its whole JSON document, and writes
// it again with the plan's id its content makes when reID (else the id as
// the edit left it); it returns the edited plan, opened as apply opens it.
func (r *startRig) forgeDoc(t *testing.T, saved *planfile.Saved, reID bool, edit func(doc map[string]any)) *planfile.Saved {
	t.Helper()
	if err := saved.ReadPlan(nil); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "forged.plan")
	if err := planfile.Save(file, saved); err != nil { // saved's paths, relative to the new folder
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(zr)
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	f.Close()
	edit(doc)
	writePlanDoc(t, file, doc, reID)
	opened, err := planfile.OpenHeader(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opened.Close() })
	return opened
}

// writePlanDoc writes doc, a plan file's JSON, to file as Save would, with
// the id its content makes when reID (as anyone who can write the file can
// compute it), else with its id as it is.
func writePlanDoc(t *testing.T, file string, doc map[string]any, reID bool) {
	t.Helper()
	if reID {
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if doc["id"], err = planfile.DocumentID(raw); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(doc); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// recordSomething makes a state at path that records one intent: a state
// exists once it records something.
func recordSomething(t *testing.T, path, campaign string) {
	t.Helper()
	st, err := state.Open(context.Background(), state.MustParseLocation(path), state.Options{Campaign: campaign})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.RecordIntent(context.Background(), state.Intent{BatchID: "x", Phones: []string{"+447400123999"}, BodyHash: "h"}); err != nil {
		t.Fatal(err)
	}
}

func TestStartCampaign(t *testing.T) {
	r := newStartRig(t)
	if res := r.apply(t, r.request(testharness.ClientSecret, nil)); res.Sent != 5 {
		t.Fatalf("sent %d, want 5", res.Sent)
	}
	p, err := apply.Start(context.Background(), r.request(testharness.ClientSecret, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Plan.Summary.ToSend != 0 || p.Plan.Summary.AlreadySent != 5 {
		t.Errorf("second plan: %d to send, %d already sent; want 0 and 5", p.Plan.Summary.ToSend, p.Plan.Summary.AlreadySent)
	}
	if got := r.srv.Stats().Messages; got != 5 {
		t.Errorf("the sandbox recorded %d messages, want 5", got)
	}
}

// A saved plan is sent once, then refused as applied.
func TestStartSavedPlanOnce(t *testing.T) {
	r := newStartRig(t)
	saved := r.save(t, r.state)
	if res := r.apply(t, r.request(testharness.ClientSecret, saved)); res.Sent != 5 {
		t.Fatalf("sent %d, want 5", res.Sent)
	}
	_, err := apply.Start(context.Background(), r.request(testharness.ClientSecret, saved))
	var refused *apply.PlanRefusedError
	if !errors.As(err, &refused) || refused.Why != apply.AlreadyApplied || !errors.Is(err, state.ErrPlanApplied) {
		t.Fatalf("second Start: %v, want the plan refused as applied", err)
	}
	if got := r.srv.Stats().Messages; got != 5 {
		t.Errorf("the sandbox recorded %d messages, want 5", got)
	}
}

// Every refusal comes before anything is sent, and those before the state
// is opened leave no state behind.
func TestStartRefuses(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the request to start, after doing what makes it wrong.
		setup   func(t *testing.T, r *startRig) apply.Request
		why     apply.Refusal // 0: not a refused plan
		noToken bool
		// tokenless: refused before the token was asked for (every
		// check of a saved plan but the locked state's).
		tokenless bool
		earlier   bool   // a *state.EarlierStateError
		says      string // what the error's words must hold, when set
		is        error  // an error the refusal must be, when set
		noState   bool   // no state file may exist after Start
		wantSent  int    // messages the sandbox holds (from the setup)
	}{
		{name: "wrong credentials", noToken: true, noState: true,
			setup: func(t *testing.T, r *startRig) apply.Request { return r.request("not-the-secret", nil) }},
		{name: "wrong credentials with a saved plan", noToken: true, noState: true,
			setup: func(t *testing.T, r *startRig) apply.Request { return r.request("not-the-secret", r.save(t, r.state)) }},
		{name: "only the plan's id changed", why: apply.PlanDiffers, is: planfile.ErrPlanID, noState: true, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				return r.request(testharness.ClientSecret, r.forgeDoc(t, r.save(t, r.state), false, func(doc map[string]any) {
					doc["id"] = "0123456789abcdef0123456789abcdef"
				}))
			}},
		{name: "the opt-outs' log number raised, the plan's id not", why: apply.PlanDiffers, is: planfile.ErrPlanID, noState: true, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				return r.request(testharness.ClientSecret, r.forgeDoc(t, r.save(t, r.state), false, func(doc map[string]any) {
					doc["opt_out_seq"] = 7
					doc["plan"].(map[string]any)["state"].(map[string]any)["opt_out_seq"] = 7
				}))
			}},
		// Recomputed, the id lets the number through to the comparison:
		// the state's log is not that far, so the plan made again
		// subtracts the opt-outs as of another number.
		{name: "the opt-outs' log number raised past the state's, ids recomputed", why: apply.PlanDiffers, is: apply.ErrPlanDiffers, noState: true, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				return r.request(testharness.ClientSecret, r.forgeDoc(t, r.save(t, r.state), true, func(doc map[string]any) {
					doc["opt_out_seq"] = 7
					doc["plan"].(map[string]any)["state"].(map[string]any)["opt_out_seq"] = 7
				}))
			}},
		{name: "a batch edited, its id recomputed", why: apply.PlanDiffers, is: apply.ErrPlanDiffers, noState: true, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				return r.request(testharness.ClientSecret, r.forge(t, r.save(t, r.state), func(b map[string]any) {
					b["body"] = "URGENT: verify your account at http://evil.example/login"
				}))
			}},
		{name: "a recipient added, its id recomputed", why: apply.PlanDiffers, is: apply.ErrPlanDiffers, noState: true, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				return r.request(testharness.ClientSecret, r.forge(t, r.save(t, r.state), func(b map[string]any) {
					b["recipients"] = append(b["recipients"].([]any), "+447700900999")
				}))
			}},
		{name: "a list changed after the plan", why: apply.FilesChanged, noState: true, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				saved := r.save(t, r.state)
				if err := os.WriteFile(filepath.Join(r.dir, "recipients.txt"), []byte("+447700900999\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				return r.request(testharness.ClientSecret, saved)
			}},
		{name: "over the budget", why: apply.OverBudget, noState: true, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				saved := r.save(t, r.state)
				r.camp.Budget.MaxRecipients = 4
				return r.request(testharness.ClientSecret, saved)
			}},
		// What a plan commits to of its rule sets: here the campaign holds
		// to a rule set the plan was not checked against (as a project
		// file edited in memory, or another release of smsform, would).
		{name: "the rule sets changed since the plan", why: apply.PlanDiffers, noState: true, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				saved := r.save(t, r.state)
				rules, err := compliance.Load([]string{"gsm7"}, compliance.Options{})
				if err != nil {
					t.Fatal(err)
				}
				r.camp.Compliance = campaign.Compliance{Kind: compliance.Transactional, Sets: []string{"gsm7"}, Rules: rules}
				return r.request(testharness.ClientSecret, saved)
			}},
		{name: "the state changed after the plan", why: apply.StateChanged, wantSent: 5, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				saved := r.save(t, r.state)
				r.apply(t, r.request(testharness.ClientSecret, nil))
				return r.request(testharness.ClientSecret, saved)
			}},
		{name: "planned against another state", why: apply.OtherLineage, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				other := filepath.Join(t.TempDir(), "other.smsstate")
				recordSomething(t, other, r.camp.Name)
				recordSomething(t, r.state, r.camp.Name)
				return r.request(testharness.ClientSecret, r.save(t, other))
			}},
		// The state the plan was made against recorded sends, and there
		// is none where apply looks: a sign of an earlier state, as
		// state.Open would say, before the token.
		{name: "planned against a state that is gone", earlier: true, noState: true, tokenless: true,
			setup: func(t *testing.T, r *startRig) apply.Request {
				other := filepath.Join(t.TempDir(), "other.smsstate")
				recordSomething(t, other, r.camp.Name)
				return r.request(testharness.ClientSecret, r.save(t, other))
			}},
		// plan saw signs of an earlier state where it ran (a state file of
		// the folder recording the campaign): the plan carries them, so
		// that no folder without them lets it through as a first send.
		{name: "planned where an earlier state showed", earlier: true, noState: true, tokenless: true,
			says: "plan saw, as it made ",
			setup: func(t *testing.T, r *startRig) apply.Request {
				return r.request(testharness.ClientSecret, r.forgeDoc(t, r.save(t, r.state), true, func(doc map[string]any) {
					doc["plan"].(map[string]any)["state"].(map[string]any)["earlier_state"] = []any{"elsewhere.smsstate records the campaign"}
				}))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newStartRig(t)
			req := tt.setup(t, r)
			sends, tokens := r.srv.Stats().SendRequests, r.srv.Stats().TokenRequests
			p, err := apply.Start(context.Background(), req)
			if err == nil {
				p.Close()
				t.Fatal("Start succeeded")
			}
			var refused *apply.PlanRefusedError
			if got := errors.As(err, &refused); got != (tt.why != 0) || got && refused.Why != tt.why {
				t.Errorf("err = %v (%T), want a plan refused with %d: %v", err, err, tt.why, got)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v (%T), want %v", err, err, tt.is)
			}
			if tt.says != "" && !strings.Contains(err.Error(), tt.says) {
				t.Errorf("err = %v, want it to say %q", err, tt.says)
			}
			if got := errors.Is(err, state.ErrEarlierState); got != tt.earlier {
				t.Errorf("err = %v (%T), an earlier state: %v, want %v", err, err, got, tt.earlier)
			}
			if got := errors.As(err, new(*apply.NoTokenError)); got != tt.noToken {
				t.Errorf("err = %v (%T), a NoTokenError: %v, want %v", err, err, got, tt.noToken)
			}
			if got := r.srv.Stats().TokenRequests; tt.tokenless && got != tokens {
				t.Errorf("%d token request(s) during Start, want none: the plan is refused before the API is asked", got-tokens)
			}
			if got := r.srv.Stats().SendRequests; got != sends {
				t.Errorf("%d send request(s) during Start, want none", got-sends)
			}
			if got := r.srv.Stats().Messages; got != tt.wantSent {
				t.Errorf("the sandbox recorded %d messages, want %d", got, tt.wantSent)
			}
			if _, err := os.Stat(r.state); tt.noState && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the state %s exists (%v), want none", r.state, err)
			}
		})
	}
}
