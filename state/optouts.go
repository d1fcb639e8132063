package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/smsform/smsform/internal/e164"
)

// Opt-outs are kept as a log of additions and removals (re-consent), each
// with who, when and why, numbered in order: the project's opt-outs as of
// a number of that log are what a plan made then subtracted, which is how
// a saved plan is checked against the opt-outs it saw while later ones are
// still honoured (AdmitIntent).

// OptOutChange adds a number to the project's opt-outs or, with Remove,
// takes it off (re-consent).
type OptOutChange struct {
	Phone  string // E.164
	Remove bool
	At     time.Time
	By     string
	Reason string
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
func ChangeOptOuts(ctx context.Context, loc string, changes []OptOutChange) (int64, error) {
	db, q, err := openControl(ctx, loc, "", true, true)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("write state %s: %w", Redact(loc), err)
	}
	defer tx.Rollback()
	if q == postgresDialect {
		// The log's numbers must become visible in their order (a plan
		// reads the set as of one of them): in PostgreSQL a sequence hands
		// them out before commit, so changes take turns. Intents and
		// reads are not held up (this mode conflicts only with writers).
		if _, err := tx.ExecContext(ctx, `LOCK TABLE optouts IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return 0, fmt.Errorf("write state %s: %w", Redact(loc), err)
		}
	}
	ins, err := tx.PrepareContext(ctx, q[qInsertOptOut])
	if err != nil {
		return 0, fmt.Errorf("write state %s: %w", Redact(loc), err)
	}
	defer ins.Close()
	var seq int64
	for _, c := range changes {
		action := "add"
		if c.Remove {
			action = "remove"
		}
		if err := ins.QueryRowContext(ctx, c.Phone, action, formatTime(c.At), c.By, c.Reason).Scan(&seq); err != nil {
			return 0, fmt.Errorf("write state %s: %w", Redact(loc), err)
		}
		if c.Remove {
			_, err = tx.ExecContext(ctx, q[qOptInNow], c.Phone)
		} else {
			_, err = tx.ExecContext(ctx, q[qOptOutNow], c.Phone, seq, formatTime(c.At), c.By, c.Reason)
		}
		if err != nil {
			return 0, fmt.Errorf("write state %s: %w", Redact(loc), err)
		}
	}
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM optouts`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("write state %s: %w", Redact(loc), err)
	}
	return seq, tx.Commit()
}

// OptOuts calls fn for every number opted out in the project's state at
// loc, ordered by number, and returns the opt-out log's number. A missing
// state has none.
func OptOuts(ctx context.Context, loc string, fn func(OptOut) error) (int64, error) {
	st, err := openLedger(ctx, loc)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return st.eachOptOut(ctx, fn)
}

// openLedger opens the project's state at loc to read its ledger, whatever
// campaigns it holds, without creating or changing anything: an empty view
// when there is no state yet.
func openLedger(ctx context.Context, loc string) (*State, error) {
	if err := CheckLocation(loc); err != nil {
		return nil, err
	}
	if IsPostgres(loc) {
		t, err := parsePostgres(loc)
		if err != nil {
			return nil, err
		}
		s := &State{loc: t.shown, q: postgresDialect, now: time.Now, schema: SchemaVersion}
		db := stdlib.OpenDB(*t.cfg)
		if v, err := pgSchemaVersion(ctx, db, t); err != nil || v < PostgresSchemaVersion {
			db.Close()
			if err == nil && v > 0 {
				err = fmt.Errorf("open state %s: schema %s is at version %d, this smsform needs %d: run any command that writes to migrate it", t.shown, t.schema, v, PostgresSchemaVersion)
			}
			return s, explainPostgres(t, err)
		}
		s.db = db
		return s, nil
	}
	return openFileView(ctx, loc)
}

// OptOutSet is the set of numbers opted out as of the opt-out log's number
// asOf (0: now), and the log's number it reflects: what a plan subtracts.
// It reads the numbers opted out now, corrected by the log for those
// whose opt-out changed after asOf (usually few: a plan is applied soon
// after it is made). The reads are separate statements, while opt-outs may
// change (they take no lock): a change committed during them is seen by
// the log's number moving, and the set is read again.
func (s *State) OptOutSet(ctx context.Context, asOf int64) (*e164.Map[struct{}], int64, error) {
	seq, err := s.optOutSeq(ctx)
	for tries := 0; ; tries++ {
		if err != nil || seq == 0 {
			return e164.NewMap[struct{}](0), seq, err
		}
		at := asOf
		if at <= 0 || at > seq {
			at = seq
		}
		m, err := s.optOutSetAsOf(ctx, at)
		if err != nil {
			return nil, 0, err
		}
		after, err := s.optOutSeq(ctx)
		if err != nil {
			return nil, 0, err
		}
		if after == seq {
			return m, at, nil
		}
		if tries == 9 {
			return nil, 0, fmt.Errorf("read state %s: the opt-outs changed each of ten times they were read: try again", s.loc)
		}
		seq = after
	}
}

// optOutSetAsOf reads the set as of the log's number asOf.
func (s *State) optOutSetAsOf(ctx context.Context, asOf int64) (*e164.Map[struct{}], error) {
	then, err := s.optOutsChangedAfter(ctx, asOf)
	if err != nil {
		return nil, err
	}
	m := e164.NewMap[struct{}](0)
	rows, err := s.db.QueryContext(ctx, s.q[qOptoutPhones])
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("read state %s: %w", s.loc, err)
		}
		if _, changed := then[p]; !changed {
			m.Ref(p)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
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
func (s *State) optOutSeq(ctx context.Context) (int64, error) {
	if s.db == nil || s.unscoped {
		return 0, nil
	}
	var seq int64
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM optouts`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return seq, nil
}

// optOutsChangedAfter maps each number whose opt-out changed after the log
// number asOf to whether it was opted out as of asOf.
func (s *State) optOutsChangedAfter(ctx context.Context, asOf int64) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, s.q[qOptoutsAfter], asOf)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	then := map[string]bool{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read state %s: %w", s.loc, err)
		}
		then[p] = false
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	for p := range then {
		var action string
		err := s.db.QueryRowContext(ctx, s.q[qOptoutAsOf], p, asOf).Scan(&action)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read state %s: %w", s.loc, err)
		}
		then[p] = action == "add"
	}
	return then, nil
}

// eachOptOut walks the numbers opted out now, by number, and returns the
// opt-out log's number.
func (s *State) eachOptOut(ctx context.Context, fn func(OptOut) error) (int64, error) {
	seq, err := s.optOutSeq(ctx)
	if err != nil || seq == 0 {
		return seq, err
	}
	rows, err := s.db.QueryContext(ctx, s.q[qOptoutsNow])
	if err != nil {
		return 0, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	defer rows.Close()
	for rows.Next() {
		var o OptOut
		var at string
		if err := rows.Scan(&o.Phone, &at, &o.By, &o.Reason, &o.Source); err != nil {
			return 0, fmt.Errorf("read state %s: %w", s.loc, err)
		}
		o.At = parseTime(at)
		if err := fn(o); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return seq, nil
}

// CapHolds is, for every number the cap c holds back at now in the state's
// project, when it may be messaged again: what a plan reports as held back.
func (s *State) CapHolds(ctx context.Context, c Cap, now time.Time) (*e164.Map[time.Time], error) {
	m := e164.NewMap[time.Time](0)
	if s.db == nil || s.unscoped {
		return m, nil
	}
	rows, err := s.db.QueryContext(ctx, s.q[qCapsSince], now.Add(-c.Per).Unix())
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	defer rows.Close()
	var es []capEntry
	for rows.Next() {
		var p, sends string
		if err := rows.Scan(&p, &sends); err != nil {
			return nil, fmt.Errorf("read state %s: %w", s.loc, err)
		}
		es = appendCapEntries(es[:0], sends)
		if at := c.sendableAt(es, now); at.After(now) {
			v, _ := m.Ref(p)
			*v = at
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return m, nil
}

// PruneCaps drops from the cap index of the project's state at loc every
// send older than olderThan before now, and the numbers left with none: the
// index grows with every send, and no cap looks further back than its
// window. The campaigns' own records are never touched.
func PruneCaps(ctx context.Context, loc string, olderThan time.Duration, now time.Time) (sends, numbers int, err error) {
	db, q, err := openControl(ctx, loc, "", true, false)
	if err != nil || db == nil {
		return 0, 0, err
	}
	defer db.Close()
	cut := now.Add(-olderThan).Unix()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("write state %s: %w", Redact(loc), err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, q[qCapsAll])
	if err != nil {
		return 0, 0, fmt.Errorf("read state %s: %w", Redact(loc), err)
	}
	type update struct {
		phone, old, sends string
		last              int64
		dropped           int
	}
	var ups []update
	for rows.Next() {
		var p, s string
		if err := rows.Scan(&p, &s); err != nil {
			rows.Close()
			return 0, 0, err
		}
		u := update{phone: p, old: s}
		var keep []capEntry
		for _, e := range parseCapEntries(s) {
			if e.at >= cut {
				keep = append(keep, e)
				u.last = max(u.last, e.at)
			} else {
				u.dropped++
			}
		}
		if u.dropped > 0 || len(keep) == 0 {
			u.sends = formatCapEntries(keep)
			ups = append(ups, u)
		}
	}
	if err := closeRows(rows); err != nil {
		return 0, 0, err
	}
	for _, u := range ups {
		var res sql.Result
		if u.sends == "" {
			res, err = tx.ExecContext(ctx, q[qCapsDelete], u.phone, u.old)
		} else {
			res, err = tx.ExecContext(ctx, q[qCapsSet], u.phone, u.sends, u.last, u.old)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("write state %s: %w", Redact(loc), err)
		}
		// A row claimed since it was read is left as the claim made it.
		if n, err := res.RowsAffected(); err != nil {
			return 0, 0, fmt.Errorf("write state %s: %w", Redact(loc), err)
		} else if n == 1 {
			sends += u.dropped
			if u.sends == "" {
				numbers++
			}
		}
	}
	return sends, numbers, tx.Commit()
}
