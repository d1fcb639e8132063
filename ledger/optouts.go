package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/state"
)

// Opt-outs are kept as a log of additions and removals (re-consent), each
// with who, when and why, numbered in order: the project's opt-outs as of
// a number of that log are what a plan made then subtracted, which is how
// a saved plan is checked against the opt-outs it saw while later ones are
// still honoured (the Gate suppresses them).

// OptOutChange adds a number to the project's opt-outs or, with Remove,
// takes it off (re-consent).
type OptOutChange struct {
	Phone  string // E.164
	Remove bool
	At     time.Time
	By     string
	Reason string
	Source string // "reply": a reply's stop or start word; "": a person's command
}

// OptOut is a number opted out, as its latest addition records it.
type OptOut struct {
	Phone  string    `json:"phone"`
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	// Source is where it came from: "reply" (the number replied a stop
	// word), or "" for a person's command.
	Source string `json:"source,omitempty"`
}

// ChangeOptOuts records changes to the opt-outs of the project's state at
// loc, in one transaction, without a lock (it works while applies run: each
// checks the opt-outs in its intent's transaction). It returns the log's
// number after them.
func ChangeOptOuts(ctx context.Context, loc state.Location, changes []OptOutChange) (int64, error) {
	st, err := state.OpenStore(ctx, loc, true)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	q := of(st.Postgres)
	tx, err := st.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("write state %s: %w", st.Shown, err)
	}
	defer tx.Rollback()
	if err := lockOptOuts(ctx, tx, st.Postgres); err != nil {
		return 0, fmt.Errorf("write state %s: %w", st.Shown, err)
	}
	if len(changes) > 0 {
		if err := state.RefuseVacated(ctx, tx, st.Postgres, st.Shown); err != nil {
			return 0, err
		}
	}
	for _, c := range changes {
		if _, err := change(ctx, tx, q, c); err != nil {
			return 0, fmt.Errorf("write state %s: %w", st.Shown, err)
		}
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, q[qOptOutSeq]).Scan(&seq); err != nil {
		return 0, fmt.Errorf("write state %s: %w", st.Shown, err)
	}
	return seq, tx.Commit()
}

// lockOptOuts makes changes to the opt-outs take turns in PostgreSQL: the
// log's numbers must become visible in their order (a plan reads the set
// as of one of them), and a sequence hands them out before commit.
// Intents and reads are not held up (this mode conflicts only with
// writers). A file's transaction holds its write lock already.
func lockOptOuts(ctx context.Context, tx *sql.Tx, postgres bool) error {
	if !postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `LOCK TABLE optouts IN SHARE ROW EXCLUSIVE MODE`)
	return err
}

// change logs one opt-out change and applies it to the numbers opted out
// now, returning its number in the log.
func change(ctx context.Context, tx *sql.Tx, q *dialect, c OptOutChange) (int64, error) {
	action := "add"
	if c.Remove {
		action = "remove"
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, q[qInsertOptOut], c.Phone, action, formatTime(c.At), c.By, c.Reason, c.Source).Scan(&seq); err != nil {
		return 0, err
	}
	var err error
	if c.Remove {
		_, err = tx.ExecContext(ctx, q[qOptInNow], c.Phone)
	} else {
		_, err = tx.ExecContext(ctx, q[qOptOutNow], c.Phone, seq, formatTime(c.At), c.By, c.Reason, c.Source)
	}
	return seq, err
}

const timeFormat = time.RFC3339Nano

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) time.Time {
	t, _ := time.Parse(timeFormat, s)
	return t
}

// OptOuts calls fn for every number opted out in the project's state at
// loc, ordered by number, and returns the opt-out log's number. A missing
// state has none.
func OptOuts(ctx context.Context, loc state.Location, fn func(OptOut) error) (int64, error) {
	v, err := Open(ctx, loc)
	if err != nil {
		return 0, err
	}
	defer v.Close()
	return v.eachOptOut(ctx, fn)
}

