package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/rawjson"
)

// A project's ledger (package ledger: opt-outs, the frequency caps) is
// checked where an intent is recorded, in its transaction, through the
// Gate the state was opened with (Options.Gate). What the record keeps of
// it is here: the intent trimmed to those the gate let go, those opted
// out recorded suppressed.

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

// admit records an intent: the recipients already sent or in doubt are
// refused as by RecordIntent; with a Gate, those opted out are recorded
// suppressed and those over a cap held back, and the rest get the intent
// and their claims. strict refuses any trimming.
//
// The common intent costs the attempt (which reads the pause in the same
// statement) and the gate's claim; only when someone is left out do more
// statements follow, to take the attempt's recipients down to those sent.
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
	id, err := t.insertIntent(in, string(t.w.buf))
	if err != nil {
		return Admission{}, err
	}
	adm := Admission{Send: in.Phones}
	if g := t.w.s.gate; g != nil {
		if adm, err = g.Claim(&Tx{t: t, now: t.w.s.now()}, in.Phones, id); err != nil {
			return Admission{}, err
		}
		if len(adm.Send) < len(in.Phones) {
			if strict {
				return Admission{}, refusal{fmt.Errorf("%s: %w", in.BatchID, ErrNotAdmitted)}
			}
			if err := t.trim(in, id, adm, prev); err != nil {
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

// trim records what the gate left out of an intent: those held get their
// status back (a later run sends them), those opted out are recorded
// suppressed, and the attempt keeps only the recipients sent, or goes when
// there are none.
func (t *txn) trim(in Intent, attempt int64, adm Admission, prev []Status) error {
	k := t.w.known
	if len(adm.Held) > 0 {
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

// releaseClaims gives back the gate's claims of an attempt for phones: the
// provider did not act on them, or the operator says nobody was messaged.
func (t *txn) releaseClaims(phones []string, attempt int64) error {
	g := t.w.s.gate
	if g == nil || len(phones) == 0 {
		return nil
	}
	return g.Release(&Tx{t: t, now: t.w.s.now()}, phones, attempt)
}
