package apply_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/plan/planfile"
	"github.com/smsform/smsform/state"
)

// A saved plan applied in part goes on with what its earlier runs did not
// attempt: recipients the state records are left out, a batch left with
// nobody is dropped, the others keep their id and order.
func TestUnattempted(t *testing.T) {
	ctx := context.Background()
	st, err := state.Open(ctx, state.MustParseLocation(filepath.Join(t.TempDir(), "s.smsstate")), state.Options{Campaign: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	record := func(batch string, status state.Status, phones ...string) {
		t.Helper()
		if err := st.RecordIntent(ctx, state.Intent{BatchID: batch, Phones: phones, BodyHash: state.BodyHash("x")}); err != nil {
			t.Fatal(err)
		}
		if status == state.Unsent {
			err = st.ForgetIntent(ctx, batch)
		} else {
			err = st.RecordOutcome(ctx, batch, state.Outcome{Status: status, HTTPStatus: 200})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	record("b1", state.Sent, "+447400123001", "+447400123002")
	record("b2", state.Failed, "+447400123003")
	record("b3", state.Unsent, "+447400123005") // the API did not act: sent again
	record("b4", state.InDoubt, "+447400123007")

	p := &plan.Plan{Batches: []plan.Batch{
		{ID: "b1", Body: "x", Segments: 1, Recipients: []string{"+447400123001", "+447400123002"}},
		{ID: "b2", Body: "x", Segments: 1, Recipients: []string{"+447400123003", "+447400123004"}},
		{ID: "b3", Body: "x", Segments: 1, Recipients: []string{"+447400123005", "+447400123006"}},
		{ID: "b4", Body: "x", Segments: 2, Recipients: []string{"+447400123008", "+447400123007"}},
	}}
	p.Summary.ToSend, p.Summary.Batches = 8, 4
	rest, err := apply.Unattempted(ctx, p, st)
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.Batch{
		{ID: "b2", Body: "x", Segments: 1, Recipients: []string{"+447400123004"}},
		{ID: "b3", Body: "x", Segments: 1, Recipients: []string{"+447400123005", "+447400123006"}},
		{ID: "b4", Body: "x", Segments: 2, Recipients: []string{"+447400123008"}},
	}
	for range 2 { // walked again, the same
		if got := rest.AllBatches(); !reflect.DeepEqual(got, want) {
			t.Fatalf("batches left:\n%+v\nwant\n%+v", got, want)
		}
	}
	if s := rest.Summary; s.ToSend != 4 || s.Batches != 3 || s.Segments != 5 || s.AlreadySent != 4 {
		t.Errorf("summary %+v, want 4 to send in 3 batches, 5 segments, 4 already sent", s)
	}
	if rest.NumBatches() != 3 || rest.BatchedRecipients() != 4 {
		t.Errorf("%d batches, %d recipients, want 3 and 4", rest.NumBatches(), rest.BatchedRecipients())
	}
	if len(p.AllBatches()) != 4 {
		t.Error("the plan itself changed")
	}
}

// saveFile saves a plan of the rig's campaign against its state, as
// smsform plan --out does, and returns the file, to be opened for each run.
func saveFile(t *testing.T, r *startRig) string {
	t.Helper()
	saved := r.save(t, r.state)
	if err := saved.ReadPlan(nil); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "twice.plan")
	if err := planfile.Save(file, saved); err != nil {
		t.Fatal(err)
	}
	return file
}

func openPlan(t *testing.T, file string) *planfile.Saved {
	t.Helper()
	s, err := planfile.OpenHeader(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// runStopped applies the saved plan in file and interrupts the run once
// its first batch is sent.
func runStopped(t *testing.T, r *startRig, file string) *apply.Result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := apply.Start(ctx, r.request(testharness.ClientSecret, openPlan(t, file)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Send(ctx, apply.Options{Events: func(e apply.Event) {
		if e.Type == "batch_sent" {
			cancel()
		}
	}})
	if !errors.Is(err, apply.ErrInterrupted) || res.Sent != 2 || res.Skipped != 3 {
		t.Fatalf("first run: %v, %+v; want interrupted after 2 sent, 3 left", err, res)
	}
	return res
}

// A saved plan stopped part way goes on with the batches it did not
// attempt, each recipient once, then is done.
func TestSavedPlanInRuns(t *testing.T) {
	r := newStartRig(t)
	file := saveFile(t, r)
	runStopped(t, r, file)

	p, err := apply.Start(context.Background(), r.request(testharness.ClientSecret, openPlan(t, file)))
	if err != nil {
		t.Fatalf("second run refused: %v", err)
	}
	if s := p.Plan.Summary; s.ToSend != 3 || s.Batches != 2 {
		t.Errorf("second run plans %d in %d batches, want 3 in 2", s.ToSend, s.Batches)
	}
	res, err := p.Send(context.Background(), apply.Options{})
	p.Close()
	if err != nil || res.Sent != 3 {
		t.Fatalf("second run: %v, sent %d, want 3", err, res.Sent)
	}
	if got := r.srv.Stats().Messages; got != 5 {
		t.Errorf("the sandbox recorded %d messages, want each of the 5 once", got)
	}
	_, err = apply.Start(context.Background(), r.request(testharness.ClientSecret, openPlan(t, file)))
	var refused *apply.PlanRefusedError
	if !errors.As(err, &refused) || refused.Why != apply.AlreadyApplied {
		t.Fatalf("third run: %v, want the plan refused as applied", err)
	}
}

// Once something else changed the state, the rest of a plan applied in part
// is stale: it was not reviewed against that.
func TestSavedPlanInRunsStale(t *testing.T) {
	r := newStartRig(t)
	file := saveFile(t, r)
	runStopped(t, r, file)
	r.apply(t, r.request(testharness.ClientSecret, nil)) // the campaign file sends the rest

	_, err := apply.Start(context.Background(), r.request(testharness.ClientSecret, openPlan(t, file)))
	var refused *apply.PlanRefusedError
	if !errors.As(err, &refused) || refused.Why != apply.StateChanged || !errors.Is(err, apply.ErrStalePlan) {
		t.Fatalf("second run: %v, want the plan refused as stale", err)
	}
	if got := r.srv.Stats().Messages; got != 5 {
		t.Errorf("the sandbox recorded %d messages, want 5", got)
	}
}
