package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
//
// A STOP counts unless the number's latest change is a START reply sent
// after it: providers deliver replies out of order, and both times are the
// provider's, compared to the second. Nothing else outranks a STOP (a
// person's re-consent is stamped by another clock): dropping one is the
// harm to avoid. A START counts only against an opt-out a reply made, and
// only when sent after it (at the same second, the STOP wins): an opt-out
// a person recorded (optout add, an import) stays until optout remove
// lifts it. Replies that change nothing are recorded and counted all the
// same.
func (replyOptOuts) FromReply(ctx context.Context, tx *sql.Tx, postgres bool, r state.Reply, stop bool) error {
	// Locked before anything is read: an optout add or remove committed
	// between the reads and the change would be decided against.
	if err := lockOptOuts(ctx, tx, postgres); err != nil {
		return err
	}
	q := of(postgres)
	var n int
	if err := tx.QueryRowContext(ctx, q[qOptedOut], r.Phone).Scan(&n); err != nil {
		return err
	}
	if (n > 0) == stop {
		return nil
	}
	var action, at, source string
	switch err := tx.QueryRowContext(ctx, q[qLatestChange], r.Phone).Scan(&action, &at, &source); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	default:
		last, sent := parseTime(at).Truncate(time.Second), r.At.Truncate(time.Second)
		byReply := source == "reply"
		if stop && action == "remove" && byReply && last.After(sent) {
			return nil
		}
		if !stop && (!byReply || !sent.After(last)) {
			return nil
		}
	}
	word := words.ReplyWord(r.Text)
	_, err := change(ctx, tx, q, OptOutChange{Phone: r.Phone, Remove: !stop, At: r.At, By: "a reply", Reason: fmt.Sprintf("replied %s", word), Source: "reply"})
	return err
}
