package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/smsform/smsform/internal/e164"
)

// The ledger is what a project's state (Options.Shared) keeps of people
// rather than campaigns: opt-outs, and each number's recent sends for the
// frequency cap. Both are checked where an intent is recorded, in its
// transaction, so that two applies of different campaigns, on two
// machines, can never together send past them: in a file the transaction
// holds the file's write lock; in PostgreSQL it locks the batch's numbers'
// rows of the cap index, in the numbers' order.

// Cap is a frequency cap: at most Max messages to one number in any
// window of Per, across every campaign of the project.
type Cap struct {
	Max int
	Per time.Duration
}

// Admission is what an intent recorded of the recipients it was given:
// those to send now; those suppressed, opted out since the plan (recorded,
// never sent); those held back by the frequency cap (not recorded: a later
// run sends them), the last of them sendable at HeldUntil.
type Admission struct {
	Send       []string
	Suppressed []string
	Held       []string
	HeldUntil  time.Time
}

// ErrNotAdmitted refuses an intent through RecordIntent that the ledger
// would trim: a caller that cannot send part of a batch uses AdmitIntent.
var ErrNotAdmitted = errors.New("some recipients opted out or are held back by the frequency cap")

// AdmitIntent is [State.RecordIntent] for a project's state: recipients
// who opted out are suppressed and those over the frequency cap held
// back, and the intent is recorded for the rest, if any (Admission.Send:
// send exactly those).
func (s *State) AdmitIntent(ctx context.Context, in Intent) (Admission, error) {
	if err := checkIntent(in); err != nil {
		return Admission{}, err
	}
	if s.w == nil {
		return Admission{}, ErrClosed
	}
	var adm Admission
	err := s.w.do(ctx, func(t *txn) (err error) {
		adm, err = t.admit(in, false)
		return err
	})
	if err != nil {
		return Admission{}, fmt.Errorf("record intent of batch %q: %w", in.BatchID, err)
	}
	return adm, nil
}

// RecordOutcomeAndAdmit is [State.RecordOutcomeAndIntent] with
// AdmitIntent's intent.
func (s *State) RecordOutcomeAndAdmit(ctx context.Context, prevBatch string, o Outcome, next Intent) (Admission, error) {
	if err := checkOutcome(o); err != nil {
		return Admission{}, err
	}
	if err := checkIntent(next); err != nil {
		return Admission{}, err
	}
	if s.w == nil {
		return Admission{}, ErrClosed
	}
	var adm Admission
	err := s.w.do(ctx, func(t *txn) (err error) {
		if err := t.outcome(prevBatch, o); err != nil {
			return fmt.Errorf("record outcome of batch %q: %w", prevBatch, err)
		}
		t.changed = true
		if adm, err = t.admit(next, false); err != nil {
			return fmt.Errorf("record intent of batch %q: %w", next.BatchID, err)
		}
		return nil
	})
	return adm, err
}

// capEntry is one send in a number's row of the cap index: when, and the
// attempt that made it (so that an attempt not acted on gives it back).
type capEntry struct{ at, attempt int64 }

func parseCapEntries(s string) []capEntry {
	var es []capEntry
	for part := range strings.SplitSeq(s, ",") {
		at, attempt, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseInt(at, 10, 64)
		b, err2 := strconv.ParseInt(attempt, 10, 64)
		if err1 == nil && err2 == nil {
			es = append(es, capEntry{a, b})
		}
	}
	return es
}

func formatCapEntries(es []capEntry) string {
	var b []byte
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, e.at, 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, e.attempt, 10)
	}
	return string(b)
}

// capSecond is the second the cap index records a send made at t: the
// next whole second when t falls between two, so that a recorded send is
// never older than the real one and the window never lets a number go
// early (a window's start is rounded down: a send at its edge counts a
// second longer, never a second shorter).
func capSecond(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// sendableAt is when a number whose recent sends are es may be messaged
// again under c, as of now: now when it is under the cap.
func (c Cap) sendableAt(es []capEntry, now time.Time) time.Time {
	from := now.Add(-c.Per).Unix()
	var in []int64
	for _, e := range es {
		if e.at > from {
			in = append(in, e.at)
		}
	}
	if len(in) < c.Max {
		return now
	}
	slices.Sort(in)
	// The window must lose len(in)-c.Max+1 sends: the last of those goes
	// out of it Per after it was made.
	return time.Unix(in[len(in)-c.Max], 0).Add(c.Per).UTC()
}

// ledgerRows reads the ledger's rows for phones: whether each opted out,
// and its row of the cap index (in PostgreSQL made if missing and locked,
// in the numbers' order).
func (t *txn) ledgerRows(phones []string) (optedOut map[string]bool, caps map[string][]capEntry, err error) {
	q := t.w.s.q
	list := string(appendPhones(nil, phones))
	t.wrote = true // in PostgreSQL the read makes and locks rows
	optedOut, caps = map[string]bool{}, map[string][]capEntry{}
	rows, err := t.conn.QueryContext(t.ctx, q.capsFor, list)
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var p, sends string
		var out bool
		if err := rows.Scan(&p, &sends, &out); err != nil {
			rows.Close()
			return nil, nil, err
		}
		if out {
			optedOut[p] = true
		}
		if sends != "" {
			caps[p] = parseCapEntries(sends)
		}
	}
	return optedOut, caps, closeRows(rows)
}

func closeRows(rows *sql.Rows) error {
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}

