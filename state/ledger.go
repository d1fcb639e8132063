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
	"github.com/smsform/smsform/internal/rawjson"
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

// parseCapEntries reads a cap index row's sends ("unix:attempt,…"),
// leaving out an entry it cannot read.
func parseCapEntries(s string) []capEntry { return appendCapEntries(nil, s) }

// appendCapEntries appends the entries of a cap index row's sends to es:
// for a reader of many rows, which keeps one slice for all.
func appendCapEntries(es []capEntry, s string) []capEntry {
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
	in := make([]int64, 0, 8) // on the stack for up to 8: a plan asks this of every recent number
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

// capRows reads the cap index's rows of phones (in PostgreSQL made if
// missing and locked, in the numbers' order).
func (t *txn) capRows(phones []string) (map[string][]capEntry, error) {
	t.wrote = true // in PostgreSQL the read makes and locks rows
	rows, err := t.conn.QueryContext(t.ctx, t.w.s.q[qCapsFor], string(rawjson.AppendStrings(nil, phones)))
	if err != nil {
		return nil, err
	}
	caps := map[string][]capEntry{}
	for rows.Next() {
		var p, sends string
		if err := rows.Scan(&p, &sends); err != nil {
			rows.Close()
			return nil, err
		}
		if sends != "" {
			caps[p] = parseCapEntries(sends)
		}
	}
	return caps, closeRows(rows)
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
	_, err = t.conn.ExecContext(t.ctx, t.w.s.q[qCapsWrite], string(b))
	return err
}

// admit records an intent: the recipients already sent or in doubt are
// refused as by RecordIntent; in a project's state those who opted out are
// recorded suppressed and those over the cap held back, and the rest get
// the intent and a claim in the cap index. strict refuses any trimming.
//
// The common intent costs two statements whatever the ledger holds: the
// attempt (which reads the pause in the same statement), then the claim,
// which makes, locks and appends to the numbers' rows of the cap index
// through its key and returns them. Only when someone is left out does a
// third statement or more follow, to take the claim back from those held
// and the attempt's recipients down to those sent.
func (t *txn) admit(in Intent, strict bool) (Admission, error) {
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
	t.w.buf = rawjson.AppendStrings(t.w.buf[:0], in.Phones)
	list := string(t.w.buf)
	id, err := t.insertIntent(in, list)
	if err != nil {
		return Admission{}, err
	}
	adm := Admission{Send: in.Phones}
	if t.w.s.shared {
		var sends map[string][]capEntry
		if adm, sends, err = t.claim(in.Phones, list, id); err != nil {
			return Admission{}, err
		}
		if len(adm.Send) < len(in.Phones) {
			if strict {
				return Admission{}, refusal{fmt.Errorf("%s: %w", in.BatchID, ErrNotAdmitted)}
			}
			if err := t.trim(in, id, adm, sends, prev); err != nil {
				return Admission{}, err
			}
		}
	}
	if len(adm.Send) > 0 {
		k.setBatch(in.BatchID, id)
	}
	// An intent that records nobody (everyone held back, the attempt taken
	// out again) changes nothing of the campaign's record: the serial
	// stays, and a saved plan made before is still the state's. An outcome
	// recorded in the same change has set changed already.
	if len(adm.Send) > 0 || len(adm.Suppressed) > 0 {
		t.changed = true
	}
	return adm, nil
}

// insertIntent records the attempt of an intent for all its recipients
// (list, as JSON) and returns its id, unless the campaign is paused: the
// pause is read in the same statement, so that nothing slips in between a
// pause and the apply that learns of it.
func (t *txn) insertIntent(in Intent, list string) (int64, error) {
	wrote := t.wrote
	for tries := 1; ; tries++ {
		var id int64
		err := t.queryRow(qInsertAttempt, t.w.s.args(in.BatchID, in.BodyHash, list, len(in.Phones), t.now, in.PlanID)...).Scan(&id)
		if !errors.Is(err, sql.ErrNoRows) {
			return id, err
		}
		t.wrote = wrote // it inserted nothing: paused
		var p Pause
		var at string
		if err := t.stmt(qPausedNow).QueryRowContext(t.ctx, t.w.s.args()...).Scan(&at, &p.By, &p.Reason); err != nil {
			return 0, err
		}
		if at != "" {
			p.At = parseTime(at)
			return 0, refusal{&PausedError{Campaign: t.w.s.campaign, Pause: p}}
		}
		// Resumed between the two statements (PostgreSQL reads each as of
		// its start): the insert is tried again.
		if tries == 10 {
			return 0, fmt.Errorf("campaign %q was paused and resumed %d times while its intent was recorded", t.w.s.campaign, tries)
		}
	}
}

// claim appends the attempt's entry to the cap index rows of phones, but
// those of numbers opted out, and sorts phones into those to send,
// suppressed (opted out) and held back (over the cap without the claim).
// It returns each claimed number's sends but this claim, under a cap.
// list is phones as JSON.
func (t *txn) claim(phones []string, list string, attempt int64) (Admission, map[string][]capEntry, error) {
	s := t.w.s
	now := s.now()
	at := capSecond(now)
	t.wrote = true
	rows, err := t.conn.QueryContext(t.ctx, s.q[qCapsClaim], list, formatCapEntries([]capEntry{{at, attempt}}), at)
	if err != nil {
		return Admission{}, nil, err
	}
	claimed := make(map[string][]capEntry, len(phones))
	for rows.Next() {
		var p, sends string
		if err := rows.Scan(&p, &sends); err != nil {
			rows.Close()
			return Admission{}, nil, err
		}
		var es []capEntry
		if s.cap != nil {
			// The claim is the row's last entry.
			es = parseCapEntries(sends)
			es = es[:max(len(es)-1, 0)]
		}
		claimed[p] = es
	}
	if err := closeRows(rows); err != nil {
		return Admission{}, nil, err
	}
	adm := Admission{Send: phones}
	if len(claimed) == len(phones) && s.cap == nil {
		return adm, claimed, nil
	}
	adm.Send = make([]string, 0, len(phones))
	for _, p := range phones {
		es, ok := claimed[p]
		var until time.Time
		if ok && s.cap != nil {
			until = s.cap.sendableAt(es, now)
		}
		switch {
		case !ok:
			adm.Suppressed = append(adm.Suppressed, p)
		case until.After(now):
			adm.Held = append(adm.Held, p)
			if until.After(adm.HeldUntil) {
				adm.HeldUntil = until
			}
		default:
			adm.Send = append(adm.Send, p)
		}
	}
	return adm, claimed, nil
}

// trim records what claim left out of an intent: the claim goes back from
// the rows of those held (sends: their entries but the claim; their
// status back to what it was: a later run sends them), those opted out
// are recorded suppressed, and the attempt keeps only the recipients
// sent, or goes when there are none.
func (t *txn) trim(in Intent, attempt int64, adm Admission, sends map[string][]capEntry, prev []Status) error {
	k := t.w.known
	if len(adm.Held) > 0 {
		if err := t.writeCaps(sends, adm.Held); err != nil {
			return err
		}
		held := make(map[string]bool, len(adm.Held))
		for _, p := range adm.Held {
			held[p] = true
		}
		for i, p := range in.Phones {
			if held[p] {
				k.set(p, prev[i])
			}
		}
	}
	if len(adm.Send) == 0 {
		if _, err := t.exec(qDropAttempt, attempt); err != nil {
			return err
		}
	} else {
		t.w.buf = rawjson.AppendStrings(t.w.buf[:0], adm.Send)
		if _, err := t.exec(qSetPhones, string(t.w.buf), len(adm.Send), attempt); err != nil {
			return err
		}
	}
	if len(adm.Suppressed) > 0 {
		return t.putFinished(in.BatchID, AttemptSuppressed, in.BodyHash, in.PlanID, adm.Suppressed, "opted out")
	}
	return nil
}

// putFinished records a finished attempt of the batch for phones.
func (t *txn) putFinished(batchID string, st AttemptState, bodyHash, planID string, phones []string, reason string) error {
	t.w.buf = rawjson.AppendStrings(t.w.buf[:0], phones)
	var id int64
	if err := t.queryRow(qPutAttempt, t.w.s.args(batchID, string(st), bodyHash, len(phones), 0, "", reason, t.now, t.now, planID, string(t.w.buf), "", "")...).Scan(&id); err != nil {
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
	caps, err := t.capRows(phones)
	if err != nil {
		return err
	}
	for p, es := range caps {
		caps[p] = slices.DeleteFunc(es, func(e capEntry) bool { return e.attempt == attempt })
	}
	return t.writeCaps(caps, phones)
}
