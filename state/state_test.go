package state

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

const hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func openTest(t testing.TB, path string) *State {
	t.Helper()
	s, err := Open(context.Background(), MustParseLocation(path), Options{Campaign: "spring"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// phones returns n numbers "+44" prefix and six digits, without fmt: the
// benchmarks call it in their loops.
func phones(prefix string, n int) []string {
	p := make([]string, n)
	b := make([]byte, 0, 3+len(prefix)+6)
	for i := range p {
		b = append(append(b[:0], "+44"...), prefix...)
		for d := 100000; d > 0; d /= 10 {
			b = append(b, byte('0'+i/d%10))
		}
		p[i] = string(b)
	}
	return p
}

// recordOne records something, so that the campaign's record exists: Open
// alone creates nothing.
func recordOne(t testing.TB, s *State) {
	t.Helper()
	if err := s.RecordIntent(context.Background(), intent("first", "+449999")); err != nil {
		t.Fatal(err)
	}
}

func intent(batch string, ps ...string) Intent {
	return Intent{BatchID: batch, Phones: ps, BodyHash: hash}
}

func recipients(t *testing.T, s *State) map[string]Recipient {
	t.Helper()
	m := map[string]Recipient{}
	var last string
	if err := s.Recipients(context.Background(), func(r Recipient) error {
		if r.Phone <= last {
			t.Errorf("recipients out of order: %s after %s", r.Phone, last)
		}
		last = r.Phone
		m[r.Phone] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

func statuses(t *testing.T, s *State) map[string]Status {
	t.Helper()
	m := map[string]Status{}
	for p, r := range recipients(t, s) {
		m[p] = r.Status
	}
	return m
}

func TestRoundTrip(t *testing.T) { eachBackend(t, testRoundTrip) }

func testRoundTrip(t *testing.T, b backend) {
	ctx := context.Background()
	path := b.loc(t)
	s := openTest(t, path)
	if s.Lineage() != "" || s.Serial() != 0 || s.Campaign() != "spring" {
		t.Fatalf("new state: lineage %q serial %d campaign %q", s.Lineage(), s.Serial(), s.Campaign())
	}
	must(t, s.RecordIntent(ctx, intent("b1", "+441", "+442")))
	lineage := s.Lineage()
	if len(lineage) != 32 {
		t.Fatalf("lineage %q after the first change", lineage)
	}
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Sent, HTTPStatus: 200, RequestID: "r1"}))
	must(t, s.RecordIntent(ctx, intent("b2", "+443")))
	must(t, s.RecordOutcome(ctx, "b2", Outcome{Status: Failed, HTTPStatus: 400, Reason: "bad sender"}))
	must(t, s.RecordIntent(ctx, intent("b3", "+444")))
	if s.Serial() != 5 {
		t.Errorf("serial %d, want 5", s.Serial())
	}
	must(t, s.Close())

	s = openTest(t, path)
	if s.Lineage() != lineage || s.Serial() != 5 {
		t.Errorf("reopened: lineage %q serial %d, want %q 5", s.Lineage(), s.Serial(), lineage)
	}
	got := recipients(t, s)
	if r := got["+443"]; r.Status != Failed || r.Reason != "bad sender" || r.BatchID != "b2" || r.BodyHash != hash || r.At.IsZero() {
		t.Errorf("+443: %+v", r)
	}
	want := map[string]Status{"+441": Sent, "+442": Sent, "+443": Failed, "+444": InDoubt}
	if st := statuses(t, s); !mapsEqual(st, want) {
		t.Errorf("statuses %v, want %v", st, want)
	}
	c, err := s.Counts(ctx)
	must(t, err)
	if c[Sent] != 2 || c[Failed] != 1 || c[InDoubt] != 1 {
		t.Errorf("counts %v", c)
	}
	var as []Attempt
	must(t, s.Attempts(ctx, func(a Attempt) error { as = append(as, a); return nil }))
	if len(as) != 3 || as[0].State != AttemptSent || as[0].RequestID != "r1" || as[0].HTTPStatus != 200 || as[0].Recipients != 2 || as[2].State != AttemptIntent || !as[2].FinishedAt.IsZero() {
		t.Errorf("attempts %+v", as)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestIntentRefusals(t *testing.T) { eachBackend(t, testIntentRefusals) }

func testIntentRefusals(t *testing.T, b backend) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		outcome Status // of the first batch, Unsent for none
		ok      bool
	}{
		{"sent is never sent again", Sent, false},
		{"in doubt is never sent again", InDoubt, false},
		{"intent without outcome is in doubt", Unsent, false},
		{"failed may be sent again", Failed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, b.loc(t))
			must(t, s.RecordIntent(ctx, intent("b1", "+441")))
			if tc.outcome != Unsent {
				must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: tc.outcome}))
			}
			serial := s.Serial()
			err := s.RecordIntent(ctx, intent("b2", "+449", "+441"))
			if tc.ok {
				must(t, err)
				if r := recipients(t, s)["+441"]; r.Status != InDoubt || r.BatchID != "b2" {
					t.Errorf("+441 after resend intent: %+v", r)
				}
				return
			}
			if !errors.Is(err, ErrAlreadySent) {
				t.Fatalf("got %v, want ErrAlreadySent", err)
			}
			// The refused intent left nothing behind, +449 included.
			if _, ok := recipients(t, s)["+449"]; ok || s.Serial() != serial {
				t.Errorf("refused intent changed the state (serial %d→%d)", serial, s.Serial())
			}
		})
	}
}