// writeCaps writes back the rows of the cap index of the given numbers.
func (t *txn) writeCaps(caps map[string][]capEntry, phones []string) error {
	type row struct {
		P string `json:"p"`
		S string `json:"s"`
		L int64  `json:"l"`
	}
	rs := make([]row, 0, len(phones))
	for _, p := range phones {
		es := caps[p]
		var last int64
		for _, e := range es {
			last = max(last, e.at)
		}
		rs = append(rs, row{p, formatCapEntries(es), last})
	}
	b, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	t.wrote = true
	_, err = t.conn.ExecContext(t.ctx, t.w.s.q.capsWrite, string(b))
	return err
}

// admit records an intent: the recipients already sent or in doubt are
// refused as by RecordIntent; in a project's state those who opted out are
// recorded suppressed and those over the cap held back, and the rest get
// the intent and a claim in the cap index. strict refuses any trimming.
func (t *txn) admit(in Intent, strict bool) (Admission, error) {
	if err := t.checkPause(); err != nil {
		return Admission{}, err
	}
	k := t.w.known
	prev := make([]Status, len(in.Phones))
	for i, p := range in.Phones {
		c := k.check(p)
		if c == Sent || c == InDoubt {
			if c == InDoubt && slices.Contains(in.Phones[:i], p) {
				return Admission{}, refusal{fmt.Errorf("%s is listed twice: %w", e164.Mask(p), ErrAlreadySent)}
			}
			return Admission{}, refusal{fmt.Errorf("%s is already %s: %w", e164.Mask(p), c, ErrAlreadySent)}
		}
		prev[i] = c
	}
	adm := Admission{Send: in.Phones}
	var caps map[string][]capEntry
	if t.w.s.shared {
		var optedOut map[string]bool
		var err error
		if optedOut, caps, err = t.ledgerRows(in.Phones); err != nil {
			return Admission{}, err
		}
		adm = t.w.s.sort(in.Phones, optedOut, caps)
		if strict && len(adm.Send) != len(in.Phones) {
			return Admission{}, refusal{fmt.Errorf("%s: %w", in.BatchID, ErrNotAdmitted)}
		}
		for i, p := range in.Phones {
			switch {
			case optedOut[p]:
				k.set(p, Suppressed)
			case slices.Contains(adm.Held, p):
				k.set(p, prev[i])
			}
		}
	}
	if len(adm.Suppressed) > 0 {
		if err := t.putFinished(in.BatchID, AttemptSuppressed, in.BodyHash, in.PlanID, adm.Suppressed, "opted out"); err != nil {
			return Admission{}, err
		}
		t.changed = true
	}
	if len(adm.Send) == 0 {
		return adm, nil
	}
	t.w.buf = appendPhones(t.w.buf[:0], adm.Send)
	var id int64
	if err := t.queryRow("insertAttempt", t.w.s.args(in.BatchID, in.BodyHash, string(t.w.buf), len(adm.Send), t.now, in.PlanID)...).Scan(&id); err != nil {
		return Admission{}, err
	}
	k.setBatch(in.BatchID, id)
	t.changed = true
	if caps != nil {
		// The claim is one entry, the same for every number of the
		// intent, appended where it is stored: only the numbers go over.
		now := capSecond(t.w.s.now())
		entry := formatCapEntries([]capEntry{{now, id}})
		t.wrote = true
		if _, err := t.conn.ExecContext(t.ctx, t.w.s.q.capsClaim, string(t.w.buf), entry, now); err != nil {
			return Admission{}, err
		}
	}
	return adm, nil
}

// sort divides phones into those to send, suppressed and held back.
func (s *State) sort(phones []string, optedOut map[string]bool, caps map[string][]capEntry) Admission {
	adm := Admission{Send: make([]string, 0, len(phones))}
	now := s.now()
	for _, p := range phones {
		switch {
		case optedOut[p]:
			adm.Suppressed = append(adm.Suppressed, p)
		case s.cap != nil && s.cap.sendableAt(caps[p], now).After(now):
			adm.Held = append(adm.Held, p)
			if at := s.cap.sendableAt(caps[p], now); at.After(adm.HeldUntil) {
				adm.HeldUntil = at
			}
		default:
			adm.Send = append(adm.Send, p)
		}
	}
	return adm
}

// putFinished records a finished attempt of the batch for phones.
func (t *txn) putFinished(batchID string, st AttemptState, bodyHash, planID string, phones []string, reason string) error {
	t.w.buf = appendPhones(t.w.buf[:0], phones)
	var id int64
	if err := t.queryRow("putAttempt", t.w.s.args(batchID, string(st), bodyHash, len(phones), 0, "", reason, t.now, t.now, planID, string(t.w.buf))...).Scan(&id); err != nil {
		return err
	}
	status := attemptStatus(string(st))
	for _, p := range phones {
		t.w.known.set(p, status)
	}
	return nil
}

// releaseClaims gives back the cap index's claims of an attempt the API
// did not act on, for its phones: they were not messaged.
func (t *txn) releaseClaims(phones []string, attempt int64) error {
	if !t.w.s.shared || len(phones) == 0 {
		return nil
	}
	_, caps, err := t.ledgerRows(phones)
	if err != nil {
		return err
	}
	for p, es := range caps {
		caps[p] = slices.DeleteFunc(es, func(e capEntry) bool { return e.attempt == attempt })
	}
	return t.writeCaps(caps, phones)
}

// checkPause refuses an intent while the campaign is paused. The pause is
// read where the intent is recorded, so that nothing slips in between a
// pause and the apply that learns of it.
func (t *txn) checkPause() error {
	var p Pause
	var at string
	if err := t.stmt("pausedNow").QueryRowContext(t.ctx, t.w.s.args()...).Scan(&at, &p.By, &p.Reason); err != nil {
		return err
	}
	if at == "" {
		return nil
	}
	p.At = parseTime(at)
	return refusal{&PausedError{Campaign: t.w.s.campaign, Pause: p}}
}
