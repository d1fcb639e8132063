package state

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// A campaign's delivery reports and test sends go with its record: the
// DELIVERY of `state list`, the evidence that resolved a recipient in
// doubt and the last test send read the same at the target (a report of
// nobody's stays with the project's ledger, which ledger.Copy carries).
func TestCopyReportsAndTestSends(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "project.smsstate")
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	const gb1, gb2, us1, us2 = "+447400123401", "+447400123402", "+14155550101", "+14155550102"
	s := openShared(t, file, "spring", now)
	sentWithIDs(t, s, "b1", gb1, gb2)
	_, err := s.AdmitIntent(ctx, intent("b2", us1, us2))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b2", Outcome{Status: InDoubt, Reason: "timeout"}))
	must(t, s.RecordTestSend(ctx, TestSend{At: t0, By: "ann", BodyHash: "h1", Phones: []string{"+447400999999"}, Outcome: Sent, HTTPStatus: 200, RequestID: "t1"}))
	must(t, s.Close())
	r := openReceiver(t, file, t0.Add(time.Hour))
	at := t0.Add(time.Minute)
	_, err = r.Record(ctx, []Report{
		{ProviderID: "m-" + gb1, Delivery: Delivered, ProviderStatus: "DELIVERED", At: at},
		{ProviderID: "m-" + gb2, Delivery: Undelivered, ProviderStatus: "UNDELIVERED", Reason: "absent subscriber", At: at},
		{Phone: us1, Delivery: Delivered, ProviderStatus: "DELIVERED", At: at}, // resolves us1, in doubt
		{ProviderID: "m-nobody", Delivery: Delivered, At: at},
	}, nil)
	must(t, err)
	must(t, r.Close())
	summary := func(loc string) (DeliveryCounts, map[Status]int, *TestSend) {
		t.Helper()
		ro, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "spring")
		must(t, err)
		defer ro.Close()
		sum, err := ro.DeliverySummary(ctx)
		must(t, err)
		counts, err := ro.Counts(ctx)
		must(t, err)
		last, err := ro.LastTestSend(ctx)
		must(t, err)
		return sum.DeliveryCounts, counts, last
	}
	wantSum, wantCounts, wantTest := summary(file)
	if wantSum.Delivered != 2 || wantSum.Undelivered != 1 || wantCounts[Sent] != 3 || wantTest == nil {
		t.Fatalf("source: %+v, %v, last test send %v", wantSum, wantCounts, wantTest)
	}
	db := pg.Database(t)
	for _, hop := range []struct{ from, to string }{{file, db}, {db, filepath.Join(dir, "back.smsstate")}} {
		c, err := Copy(ctx, MustParseLocation(hop.from), MustParseLocation(hop.to), CopyOptions{Shared: true})
		must(t, err)
		if c.Reports != 3 || c.Tests != 1 {
			t.Errorf("%s: copied %d reports and %d test sends, want 3 and 1", Redact(hop.to), c.Reports, c.Tests)
		}
		sum, counts, last := summary(hop.to)
		if sum != wantSum || !maps.Equal(counts, wantCounts) || last == nil || last.RequestID != "t1" || !last.At.Equal(t0) {
			t.Errorf("%s: delivery %+v, counts %v, last test send %+v; want %+v, %v, %+v", Redact(hop.to), sum, counts, last, wantSum, wantCounts, wantTest)
		}
	}
}

