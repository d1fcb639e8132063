package state

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiskFull makes the database unable to grow (max_page_count: what a
// full disk looks like to SQLite, SQLITE_FULL) and checks that a write fails
// with an error, leaves everything committed before it, and that the state
// works again once there is room.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s")
	s := openTest(t, path)
	for i := range 5 {
		b := fmt.Sprintf("ok%d", i)
		must(t, s.RecordIntent(ctx, intent(b, phones(fmt.Sprintf("1%d", i), 100)...)))
		must(t, s.RecordOutcome(ctx, b, Outcome{Status: Sent}))
	}
	var pages int
	must(t, s.w.conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages))
	_, err := s.w.conn.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages))
	must(t, err)

	serial := s.Serial()
	var failed string
	for i := range 200 {
		b := fmt.Sprintf("full%d", i)
		if err = s.RecordIntent(ctx, intent(b, phones(fmt.Sprintf("2%03d", i), 100)...)); err != nil {
			failed = b
			break
		}
		must(t, s.RecordOutcome(ctx, b, Outcome{Status: Sent}))
		serial = s.Serial()
	}
	if err == nil || !strings.Contains(err.Error(), "full") || !strings.Contains(err.Error(), failed) || !strings.Contains(err.Error(), "write state "+s.Path()+": ") {
		t.Fatalf("got %v, want a disk-full error naming the batch and the state file", err)
	}
	t.Logf("refused: %v", err)
	if s.Serial() != serial {
		t.Errorf("serial moved on a failed write: %d → %d", serial, s.Serial())
	}
	for p, r := range recipients(t, s) {
		if r.BatchID == failed {
			t.Fatalf("%s of the failed batch was recorded", p)
		}
		if r.Status != Sent {
			t.Errorf("%s is %s, want sent", p, r.Status)
		}
	}

	// Room again: the state carries on and everything is there after reopening.
	_, err = s.w.conn.ExecContext(ctx, "PRAGMA max_page_count = 1073741823")
	must(t, err)
	// The failed intent's recipients are not taken for in doubt: it was
	// not recorded, so they may be sent.
	var n int
	fmt.Sscanf(failed, "full%d", &n)
	must(t, s.RecordIntent(ctx, intent(failed, phones(fmt.Sprintf("2%03d", n), 100)...)))
	must(t, s.RecordOutcome(ctx, failed, Outcome{Status: Sent}))
	c, err := s.Counts(ctx)
	must(t, err)
	must(t, s.Close())
	s = openTest(t, path)
	var check string
	must(t, s.db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check))
	c2, err := s.Counts(ctx)
	must(t, err)
	if check != "ok" || !mapsEqual(c, c2) || c[InDoubt] != 0 {
		t.Errorf("after reopening: integrity %q, counts %v then %v", check, c, c2)
	}
}
