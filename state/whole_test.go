package state

import (
	"context"
	"errors"
	"testing"
)

// An outcome recorded whole, then an intent refused in the same change
// (RecordOutcomeAndIntent), must leave neither in the state.
func TestWholeThenRefused(t *testing.T) { eachBackend(t, testWholeThenRefused) }

func testWholeThenRefused(t *testing.T, b backend) {
	ctx := context.Background()
	path := b.loc(t)
	s := openTest(t, path)
	must(t, s.RecordIntent(ctx, intent("b1", "+441", "+442")))
	must(t, s.RecordIntent(ctx, intent("b0", "+449")))
	combined := &op{err: make(chan error, 1), run: func(t *txn) error {
		if err := t.outcome("b1", Outcome{HTTPStatus: 200, Parts: []Part{{Status: Failed, Phones: []string{"+441", "+442"}, IDs: []string{"m1", "m2"}}}}); err != nil {
			return err
		}
		t.changed = true
		return t.intent(intent("b2", "+443", "+449")) // +449 in doubt: refused
	}}
	other := &op{err: make(chan error, 1), run: func(t *txn) error { return t.outcome("b0", Outcome{Status: Sent}) }}
	s.w.commit([]*op{combined, other})
	err1, err2 := <-combined.err, <-other.err
	if !errors.Is(err1, ErrAlreadySent) || err2 != nil {
		t.Fatalf("errs %v, %v", err1, err2)
	}
	t.Logf("known in memory of +441: %v", s.w.known.check("+441"))
	must(t, s.Close())
	s = openTest(t, path)
	if st := recipients(t, s)["+441"].Status; st != InDoubt {
		t.Errorf("+441 after a refused RecordOutcomeAndIntent: %s, want in_doubt (neither recorded)", st)
	}
	if err := s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 200, Parts: []Part{{Status: Failed, Phones: []string{"+441", "+442"}}}}); err != nil {
		t.Errorf("recording the outcome alone afterwards, as the doc says: %v", err)
	}
}

// A single part of a status an outcome cannot have (suppressed: never
// sent) is refused, as the split path refuses it, not recorded whole.
func TestWholeSuppressed(t *testing.T) { eachBackend(t, testWholeSuppressed) }

func testWholeSuppressed(t *testing.T, b backend) {
	ctx := context.Background()
	s := openTest(t, b.loc(t))
	must(t, s.RecordIntent(ctx, intent("b1", "+441")))
	err := s.RecordOutcome(ctx, "b1", Outcome{HTTPStatus: 200, Parts: []Part{{Status: Suppressed, Phones: []string{"+441"}}}})
	if err == nil {
		t.Errorf("a part with status suppressed accepted; +441 now %s", recipients(t, s)["+441"].Status)
	}
}
