package state

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"testing"
)

// TestCopy copies a state with every kind of record from a file to
// PostgreSQL and back, and proves the copies are the same state: same
// lineage and serial (so a saved plan stays valid), the same record of
// every recipient, attempt and applied plan; a target that records
// something is refused and left alone.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "spring.smsstate")
	s := openTest(t, file)
	must(t, s.RecordIntent(ctx, intent("b1", phones("1", 150)...)))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Sent, HTTPStatus: 200, RequestID: "r1"}))
	must(t, s.RecordIntent(ctx, intent("b2", "+4422", "+4423")))
	must(t, s.RecordOutcome(ctx, "b2", Outcome{Status: Failed, HTTPStatus: 400, Reason: "bad sender"}))
	must(t, s.RecordIntent(ctx, intent("b3", "+4424")))
	must(t, s.RecordOutcome(ctx, "b3", Outcome{Status: InDoubt, HTTPStatus: 502}))
	must(t, s.RecordIntent(ctx, intent("b4", "+4425")))
	must(t, s.ForgetIntent(ctx, "b4"))
	must(t, s.RecordIntent(ctx, intent("b5", "+4426"))) // open: in doubt
	must(t, s.MarkPlanApplied(ctx, "plan-1"))
	want := recipients(t, s)
	lineage, serial := s.Lineage(), s.Serial()
	must(t, s.Close())

	db := pg.Database(t)
	back := filepath.Join(dir, "back.smsstate")
	for _, hop := range []struct{ from, to string }{{file, db}, {db, back}} {
		c, err := Copy(ctx, hop.from, hop.to, CopyOptions{})
		must(t, err)
		if c.Lineage != lineage || c.Serial != serial || c.Attempts != 5 || c.Plans != 1 ||
			!maps.Equal(c.Counts, map[Status]int{Sent: 150, Failed: 2, InDoubt: 2}) {
			t.Errorf("%s → %s: %+v", Redact(hop.from), Redact(hop.to), c)
		}
		r, err := OpenReadOnly(ctx, hop.to, "spring")
		must(t, err)
		if got := recipients(t, r); !mapsEqual(got, want) {
			t.Errorf("%s: recipients differ from the source's", Redact(hop.to))
		}
		if ok, err := r.PlanApplied(ctx, "plan-1"); !ok || err != nil {
			t.Errorf("%s: plan-1 applied %v, %v", Redact(hop.to), ok, err)
		}
		must(t, r.Close())
	}
	// The copy is a working state: it refuses what the source refused.
	s = openTest(t, db)
	if err := s.RecordIntent(ctx, intent("b6", "+4424")); !errors.Is(err, ErrAlreadySent) {
		t.Errorf("in-doubt recipient after the copy: %v", err)
	}
	must(t, s.RecordIntent(ctx, intent("b6", "+4425")))
	must(t, s.Close())

	for _, to := range []string{db, back} {
		_, err := Copy(ctx, file, to, CopyOptions{})
		if !errors.Is(err, ErrTargetNotEmpty) {
			t.Errorf("copy onto %s: %v, want ErrTargetNotEmpty", Redact(to), err)
		}
	}
	r, err := OpenReadOnly(ctx, db, "spring")
	must(t, err)
	if r.Serial() != serial+1 {
		t.Errorf("the refused copy changed the target: serial %d", r.Serial())
	}
	must(t, r.Close())
	if _, err := Copy(ctx, filepath.Join(dir, "none.smsstate"), filepath.Join(dir, "x.smsstate"), CopyOptions{}); err == nil {
		t.Error("copied a missing state")
	}
}
