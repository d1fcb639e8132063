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
		c, err := Copy(ctx, MustParseLocation(hop.from), MustParseLocation(hop.to), CopyOptions{})
		must(t, err)
		if c.Lineage != lineage || c.Serial != serial || c.Attempts != 5 || c.Plans != 1 ||
			!maps.Equal(c.Counts, map[Status]int{Sent: 150, Failed: 2, InDoubt: 2}) {
			t.Errorf("%s → %s: %+v", Redact(hop.from), Redact(hop.to), c)
		}
		r, err := OpenReadOnly(ctx, MustParseLocation(hop.to), "spring")
		must(t, err)
		if got := recipients(t, r); !mapsEqual(got, want) {
			t.Errorf("%s: recipients differ from the source's", Redact(hop.to))
		}
		if ok, err := r.PlanApplied(ctx, "plan-1"); !ok || err != nil {
			t.Errorf("%s: plan-1 applied %v, %v", Redact(hop.to), ok, err)
		}
		must(t, r.Close())
	}
	// Each source is marked moved: it is still read, but no longer written.
	for _, from := range []string{file, db} {
		_, err := Open(ctx, MustParseLocation(from), Options{Campaign: "spring"})
		var me *MovedError
		if !errors.As(err, &me) || !errors.Is(err, ErrMoved) || me.Serial != serial {
			t.Errorf("%s after migrate: %v, want a MovedError", Redact(from), err)
		}
		r, err := OpenReadOnly(ctx, MustParseLocation(from), "spring")
		must(t, err)
		if r.Moved() == nil || r.Serial() != serial {
			t.Errorf("%s: moved %v serial %d", Redact(from), r.Moved(), r.Serial())
		}
		must(t, r.Close())
	}
	if _, err := Copy(ctx, MustParseLocation(db), MustParseLocation(filepath.Join(dir, "again.smsstate")), CopyOptions{}); !errors.Is(err, ErrMoved) {
		t.Errorf("migrating a moved record again: %v", err)
	}
	// The copy is a working state: it refuses what the source refused.
	s = openTest(t, back)
	if err := s.RecordIntent(ctx, intent("b6", "+4424")); !errors.Is(err, ErrAlreadySent) {
		t.Errorf("in-doubt recipient after the copy: %v", err)
	}
	must(t, s.RecordIntent(ctx, intent("b6", "+4425")))
	must(t, s.Close())

	// A target that records the campaign, not moved away, is refused.
	other := filepath.Join(dir, "other.smsstate")
	o, err := Open(ctx, MustParseLocation(other), Options{Campaign: "spring", NewState: true})
	must(t, err)
	recordOne(t, o)
	must(t, o.Close())
	if _, err := Copy(ctx, MustParseLocation(back), MustParseLocation(other), CopyOptions{}); !errors.Is(err, ErrTargetNotEmpty) {
		t.Errorf("copy onto a live record: %v, want ErrTargetNotEmpty", err)
	}
	// Migrating back into the moved file is allowed: the file is live again,
	// with the copy's record (serial+1), and the mark is on back alone.
	c, err := Copy(ctx, MustParseLocation(back), MustParseLocation(file), CopyOptions{})
	must(t, err)
	if c.Serial != serial+1 {
		t.Errorf("back: %+v", c)
	}
	s = openTest(t, file)
	if s.Moved() != nil || s.Serial() != serial+1 {
		t.Errorf("after migrating back: moved %v serial %d", s.Moved(), s.Serial())
	}
	must(t, s.Close())
	if _, err := Open(ctx, MustParseLocation(back), Options{Campaign: "spring"}); !errors.Is(err, ErrMoved) {
		t.Errorf("back after migrating back: %v", err)
	}
	if _, err := Copy(ctx, MustParseLocation(filepath.Join(dir, "none.smsstate")), MustParseLocation(filepath.Join(dir, "x.smsstate")), CopyOptions{}); err == nil {
		t.Error("copied a missing state")
	}
}

// A copy's message ids are indexed at the target (by its next receiver),
// so that reports of the copied messages are matched by id there too.
func TestCopyIndexesIDs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "spring.smsstate")
	s := openTest(t, file)
	must(t, s.RecordIntent(ctx, intent("b1", "+4421", "+4422")))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 200, Parts: []Part{{Status: Sent, Phones: []string{"+4421", "+4422"}, IDs: []string{"m1", "m2"}}}}))
	want := messageIndex(t, s)
	must(t, s.Close())
	db := pg.Database(t)
	for _, hop := range []struct{ from, to string }{{file, db}, {db, filepath.Join(dir, "back.smsstate")}} {
		_, err := Copy(ctx, MustParseLocation(hop.from), MustParseLocation(hop.to), CopyOptions{})
		must(t, err)
		c := openTest(t, hop.to)
		if got := messageIndex(t, c); !maps.Equal(got, want) {
			t.Errorf("%s: index %v, want %v", Redact(hop.to), got, want)
		}
		must(t, c.Close())
	}
}