func TestDuplicateInOneIntent(t *testing.T) { eachBackend(t, testDuplicateInOneIntent) }

func testDuplicateInOneIntent(t *testing.T, b backend) {
	s := openTest(t, b.loc(t))
	if err := s.RecordIntent(context.Background(), intent("b1", "+441", "+441")); !errors.Is(err, ErrAlreadySent) {
		t.Fatalf("got %v, want ErrAlreadySent", err)
	}
}

func TestOutcomeAndForgetNeedOpenIntent(t *testing.T) {
	eachBackend(t, testOutcomeAndForgetNeedOpenIntent)
}

func testOutcomeAndForgetNeedOpenIntent(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	if err := s.RecordOutcome(ctx, "nope", Outcome{Status: Sent}); !errors.Is(err, ErrNoIntent) {
		t.Errorf("outcome of unknown batch: %v", err)
	}
	must(t, s.RecordIntent(ctx, intent("b1", "+441")))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Sent}))
	if err := s.RecordOutcome(ctx, "b1", Outcome{Status: Failed}); !errors.Is(err, ErrNoIntent) {
		t.Errorf("second outcome: %v", err)
	}
	if err := s.ForgetIntent(ctx, "b1"); !errors.Is(err, ErrNoIntent) {
		t.Errorf("forget after outcome: %v", err)
	}
	if err := s.RecordOutcome(ctx, "b1", Outcome{Status: Unsent}); err == nil {
		t.Errorf("an outcome of no status accepted")
	}
	if err := s.RecordOutcome(ctx, "b1", Outcome{Status: 9}); err == nil {
		t.Errorf("invalid status accepted")
	}
	if st := statuses(t, s); st["+441"] != Sent {
		t.Errorf("+441 is %s after refused changes", st["+441"])
	}
}

func TestForgetIntent(t *testing.T) { eachBackend(t, testForgetIntent) }

func testForgetIntent(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	must(t, s.RecordIntent(ctx, intent("b1", "+441", "+442")))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Failed, Reason: "x"}))
	must(t, s.RecordIntent(ctx, intent("b2", "+441", "+443")))
	must(t, s.ForgetIntent(ctx, "b2"))
	want := map[string]Status{"+442": Failed}
	if st := statuses(t, s); !mapsEqual(st, want) {
		t.Errorf("after forget %v, want %v", st, want)
	}
	// The same batch can be tried again.
	must(t, s.RecordIntent(ctx, intent("b2", "+441", "+443")))
	must(t, s.RecordOutcome(ctx, "b2", Outcome{Status: Sent}))
	var states []AttemptState
	must(t, s.Attempts(ctx, func(a Attempt) error { states = append(states, a.State); return nil }))
	if !slices.Equal(states, []AttemptState{AttemptFailed, AttemptForgotten, AttemptSent}) {
		t.Errorf("attempts %v", states)
	}
}

func TestResolve(t *testing.T) { eachBackend(t, testResolve) }