// OptOutSet is the set of numbers opted out as of the opt-out log's number
// asOf (0: now), and the log's number it reflects: what a plan subtracts.
// It reads the numbers opted out now, corrected by the log for those
// whose opt-out changed after asOf (usually few: a plan is applied soon
// after it is made). The reads are separate statements, while opt-outs may
// change (they take no lock): a change committed during them is seen by
// the log's number moving, and the set is read again.
func (v *View) OptOutSet(ctx context.Context, asOf int64) (*e164.Map[struct{}], int64, error) {
	seq, err := v.optOutSeq(ctx)
	for tries := 0; ; tries++ {
		if err != nil || seq == 0 {
			return e164.NewMap[struct{}](0), seq, err
		}
		at := asOf
		if at <= 0 || at > seq {
			at = seq
		}
		m, err := v.optOutSetAsOf(ctx, at, seq)
		if err != nil {
			return nil, 0, err
		}
		after, err := v.optOutSeq(ctx)
		if err != nil {
			return nil, 0, err
		}
		if after == seq {
			return m, at, nil
		}
		if tries == 9 {
			return nil, 0, fmt.Errorf("read state %s: the opt-outs changed each of ten times they were read: try again", v.shown)
		}
		seq = after
	}
}

// optOutSetAsOf reads the set as of the log's number asOf; seq, the log's
// number now, bounds how many are opted out now (each opt-out is a number
// of the log).
func (v *View) optOutSetAsOf(ctx context.Context, asOf, seq int64) (*e164.Map[struct{}], error) {
	then, err := v.optOutsChangedAfter(ctx, asOf)
	if err != nil {
		return nil, err
	}
	// The numbers are gathered first and the set made once at its size: a
	// million opt-outs put in a set that grows as it goes were moved about
	// 2 million times more, a fifth of the read's time.
	rows, err := v.db.QueryContext(ctx, v.q[qOptOutPhones])
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", v.shown, err)
	}
	defer rows.Close()
	// Sized once: growing it a few times over touched twice the memory,
	// and memory touched for the first time is what a plan pays most for
	// on a small virtual machine (a page fault each 4 KiB).
	packed := make([]e164.Packed, 0, min(seq, 1<<22))
	var other []string // numbers that do not pack (a state written by hand)
	var p sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("read state %s: %w", v.shown, err)
		}
		if _, changed := then[string(p)]; changed {
			continue
		}
		if k, ok := e164.Pack(string(p)); ok {
			packed = append(packed, k)
		} else {
			other = append(other, string(p))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", v.shown, err)
	}
	m := e164.NewMap[struct{}](len(packed) + len(other) + len(then))
	m.AddPacked(packed)
	for _, p := range other {
		m.Ref(p)
	}
	for p, out := range then {
		if out {
			m.Ref(p)
		}
	}
	return m, nil
}

// optOutSeq is the opt-out log's number now: 0 when there is none (or no
// ledger, in an older state).
func (v *View) optOutSeq(ctx context.Context) (int64, error) {
	if v.db == nil {
		return 0, nil
	}
	var seq int64
	if err := v.db.QueryRowContext(ctx, v.q[qOptOutSeq]).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read state %s: %w", v.shown, err)
	}
	return seq, nil
}

// optOutsChangedAfter maps each number whose opt-out changed after the log
// number asOf to whether it was opted out as of asOf.
func (v *View) optOutsChangedAfter(ctx context.Context, asOf int64) (map[string]bool, error) {
	rows, err := v.db.QueryContext(ctx, v.q[qOptOutsAfter], asOf)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", v.shown, err)
	}
	then := map[string]bool{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read state %s: %w", v.shown, err)
		}
		then[p] = false
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("read state %s: %w", v.shown, err)
	}
	for p := range then {
		var action string
		err := v.db.QueryRowContext(ctx, v.q[qOptOutAsOf], p, asOf).Scan(&action)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read state %s: %w", v.shown, err)
		}
		then[p] = action == "add"
	}
	return then, nil
}

// eachOptOut walks the numbers opted out now, by number, and returns the
// opt-out log's number.
func (v *View) eachOptOut(ctx context.Context, fn func(OptOut) error) (int64, error) {
	seq, err := v.optOutSeq(ctx)
	if err != nil || seq == 0 {
		return seq, err
	}
	rows, err := v.db.QueryContext(ctx, v.q[qOptOutsNow])
	if err != nil {
		return 0, fmt.Errorf("read state %s: %w", v.shown, err)
	}
	defer rows.Close()
	for rows.Next() {
		var o OptOut
		var at string
		if err := rows.Scan(&o.Phone, &at, &o.By, &o.Reason, &o.Source); err != nil {
			return 0, fmt.Errorf("read state %s: %w", v.shown, err)
		}
		o.At = parseTime(at)
		if err := fn(o); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read state %s: %w", v.shown, err)
	}
	return seq, nil
}
