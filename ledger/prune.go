package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/smsform/smsform/state"
)

// PruneCaps drops from the cap index of the project's state at loc every
// send older than olderThan before now, and the numbers left with none:
// the index grows with every send, and no cap looks further back than its
// window. The campaigns' own records are never touched, and a send an
// apply claims while prune runs is newer than the cut: it stays.
func PruneCaps(ctx context.Context, loc state.Location, olderThan time.Duration, now time.Time) (sends, numbers int, err error) {
	st, err := state.OpenStore(ctx, loc, false)
	if err != nil || st.DB == nil {
		return 0, 0, err
	}
	defer st.Close()
	q := of(st.Postgres)
	cut := now.Add(-olderThan).Unix()
	tx, err := st.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("write state %s: %w", st.Shown, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, q[qPruneSends], cut)
	if err != nil {
		return 0, 0, fmt.Errorf("write state %s: %w", st.Shown, err)
	}
	n, _ := res.RowsAffected()
	if res, err = tx.ExecContext(ctx, q[qPruneNumbers], cut); err != nil {
		return 0, 0, fmt.Errorf("write state %s: %w", st.Shown, err)
	}
	m, _ := res.RowsAffected()
	return int(n), int(m), tx.Commit()
}