func testResolve(t *testing.T, b backend) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		batch  string
		asSent bool
		n      int
		want   map[string]Status
		err    bool
	}{
		{"all as sent", "", true, 3, map[string]Status{"+441": Sent, "+442": Sent, "+443": Sent, "+444": Sent}, false},
		{"all as unsent", "", false, 3, map[string]Status{"+444": Sent}, false},
		{"one batch as sent", "b1", true, 2, map[string]Status{"+441": Sent, "+442": Sent, "+443": InDoubt, "+444": Sent}, false},
		{"one batch as unsent", "b2", false, 1, map[string]Status{"+441": InDoubt, "+442": InDoubt, "+444": Sent}, false},
		{"sent batch changes nothing", "b3", false, 0, map[string]Status{"+441": InDoubt, "+442": InDoubt, "+443": InDoubt, "+444": Sent}, false},
		{"unknown batch", "b9", false, 0, map[string]Status{"+441": InDoubt, "+442": InDoubt, "+443": InDoubt, "+444": Sent}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, b.loc(t))
			must(t, s.RecordIntent(ctx, intent("b1", "+441", "+442")))
			must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: InDoubt, HTTPStatus: 502}))
			must(t, s.RecordIntent(ctx, intent("b2", "+443"))) // crashed before its outcome
			must(t, s.RecordIntent(ctx, intent("b3", "+444")))
			must(t, s.RecordOutcome(ctx, "b3", Outcome{Status: Sent}))
			serial := s.Serial()
			resolved, err := s.Resolve(ctx, tc.batch, tc.asSent)
			n := resolved.Moved
			if (err != nil) != tc.err {
				t.Fatalf("err %v", err)
			}
			if n != tc.n {
				t.Errorf("resolved %d, want %d", n, tc.n)
			}
			if (n > 0) != (s.Serial() > serial) {
				t.Errorf("serial %d→%d after resolving %d", serial, s.Serial(), n)
			}
			if st := statuses(t, s); !mapsEqual(st, tc.want) {
				t.Errorf("got %v, want %v", st, tc.want)
			}
			if !tc.asSent && n > 0 {
				// Resolved as unsent: they can be sent again.
				must(t, s.RecordIntent(ctx, intent("b4", "+443")))
			}
		})
	}
}

func TestResolveFailed(t *testing.T) { eachBackend(t, testResolveFailed) }

func testResolveFailed(t *testing.T, b backend) {
	ctx := context.Background()
	path := b.loc(t)
	s := openTest(t, path)
	must(t, s.RecordIntent(ctx, intent("b1", "+441", "+442")))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Failed, HTTPStatus: 400, Reason: "body too long"}))
	must(t, s.RecordIntent(ctx, intent("b2", "+443")))
	must(t, s.RecordOutcome(ctx, "b2", Outcome{Status: InDoubt, HTTPStatus: 502}))
	must(t, s.RecordIntent(ctx, intent("b3", "+444")))
	must(t, s.RecordOutcome(ctx, "b3", Outcome{Status: Failed, HTTPStatus: 400}))
	// In-doubt resolution leaves failed recipients alone, and the other way round.
	if n, err := s.Resolve(ctx, "b1", false); err != nil || n.Moved != 0 {
		t.Fatalf("resolve in doubt in a failed batch: %+v, %v", n, err)
	}
	if n, err := s.ResolveFailed(ctx, "b2"); err != nil || n.Moved != 0 {
		t.Fatalf("resolve failed in an in-doubt batch: %+v, %v", n, err)
	}
	if n, err := s.ResolveFailed(ctx, "b1"); err != nil || n.Moved != 2 {
		t.Fatalf("resolve failed b1: %+v, %v; want 2", n, err)
	}
	want := map[string]Status{"+443": InDoubt, "+444": Failed}
	if st := statuses(t, s); !mapsEqual(st, want) {
		t.Errorf("got %v, want %v", st, want)
	}
	if _, err := s.ResolveFailed(ctx, "b9"); err == nil {
		t.Error("an unknown batch was resolved")
	}
	// Kept across a reopen, and they can be sent again.
	must(t, s.Close())
	s = openTest(t, path)
	if st := statuses(t, s); !mapsEqual(st, want) {
		t.Errorf("after reopening: got %v, want %v", st, want)
	}
	must(t, s.RecordIntent(ctx, intent("b4", "+441", "+442")))
	if n, err := s.ResolveFailed(ctx, ""); err != nil || n.Moved != 1 {
		t.Errorf("resolve every failed batch: %+v, %v; want 1", n, err)
	}
}

