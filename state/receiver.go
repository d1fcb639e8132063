package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/smsform/smsform/internal/words"
)

// A project's state also keeps what happens after a send: the delivery
// reports a provider sends later, and the replies recipients send back.
// They arrive from outside (smsform receive, or reports import), in any
// order and more than once; a [Receiver] records them. This is the second
// axis of a recipient's record: the first (sent, failed, in doubt) says
// what smsform did and what the send's answer said; the second (no
// report, pending, delivered, undelivered) what the provider reported
// since. Only evidence moves either: a delivered or undelivered report
// for a recipient in doubt proves the provider acted, so it becomes sent,
// recorded as resolved by that report; no report proves nothing.

// Delivery is what the provider reported of a message after it was sent.
type Delivery uint8

const (
	NoReport    Delivery = iota // nothing reported (yet)
	Pending                     // reported, not final: a status the mapping names neither delivered nor undelivered
	Delivered                   // reached the phone
	Undelivered                 // will not reach it, with the provider's words
)

var deliveryNames = [...]string{NoReport: "", Pending: "pending", Delivered: "delivered", Undelivered: "undelivered"}

func (d Delivery) String() string { return deliveryNames[d] }

// MarshalText writes the delivery as its name.
func (d Delivery) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ParseDelivery reads a delivery's name: pending, delivered or undelivered.
func ParseDelivery(s string) (Delivery, bool) {
	for d, name := range deliveryNames {
		if name == s && Delivery(d) != NoReport {
			return Delivery(d), true
		}
	}
	return NoReport, false
}

// Report is one delivery report of one message, as the provider's mapping
// read it.
type Report struct {
	// ProviderID is the provider's id of the message, as its send answer
	// gave it; "" when the report has none.
	ProviderID string
	// Phone is the recipient in E.164; "" when the report names none that
	// could be read.
	Phone string
	// Unreadable says the report named a number that is not one in
	// international form (Phone is ""): for the reason it is unmatched.
	Unreadable     bool
	Delivery       Delivery // Pending for a status the mapping names neither delivered nor undelivered
	ProviderStatus string   // the status as the provider wrote it
	Reason         string   // the provider's words
	// At is when the provider says it happened; zero: when it was received.
	At time.Time
}

// Reply is one message a recipient sent back.
type Reply struct {
	ProviderID string // the provider's id of the reply; "" when it gives none
	Phone      string // E.164
	Text       string // as received; only a stop or start word is kept (see Receiver)
	At         time.Time
}

// ReceiverOptions are how a Receiver reads replies and matches reports.
type ReceiverOptions struct {
	// StopWords and StartWords are the replies that opt a number out of
	// every campaign of the state, and that re-consent, compared as
	// words.ReplyWord puts them; nil: the defaults (DefaultStopWords,
	// DefaultStartWords).
	StopWords, StartWords []string
	// MatchWindow is how far before a report a message to its number is
	// looked for when the report gives no id that matches (default 7
	// days).
	MatchWindow time.Duration
	Now         func() time.Time // nil: time.Now
	// OptOuts is the project's ledger, which a stop or start reply
	// changes in the reply's transaction (package ledger's ReplyOptOuts);
	// nil: replies are recorded and counted, and change nothing.
	OptOuts ReplyOptOuts
}

// ReplyOptOuts changes the project's opt-outs for a reply, in the
// transaction that records it: a stop word opts the number out of every
// campaign of the state, a start word back in, each recorded with the
// source "reply"; a number already as the reply asks is left as it is.
type ReplyOptOuts interface {
	FromReply(ctx context.Context, tx *sql.Tx, postgres bool, r Reply, stop bool) error
}

// DefaultStopWords and DefaultStartWords are the replies that opt out and
// back in unless the project says otherwise.
var (
	DefaultStopWords  = words.DefaultStopWords
	DefaultStartWords = words.DefaultStartWords
)

