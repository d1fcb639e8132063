package state

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A pause needs no lock: it lands while a writer holds the state, and the
// writer's next intent is refused; nothing of it bumps the serial.
func TestPause(t *testing.T) { eachBackend(t, testPause) }

func testPause(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	s := openTest(t, loc)
	must(t, s.RecordIntent(ctx, intent("b1", "+441")))
	serial := s.Serial()
	at := time.Date(2026, 11, 25, 14, 2, 0, 0, time.UTC)
	must(t, SetPause(ctx, MustParseLocation(loc), "spring", false, &Pause{At: at, By: "ann@laptop", Reason: "typo in the body"}))
	err := s.RecordIntent(ctx, intent("b2", "+442"))
	var pe *PausedError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPaused) || pe.By != "ann@laptop" || !pe.At.Equal(at) || pe.Reason != "typo in the body" {
		t.Fatalf("intent while paused: %v", err)
	}
	// An outcome is still recorded: what is in flight finishes.
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Status: Sent}))
	if s.Serial() != serial+1 {
		t.Errorf("serial %d, want %d: a pause is no change", s.Serial(), serial+1)
	}
	must(t, s.Close())
	s = openTest(t, loc)
	if p := s.Paused(); p == nil || p.By != "ann@laptop" {
		t.Errorf("Paused() after reopening = %+v", p)
	}
	must(t, SetPause(ctx, MustParseLocation(loc), "spring", false, nil))
	must(t, s.RecordIntent(ctx, intent("b2", "+442")))
	must(t, s.Close())

	// A campaign with no record yet gets one holding only the pause; an
	// apply that opened it before takes that record over.
	w, err := Open(ctx, MustParseLocation(loc), Options{Campaign: "autumn", Shared: true})
	must(t, err)
	must(t, SetPause(ctx, MustParseLocation(loc), "autumn", true, &Pause{At: at, By: "bob"}))
	if err := w.RecordIntent(ctx, intent("a1", "+443")); !errors.Is(err, ErrPaused) {
		t.Errorf("unborn writer after a pause: %v", err)
	}
	must(t, SetPause(ctx, MustParseLocation(loc), "autumn", true, nil))
	must(t, w.RecordIntent(ctx, intent("a1", "+443")))
	must(t, w.Close())
	r, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "autumn")
	must(t, err)
	defer r.Close()
	if r.Serial() != 1 || statuses(t, r)["+443"] != InDoubt {
		t.Errorf("autumn: serial %d, %v", r.Serial(), statuses(t, r))
	}
}

func TestLatencyTestSendsOwed(t *testing.T) { eachBackend(t, testLatencyTestSendsOwed) }

func testLatencyTestSendsOwed(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	s := openTest(t, loc)
	must(t, s.RecordTestSend(ctx, TestSend{At: time.Unix(1e9, 0), By: "ann", BodyHash: hash, Phones: []string{"+447400123456"}, Outcome: Sent, HTTPStatus: 200}))
	if s.Serial() != 0 {
		t.Errorf("a test send bumped the serial to %d", s.Serial())
	}
	must(t, s.RecordLatency(ctx, 180*time.Millisecond))
	must(t, s.RecordIntent(ctx, intent("b1", "+441", "+442")))
	must(t, s.RecordOutcome(ctx, "b1", Outcome{Parts: []Part{{Status: Failed, Phones: []string{"+441"}}, {Status: InDoubt, Phones: []string{"+442"}}}}))
	must(t, s.RecordIntent(ctx, intent("b2", "+443")))
	if f, d := s.Owed(); f != 1 || d != 2 {
		t.Errorf("Owed() = %d failed, %d in doubt; want 1, 2", f, d)
	}
	must(t, s.Close())
	r, err := OpenReadOnly(ctx, MustParseLocation(loc), "spring")
	must(t, err)
	defer r.Close()
	if r.Latency() != 180*time.Millisecond {
		t.Errorf("latency %s", r.Latency())
	}
	ts, err := r.LastTestSend(ctx)
	must(t, err)
	if ts == nil || ts.By != "ann" || len(ts.Phones) != 1 || ts.Outcome != Sent || !ts.At.Equal(time.Unix(1e9, 0)) {
		t.Errorf("LastTestSend = %+v", ts)
	}
	if _, ok := statuses(t, r)["+447400123456"]; ok {
		t.Error("a test number counts as a recipient")
	}
}