func TestMarkPlanApplied(t *testing.T) { eachBackend(t, testMarkPlanApplied) }

func testMarkPlanApplied(t *testing.T, b backend) {
	ctx := context.Background()
	path := b.loc(t)
	s := openTest(t, path)
	must(t, s.MarkPlanApplied(ctx, "plan-1"))
	if err := s.MarkPlanApplied(ctx, "plan-1"); !errors.Is(err, ErrPlanApplied) {
		t.Fatalf("second mark: %v", err)
	}
	must(t, s.MarkPlanApplied(ctx, "plan-2"))
	must(t, s.Close())
	r, err := OpenReadOnly(context.Background(), MustParseLocation(path), "")
	must(t, err)
	defer r.Close()
	for id, want := range map[string]bool{"plan-1": true, "plan-2": true, "plan-3": false} {
		if got, err := r.PlanApplied(ctx, id); err != nil || got != want {
			t.Errorf("PlanApplied(%s) = %v, %v", id, got, err)
		}
	}
}

func TestLineage(t *testing.T) { eachBackend(t, testLineage) }

func testLineage(t *testing.T, b backend) {
	ctx := context.Background()
	path := b.loc(t)
	s := openTest(t, path)
	recordOne(t, s)
	must(t, s.Close())
	if b.name == "postgres" {
		// One database holds many campaigns: another name is another
		// record, with its own lineage.
		a, err := Open(ctx, MustParseLocation(path), Options{Campaign: "autumn"})
		must(t, err)
		recordOne(t, a)
		s = openTest(t, path)
		if a.Lineage() == s.Lineage() || a.Campaign() != "autumn" || s.Campaign() != "spring" {
			t.Errorf("autumn %s %q, spring %s %q: want two records", a.Lineage(), a.Campaign(), s.Lineage(), s.Campaign())
		}
		must(t, a.Close())
		return
	}
	_, err := Open(ctx, MustParseLocation(path), Options{Campaign: "autumn"})
	if !errors.Is(err, ErrLineage) || !strings.Contains(err.Error(), `"spring"`) || !strings.Contains(err.Error(), `"autumn"`) {
		t.Fatalf("got %v, want ErrLineage naming both campaigns", err)
	}
	// The lock was released by the failed Open.
	s = openTest(t, path)
	must(t, s.Close())
}

func TestGroupCommit(t *testing.T) { eachBackend(t, testGroupCommit) }

func testGroupCommit(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	must(t, s.RecordIntent(ctx, intent("b0", "+440")))
	must(t, s.RecordOutcome(ctx, "b0", Outcome{Status: Sent}))
	const n = 64
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			b := fmt.Sprintf("b%d", i+1)
			ps := phones(fmt.Sprintf("%02d", i), 10)
			if i%8 == 0 {
				ps = append(ps, "+440") // refused: already sent
			}
			if errs[i] = s.RecordIntent(ctx, intent(b, ps...)); errs[i] == nil {
				errs[i] = s.RecordOutcome(ctx, b, Outcome{Status: Sent})
			}
		})
	}
	wg.Wait()
	okCount := 0
	for i, err := range errs {
		switch {
		case i%8 == 0 && !errors.Is(err, ErrAlreadySent):
			t.Errorf("batch %d: got %v, want ErrAlreadySent", i, err)
		case i%8 != 0 && err != nil:
			t.Errorf("batch %d: %v", i, err)
		case err == nil:
			okCount++
		}
	}
	c, err := s.Counts(ctx)
	must(t, err)
	if c[Sent] != 1+okCount*10 || c[InDoubt] != 0 {
		t.Errorf("counts %v, want %d sent", c, 1+okCount*10)
	}
	if s.Serial() != int64(2+2*okCount) {
		t.Errorf("serial %d, want %d", s.Serial(), 2+2*okCount)
	}
}

