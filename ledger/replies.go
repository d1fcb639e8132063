package ledger

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/state"
)

// ReplyOptOuts is the ledger as replies change it (state.ReceiverOptions's
// OptOuts): give it to the state's Receiver.
func ReplyOptOuts() state.ReplyOptOuts { return replyOptOuts{} }

type replyOptOuts struct{}

// FromReply opts a number out (stop) or back in (start) after a reply, in
// the reply's transaction, unless it already is as the reply asks (a STOP
// sent twice, a daily export of the same replies, leaves the log as it
// is). The change is logged with the source "reply", by "a reply".
func (replyOptOuts) FromReply(ctx context.Context, tx *sql.Tx, postgres bool, r state.Reply, stop bool) error {
	q := of(postgres)
	var n int
	if err := tx.QueryRowContext(ctx, q[qOptedOut], r.Phone).Scan(&n); err != nil {
		return err
	}
	if (n > 0) == stop {
		return nil
	}
	if err := lockOptOuts(ctx, tx, postgres); err != nil {
		return err
	}
	word := words.ReplyWord(r.Text)
	_, err := change(ctx, tx, q, OptOutChange{Phone: r.Phone, Remove: !stop, At: r.At, By: "a reply", Reason: fmt.Sprintf("replied %s", word), Source: "reply"})
	return err
}
