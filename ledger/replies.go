package ledger

import (
	"context"
	"database/sql"
	"errors"
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
//
// Two replies change nothing (they are recorded and counted all the same):
// one older than the number's latest change, since providers deliver
// replies out of order and a START of 09:00 that arrives after the STOP
// of 10:00 must not undo it (at the same time, a STOP wins); and a START
// against an opt-out a person recorded (optout add, an import), which
// only optout remove lifts, with its reason on record.
func (replyOptOuts) FromReply(ctx context.Context, tx *sql.Tx, postgres bool, r state.Reply, stop bool) error {
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
	case !stop && source != "reply" && action == "add":
		return nil
	case r.At.Before(parseTime(at)), !stop && r.At.Equal(parseTime(at)):
		return nil
	}
	if err := lockOptOuts(ctx, tx, postgres); err != nil {
		return err
	}
	word := words.ReplyWord(r.Text)
	_, err := change(ctx, tx, q, OptOutChange{Phone: r.Phone, Remove: !stop, At: r.At, By: "a reply", Reason: fmt.Sprintf("replied %s", word), Source: "reply"})
	return err
}