func TestRecordOutcomeAndIntent(t *testing.T) { eachBackend(t, testRecordOutcomeAndIntent) }

func testRecordOutcomeAndIntent(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	must(t, s.RecordIntent(ctx, intent("b1", "+441")))
	must(t, s.RecordOutcomeAndIntent(ctx, "b1", Outcome{Status: Sent}, intent("b2", "+442")))
	// The intent is refused, so the outcome is not recorded either.
	err := s.RecordOutcomeAndIntent(ctx, "b2", Outcome{Status: Sent}, intent("b3", "+441"))
	if !errors.Is(err, ErrAlreadySent) {
		t.Fatalf("got %v", err)
	}
	want := map[string]Status{"+441": Sent, "+442": InDoubt}
	if st := statuses(t, s); !mapsEqual(st, want) {
		t.Errorf("got %v, want %v", st, want)
	}
	if s.Serial() != 2 { // one change, one bump
		t.Errorf("serial %d, want 2", s.Serial())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	// A known outcome is recorded even on a cancelled context.
	must(t, s.RecordOutcome(cctx, "b2", Outcome{Status: Sent}))
	if err := s.RecordIntent(cctx, intent("b3", "+443")); !errors.Is(err, context.Canceled) {
		t.Errorf("intent on cancelled ctx: %v", err)
	}
}

func TestClosed(t *testing.T) { eachBackend(t, testClosed) }

func testClosed(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	must(t, s.Close())
	must(t, s.Close())
	if err := s.RecordIntent(ctx, intent("b1", "+441")); !errors.Is(err, ErrClosed) {
		t.Errorf("intent after close: %v", err)
	}
	r, err := OpenReadOnly(context.Background(), MustParseLocation(b.loc(t)), "")
	must(t, err)
	if err := r.RecordIntent(ctx, intent("b1", "+441")); !errors.Is(err, ErrClosed) {
		t.Errorf("intent on read-only view: %v", err)
	}
}

// TestGroupRefusedAfterWriting commits, in concurrent groups, changes of
// which some are refused after writing (an outcome recorded, then the
// next intent refused): those leave nothing, the others all land.
func TestGroupRefusedAfterWriting(t *testing.T) { eachBackend(t, testGroupRefusedAfterWriting) }

func testGroupRefusedAfterWriting(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	must(t, s.RecordIntent(ctx, intent("sent", "+440")))
	must(t, s.RecordOutcome(ctx, "sent", Outcome{Status: Sent}))
	const n = 48
	for i := range n {
		must(t, s.RecordIntent(ctx, intent(fmt.Sprintf("a%d", i), fmt.Sprintf("+4410%02d", i))))
	}
	serial := s.Serial()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			next := intent(fmt.Sprintf("b%d", i), fmt.Sprintf("+4420%02d", i))
			if i%3 == 0 {
				next.Phones = append(next.Phones, "+440") // refused after the outcome was written
			}
			errs[i] = s.RecordOutcomeAndIntent(ctx, fmt.Sprintf("a%d", i), Outcome{Status: Sent}, next)
		})
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case i%3 == 0 && !errors.Is(err, ErrAlreadySent):
			t.Errorf("change %d: %v, want ErrAlreadySent", i, err)
		case i%3 != 0 && err != nil:
			t.Errorf("change %d: %v", i, err)
		case err == nil:
			ok++
		}
	}
	st := statuses(t, s)
	for i := range n {
		a, b := st[fmt.Sprintf("+4410%02d", i)], st[fmt.Sprintf("+4420%02d", i)]
		if i%3 == 0 && (a != InDoubt || b != Unsent) {
			t.Errorf("refused change %d left a record: %s, %s", i, a, b)
		}
		if i%3 != 0 && (a != Sent || b != InDoubt) {
			t.Errorf("change %d: %s, %s; want sent and in doubt", i, a, b)
		}
	}
	if s.Serial() != serial+int64(ok) {
		t.Errorf("serial %d, want %d", s.Serial(), serial+int64(ok))
	}
	// What memory holds is what the state holds.
	must(t, s.Close())
	s = openTest(t, s.loc)
	if got := statuses(t, s); !mapsEqual(got, st) {
		t.Error("reopened state differs from what the writer knew")
	}
}