// What the review of the copy of reports found: a report the target holds
// for nobody refuses the copy whole (nothing committed, the source not
// moved); a pause and the measured latency go along; migrating back keeps
// the reports the old record received after it moved.
func TestCopyReportsEdges(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	const gb1, gb2 = "+447400123401", "+447400123402"
	a, b := filepath.Join(dir, "a.smsstate"), filepath.Join(dir, "b.smsstate")
	s := openShared(t, a, "spring", now)
	sentWithIDs(t, s, "b1", gb1, gb2)
	must(t, s.RecordLatency(ctx, 250*time.Millisecond))
	must(t, s.Close())
	report := Report{ProviderID: "m-" + gb1, Phone: gb1, Delivery: Delivered, ProviderStatus: "DELIVERED", At: t0.Add(time.Minute)}
	record := func(loc string, rs ...Report) {
		t.Helper()
		r := openReceiver(t, loc, t0.Add(time.Hour))
		_, err := r.Record(ctx, rs, nil)
		must(t, err)
		must(t, r.Close())
	}
	record(a, report)
	// b holds the same report matched to nobody (it holds no campaign).
	o := openShared(t, b, "autumn", now)
	sentWithIDs(t, o, "x1", "+447400123409")
	must(t, o.Close())
	record(b, report)
	_, err := Copy(ctx, MustParseLocation(a), MustParseLocation(b), CopyOptions{Shared: true})
	if err == nil || !strings.Contains(err.Error(), "recorded there already for another campaign or for none") {
		t.Fatalf("copy onto a state that has the report for nobody: %v", err)
	}
	if cs, err := Campaigns(ctx, MustParseLocation(b)); err != nil || len(cs) != 1 || cs[0].Name != "autumn" {
		t.Errorf("b after the refused copy records %+v, %v; want autumn alone", cs, err)
	}
	if st, err := Open(ctx, MustParseLocation(a), Options{Campaign: "spring", Shared: true}); err != nil {
		t.Errorf("a after the refused copy: %v (must not be moved)", err)
	} else {
		must(t, st.Close())
	}

	// Paused, then moved to c: the pause and the latency go along.
	c := filepath.Join(dir, "c.smsstate")
	must(t, SetPause(ctx, MustParseLocation(a), "spring", true, &Pause{At: t0, By: "ann", Reason: "legal review"}))
	_, err = Copy(ctx, MustParseLocation(a), MustParseLocation(c), CopyOptions{Shared: true})
	must(t, err)
	r, err := OpenSharedReadOnly(ctx, MustParseLocation(c), "spring")
	must(t, err)
	if p := r.Paused(); p == nil || p.By != "ann" || p.Reason != "legal review" || r.Latency() != 250*time.Millisecond {
		t.Errorf("at c: pause %+v, latency %s", p, r.Latency())
	}
	must(t, r.Close())
	// A receiver still pointed at a records nothing there now (the report
	// is posted again, to c's); one of an earlier smsform did, which the
	// moved mark taken off and put back stands for: migrating back from c
	// keeps its report.
	late := Report{ProviderID: "m-" + gb2, Phone: gb2, Delivery: Undelivered, ProviderStatus: "UNDELIVERED", At: t0.Add(2 * time.Minute)}
	if _, err := OpenReceiver(ctx, MustParseLocation(a), ReceiverOptions{}); !errors.Is(err, ErrMoved) {
		t.Fatalf("a receiver of a after its campaign moved: %v", err)
	}
	db, err := sql.Open("sqlite", "file:"+a)
	must(t, err)
	defer db.Close()
	var movedTo string
	must(t, db.QueryRow(`SELECT moved_to FROM campaigns WHERE name = 'spring'`).Scan(&movedTo))
	_, err = db.Exec(`UPDATE campaigns SET moved_to = ''`)
	must(t, err)
	record(a, late)
	_, err = db.Exec(`UPDATE campaigns SET moved_to = ?`, movedTo)
	must(t, err)
	must(t, SetPause(ctx, MustParseLocation(c), "spring", true, nil))
	_, err = Copy(ctx, MustParseLocation(c), MustParseLocation(a), CopyOptions{Shared: true})
	must(t, err)
	r, err = OpenSharedReadOnly(ctx, MustParseLocation(a), "spring")
	must(t, err)
	defer r.Close()
	sum, err := r.DeliverySummary(ctx)
	must(t, err)
	if sum.Delivered != 1 || sum.Undelivered != 1 || r.Paused() != nil {
		t.Errorf("a after migrating back: %+v, paused %v", sum.DeliveryCounts, r.Paused())
	}
}

// A pause set on the source while its record is copied (a pause takes no
// campaign's lock) is not lost: the mark sees the record changed and
// copies it again, pause and all. A paused campaign must not become
// sendable by moving.
func TestMarkSeesAPauseSetMeanwhile(t *testing.T) { eachBackend(t, testMarkSeesAPauseSetMeanwhile) }

func testMarkSeesAPauseSetMeanwhile(t *testing.T, b backend) {
	ctx := context.Background()
	loc, target := b.loc(t), b.loc(t)
	s := openShared(t, loc, "spring", time.Now)
	sentWithIDs(t, s, "b1", "+441")
	must(t, s.Close())
	src, err := Open(ctx, MustParseLocation(loc), Options{Campaign: "spring", Shared: true})
	must(t, err)
	defer src.Close()
	dst, err := Open(ctx, MustParseLocation(target), Options{Campaign: "spring", NewState: true, Shared: true, AllowMoved: true})
	must(t, err)
	defer dst.Close()
	again := func() (*copiedAt, error) {
		return copyOnce(ctx, src, dst, MustParseLocation(target), "spring", true, false)
	}
	c, err := copyOnce(ctx, src, dst, MustParseLocation(target), "spring", false, false)
	must(t, err)
	if c.pause != [3]string{} {
		t.Fatalf("copied a pause that was never set: %q", c.pause)
	}
	must(t, SetPause(ctx, MustParseLocation(loc), "spring", true, &Pause{At: time.Now(), By: "ann@laptop", Reason: "wrong link"}))
	marked, err := src.markMoved(ctx, target, "bob", c, again)
	must(t, err)
	if marked.pause[2] != "wrong link" {
		t.Errorf("the copy marked has pause %q, want the one set meanwhile", marked.pause)
	}
	must(t, dst.Close())
	ro, err := OpenSharedReadOnly(ctx, MustParseLocation(target), "spring")
	must(t, err)
	defer ro.Close()
	if p := ro.Paused(); p == nil || p.Reason != "wrong link" {
		t.Errorf("the target's pause: %+v, want the one set while the record was copied", p)
	}
}