// ReportResult is what became of one report.
type ReportResult struct {
	// Duplicate: the same report was recorded before; nothing changed.
	Duplicate bool
	// Campaign and Phone are the recipient it was matched to; "" when it
	// was not, and Unmatched says why.
	Campaign, Phone string
	// MatchedBy is "id" or "number".
	MatchedBy string
	Unmatched string
	// Resolved: the recipient was in doubt and is now sent, by this report.
	Resolved bool
	// Anomaly says why the report contradicts the record (a report for a
	// recipient recorded unsent or failed); it is kept and shown.
	Anomaly string
}

// ReplyResult is what became of one reply.
type ReplyResult struct {
	Duplicate bool
	// Kind is "stop" (the number was opted out), "start" (it opted in
	// again) or "other" (counted, its text not kept).
	Kind     string
	Campaign string // the campaign whose message it answers, "" when none was found
}

// Recorded is what Record made of its reports and replies, in order.
type Recorded struct {
	Reports []ReportResult
	Replies []ReplyResult
}

// ErrNotProject refuses a receiver on a state that is no project's: reports
// and replies concern every campaign of a project's one state.
var ErrNotProject = errors.New("reports and replies need a project's state")

// DeliveryRecord is what the provider reported of a recipient's message:
// its latest report.
type DeliveryRecord struct {
	Delivery       Delivery
	ProviderStatus string
	Reason         string
	At             time.Time
	ProviderID     string
	// Anomaly, when a report contradicts the record (see ReportResult),
	// says how; it is kept whatever the later reports say.
	Anomaly string
}

// Reported reports whether the provider reported anything of the
// campaign yet: what a plan asks before it reads the delivery so far,
// which walks every recipient.
func (s *State) Reported(ctx context.Context) (bool, error) {
	if s.db == nil || s.unscoped || s.schema < 5 || !s.recorded() {
		return false, nil
	}
	var n int
	if err := s.db.QueryRowContext(ctx, s.q[qAnyReport], s.args()...).Scan(&n); err != nil {
		return false, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return n > 0, nil
}

// Deliveries is the latest report of each recipient of the campaign that
// has one, by phone: the latest final one (delivered, undelivered) when
// there is one, a pending report never superseding it.
func (s *State) Deliveries(ctx context.Context) (map[string]DeliveryRecord, error) {
	out := map[string]DeliveryRecord{}
	if s.db == nil || s.unscoped || s.schema < 5 || !s.recorded() {
		return out, nil
	}
	rows, err := s.db.QueryContext(ctx, s.q[qReportsOf], s.args()...)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	defer rows.Close()
	for rows.Next() {
		var phone, delivery, at string
		var d DeliveryRecord
		if err := rows.Scan(&phone, &delivery, &d.ProviderStatus, &d.Reason, &at, &d.Anomaly, &d.ProviderID); err != nil {
			return nil, fmt.Errorf("read state %s: %w", s.loc, err)
		}
		d.Delivery, _ = ParseDelivery(delivery)
		d.At = parseTime(at)
		prev, seen := out[phone]
		if prev.Anomaly != "" && d.Anomaly == "" {
			d.Anomaly = prev.Anomaly // an anomaly stays shown
		}
		if seen && d.Delivery == Pending && prev.Delivery != Pending {
			// A provider's late or repeated "pending" (an empty status
			// reads as one) says nothing new after a final answer.
			prev.Anomaly = d.Anomaly
			d = prev
		}
		out[phone] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return out, nil
}

// UnmatchedReports counts the reports of the state that no recipient was
// matched to, whatever their campaign.
func (s *State) UnmatchedReports(ctx context.Context) (int, error) {
	if s.db == nil || s.unscoped || s.schema < 5 {
		return 0, nil
	}
	var n int
	if err := s.db.QueryRowContext(ctx, s.q[qUnmatchedReports]).Scan(&n); err != nil {
		return 0, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return n, nil
}