// A migration stopped after its copy committed and before the source was
// marked moved (the process killed) is finished by the next run: the
// target's record is the source's, same lineage, serial and counts, so it
// is taken as copied, copied over, checked, and the source marked moved.
// A target record that is not that copy (written to since, or a source
// written to since) stays refused.
func TestCopyFinishesAStoppedCopy(t *testing.T) { eachBackend(t, testCopyFinishesAStoppedCopy) }

func testCopyFinishesAStoppedCopy(t *testing.T, b backend) {
	ctx := context.Background()
	// stopped is a state file holding a sent campaign, and target its
	// copy as a run killed between the copy's commit and the mark left it.
	stopped := func(t *testing.T) (from, target string) {
		from, target = filepath.Join(t.TempDir(), "project.smsstate"), b.loc(t)
		s := openShared(t, from, "spring", time.Now)
		sentWithIDs(t, s, "b1", "+441", "+442")
		must(t, s.MarkPlanApplied(ctx, "plan-1"))
		must(t, s.Close())
		src, err := Open(ctx, MustParseLocation(from), Options{Campaign: "spring", Shared: true})
		must(t, err)
		dst, err := Open(ctx, MustParseLocation(target), Options{Campaign: "spring", NewState: true, Shared: true, AllowMoved: true})
		must(t, err)
		_, err = copyOnce(ctx, src, dst, MustParseLocation(target), "spring", false, false)
		must(t, err)
		must(t, dst.Close())
		must(t, src.Close())
		return from, target
	}

	t.Run("resumed", func(t *testing.T) {
		from, target := stopped(t)
		ro, err := OpenReadOnly(ctx, MustParseLocation(from), "spring")
		must(t, err)
		want, serial := recipients(t, ro), ro.Serial()
		must(t, ro.Close())
		c, err := Copy(ctx, MustParseLocation(from), MustParseLocation(target), CopyOptions{Shared: true, By: "ann"})
		if err != nil {
			t.Fatalf("the stopped migration run again: %v", err)
		}
		if c.Serial != serial || c.Attempts != 1 || c.Plans != 1 {
			t.Errorf("copied %+v, want serial %d, 1 attempt, 1 plan", c, serial)
		}
		if _, err := Open(ctx, MustParseLocation(from), Options{Campaign: "spring", Shared: true}); !errors.Is(err, ErrMoved) {
			t.Errorf("the source after the rerun: %v, want it marked moved", err)
		}
		s := openShared(t, target, "spring", time.Now)
		if got := recipients(t, s); !mapsEqual(got, want) {
			t.Errorf("the target's recipients differ from the source's")
		}
		if err := s.RecordIntent(ctx, intent("b2", "+441")); !errors.Is(err, ErrAlreadySent) {
			t.Errorf("a recipient sent before the migration, at the target: %v", err)
		}
	})
	t.Run("target written since", func(t *testing.T) {
		from, target := stopped(t)
		s := openShared(t, target, "spring", time.Now)
		must(t, s.RecordIntent(ctx, intent("b2", "+443")))
		must(t, s.Close())
		if _, err := Copy(ctx, MustParseLocation(from), MustParseLocation(target), CopyOptions{Shared: true}); !errors.Is(err, ErrTargetNotEmpty) {
			t.Errorf("a target applied to since the stopped copy: %v, want ErrTargetNotEmpty", err)
		}
		if _, err := Open(ctx, MustParseLocation(from), Options{Campaign: "spring", Shared: true}); err != nil {
			t.Errorf("the source, refused a copy, is marked: %v", err)
		}
	})
	t.Run("a report at the source since", func(t *testing.T) {
		// The source's receive kept recording: a report moves no serial,
		// and the rerun carries it over.
		from, target := stopped(t)
		r, err := OpenReceiver(ctx, MustParseLocation(from), ReceiverOptions{})
		must(t, err)
		_, err = r.Record(ctx, []Report{{Phone: "+441", Delivery: Delivered, ProviderStatus: "DELIVERED", At: time.Now()}}, nil)
		must(t, err)
		must(t, r.Close())
		c, err := Copy(ctx, MustParseLocation(from), MustParseLocation(target), CopyOptions{Shared: true})
		if err != nil || c.Reports != 1 {
			t.Fatalf("the stopped migration after a report at the source: %+v, %v; want it finished with the report", c, err)
		}
	})
	t.Run("source written since", func(t *testing.T) {
		from, target := stopped(t)
		s := openShared(t, from, "spring", time.Now)
		must(t, s.RecordIntent(ctx, intent("b2", "+443")))
		must(t, s.Close())
		if _, err := Copy(ctx, MustParseLocation(from), MustParseLocation(target), CopyOptions{Shared: true}); !errors.Is(err, ErrTargetNotEmpty) {
			t.Errorf("a source applied to since the stopped copy: %v, want ErrTargetNotEmpty", err)
		}
	})
}
