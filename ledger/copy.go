package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/smsform/smsform/state"
)

// Size is how much of a project's ledger a state holds.
type Size struct {
	OptOutSeq  int64 // the opt-out log's number: 0 when it holds no opt-out
	CapNumbers int   // numbers in the frequency cap's index
	// Received counts the replies and the delivery reports matched to no
	// campaign. A migration carries them with the ledger, but they are not
	// a ledger of their own (a state that received first is merged into).
	Received int
}

// Empty reports whether the state holds no ledger: it never was a
// project's state, or one that never recorded anything of people.
func (l Size) Empty() bool { return l.OptOutSeq == 0 && l.CapNumbers == 0 }

// SizeOf says how much of a project's ledger the state at loc holds;
// nothing for a missing state or one of an older schema.
func SizeOf(ctx context.Context, loc state.Location) (Size, error) { return size(ctx, loc) }

func size(ctx context.Context, loc state.Location) (Size, error) {
	v, err := Open(ctx, loc)
	if err != nil {
		return Size{}, err
	}
	defer v.Close()
	if v.db == nil {
		return Size{}, nil
	}
	var l Size
	if l.OptOutSeq, err = v.optOutSeq(ctx); err != nil {
		return l, err
	}
	n, err := counts(ctx, v.db)
	if err != nil {
		return l, err
	}
	l.CapNumbers = n.capNumbers
	if v.store.Schema >= 5 { // replies and reports came with schema 5
		r, err := receivedCounts(ctx, v.db)
		l.Received = r[0] + r[1]
		return l, err
	}
	return l, nil
}

// Copied counts what [Copy] copied.
type Copied struct {
	OptOutChanges int   // entries of the opt-out log
	OptedOut      int   // numbers opted out now
	CapNumbers    int   // numbers in the frequency cap's index
	Replies       int   // replies received (STOP, START and others)
	Unmatched     int   // delivery reports matched to no campaign
	Seq           int64 // the opt-out log's number, the same in both states
	Already       bool  // the target held this very ledger: nothing was copied
}

// copyChunk is how many rows one statement of Copy writes.
const copyChunk = 1000

// ledgerTable is one table of the ledger as Copy reads and writes it.
type ledgerTable struct {
	// The rows read: SELECT columns FROM from.
	from, columns string
	// pg and sqlite insert a JSON array of rows given as arrays of text.
	pg, sqlite string
	// rewrite, if set, changes a row read before it is written.
	rewrite func(row []string)
}

var ledgerTables = []ledgerTable{
	{"optouts", "id, phone, action, at, by_whom, reason, source",
		`INSERT INTO optouts (id, phone, action, at, by_whom, reason, source) SELECT (r->>0)::bigint, r->>1, r->>2, r->>3, r->>4, r->>5, r->>6 FROM jsonb_array_elements($1::jsonb) r`,
		`INSERT INTO optouts (id, phone, action, at, by_whom, reason, source) SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6 FROM json_each(?1)`, nil},
	{"optouts_now", "phone, id, at, by_whom, reason, source",
		`INSERT INTO optouts_now (phone, id, at, by_whom, reason, source) SELECT r->>0, (r->>1)::bigint, r->>2, r->>3, r->>4, r->>5 FROM jsonb_array_elements($1::jsonb) r`,
		`INSERT INTO optouts_now (phone, id, at, by_whom, reason, source) SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5 FROM json_each(?1)`, nil},
	{"caps", "phone, last_at",
		`INSERT INTO caps (phone, last_at) SELECT r->>0, (r->>1)::bigint FROM jsonb_array_elements($1::jsonb) r`,
		`INSERT INTO caps (phone, last_at) SELECT value->>0, value->>1 FROM json_each(?1)`, nil},
	{"cap_sends", "phone, at, attempt_id, marketing",
		`INSERT INTO cap_sends (phone, at, attempt_id, marketing) SELECT r->>0, (r->>1)::bigint, (r->>2)::bigint, (r->>3)::boolean FROM jsonb_array_elements($1::jsonb) r`,
		`INSERT INTO cap_sends (phone, at, attempt_id, marketing) SELECT value->>0, value->>1, value->>2, value->>3 = 'true' FROM json_each(?1)`,
		// A send's attempt is the source's: no attempt of the target, whose
		// ids may be the same numbers, may give it back (Gate.Release); a
		// boolean is written as each engine reads it.
		func(row []string) {
			row[2] = "0"
			switch row[3] {
			case "1", "t", "true", "TRUE":
				row[3] = "true"
			default:
				row[3] = "false"
			}
		}},
}

// receivedTables are what arrived after the sends that belongs to the
// project rather than to one campaign. They are merged rather than copied
// onto an empty target: each row has its key, and a row the target holds
// already is the same one (a receiver pointed at the target before the
// migration, a migration run again). So a target that received something
// first is not refused, and nothing is counted twice.
var receivedTables = []ledgerTable{
	// A reply names the campaign it answered by its id, which the target
	// gives the campaign of that name (the campaigns are copied first);
	// 0 when it answered none (no name: NULL, read as ""), or one the
	// target does not hold.
	{"replies r LEFT JOIN campaigns c ON c.id = r.campaign_id", "r.reply_key, r.phone, r.kind, r.word, c.name, r.at, r.received_at",
		`INSERT INTO replies (reply_key, phone, kind, word, campaign_id, at, received_at)
			SELECT r->>0, r->>1, r->>2, r->>3, coalesce((SELECT c.id FROM campaigns c WHERE c.name = r->>4), 0), r->>5, r->>6 FROM jsonb_array_elements($1::jsonb) r
			ON CONFLICT (reply_key) DO NOTHING`,
		`INSERT INTO replies (reply_key, phone, kind, word, campaign_id, at, received_at)
			SELECT value->>0, value->>1, value->>2, value->>3, coalesce((SELECT c.id FROM campaigns c WHERE c.name = value->>4), 0), value->>5, value->>6 FROM json_each(?1)
			WHERE true ON CONFLICT (reply_key) DO NOTHING`, nil},
	// The reports matched to nobody: those of a campaign go with it.
	{"reports WHERE campaign_id = 0", "report_key, phone, provider_id, delivery, provider_status, reason, at, received_at, matched_by, unmatched, anomaly",
		`INSERT INTO reports (report_key, campaign_id, phone, provider_id, delivery, provider_status, reason, at, received_at, matched_by, unmatched, anomaly)
			SELECT r->>0, 0, r->>1, r->>2, r->>3, r->>4, r->>5, r->>6, r->>7, r->>8, r->>9, r->>10 FROM jsonb_array_elements($1::jsonb) r
			ON CONFLICT (report_key) DO NOTHING`,
		`INSERT INTO reports (report_key, campaign_id, phone, provider_id, delivery, provider_status, reason, at, received_at, matched_by, unmatched, anomaly)
			SELECT value->>0, 0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8, value->>9, value->>10 FROM json_each(?1)
			WHERE true ON CONFLICT (report_key) DO NOTHING`, nil},
}

// Copy copies the project's ledger, the opt-out log with the numbers
// opted out now and the frequency cap's index, from the state at from to
// the state at to (created if missing), in one transaction, and merges the
// replies and the reports matched to no campaign (receivedTables). The log
// keeps its numbers: a plan saved against the source names one, and is
// made again the same against the target. The target's ledger must be
// empty, or already this one (a migration run again after it stopped
// half-way). The campaigns' records are [state.Copy]'s. A source file of
// an older schema is migrated first, as any command that writes does:
// its cap history moved to another table at version 6.
func Copy(ctx context.Context, from, to state.Location) (*Copied, error) {
	st, err := state.OpenStore(ctx, from, false)
	if err != nil {
		return nil, err
	}
	src := newView(st)
	defer src.Close()
	out := &Copied{}
	if src.db == nil {
		return out, nil
	}
	want, err := counts(ctx, src.db)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", src.shown, err)
	}
	received, err := receivedCounts(ctx, src.db)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", src.shown, err)
	}
	out.OptOutChanges, out.OptedOut, out.CapNumbers = want.optouts, want.optedOut, want.capNumbers
	out.Replies, out.Unmatched = received[0], received[1]
	if want == (tally{}) && received == [2]int{} {
		return out, nil // nothing to copy, whatever the target holds
	}
	if out.Seq, err = src.optOutSeq(ctx); err != nil {
		return nil, err
	}
	dst, err := state.OpenStore(ctx, to, true)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	shown := dst.Shown
	tx, err := dst.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("write state %s: %w", shown, err)
	}
	defer tx.Rollback()
	pg := dst.Postgres
	if pg {
		// Opt-outs added meanwhile would take the log's numbers.
		if _, err := tx.ExecContext(ctx, `LOCK TABLE optouts, optouts_now, caps, cap_sends IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return nil, fmt.Errorf("write state %s: %w", shown, err)
		}
	}
	have, err := counts(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", shown, err)
	}
	same := false
	if want != (tally{}) && have == want {
		if same, err = sameLedger(ctx, src.db, tx); err != nil {
			return nil, fmt.Errorf("compare the ledgers of %s and %s: %w", src.shown, shown, err)
		}
	}
	switch {
	case want == (tally{}):
	case same:
		out.Already = true
	case have != (tally{}):
		return nil, notEmpty(shown, have)
	default:
		if err := copyTables(ctx, src, tx, ledgerTables, pg); err != nil {
			return nil, fmt.Errorf("copy the ledger to %s: %w", shown, err)
		}
		if pg && out.Seq > 0 {
			if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('optouts', 'id'), $1)`, out.Seq); err != nil {
				return nil, fmt.Errorf("write state %s: %w", shown, err)
			}
		}
		if got, err := counts(ctx, tx); err != nil || got != want {
			return nil, errors.Join(fmt.Errorf("copy the ledger to %s: read back %v, the source has %v", shown, got, want), err)
		}
	}
	// A ledger copied by an earlier smsform gets its replies now.
	if err := copyTables(ctx, src, tx, receivedTables, pg); err != nil {
		return nil, fmt.Errorf("copy the replies and reports to %s: %w", shown, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("write state %s: %w", shown, err)
	}
	return out, nil
}

// copyTables copies each of tables from src into tx.
func copyTables(ctx context.Context, src *View, tx *sql.Tx, tables []ledgerTable, pg bool) error {
	for _, t := range tables {
		insert := t.sqlite
		if pg {
			insert = t.pg
		}
		if err := copyTable(ctx, src, tx, t, insert); err != nil {
			return err
		}
	}
	return nil
}

func notEmpty(shown string, have tally) error {
	return fmt.Errorf("copy the ledger to %s: it already holds a ledger of its own (opt-out log entries: %d; numbers in the frequency cap's index: %d): %w",
		shown, have.optouts, have.capNumbers, state.ErrTargetNotEmpty)
}

// CheckTarget tells, before anything is copied, whether [Copy]
// from from to to would be refused because the target holds a ledger of
// its own: a migration of a whole state checks it first, so that it is
// refused whole rather than half-done.
func CheckTarget(ctx context.Context, from, to state.Location) error {
	src, err := Open(ctx, from)
	if err != nil {
		return err
	}
	defer src.Close()
	want, err := src.counts(ctx)
	if err != nil || want == (tally{}) {
		return err
	}
	dst, err := Open(ctx, to)
	if err != nil {
		return err
	}
	defer dst.Close()
	have, err := dst.counts(ctx)
	if err != nil || have == (tally{}) {
		return err
	}
	if have == want {
		same, err := sameLedger(ctx, src.db, dst.db)
		if err != nil {
			return fmt.Errorf("compare the ledgers of %s and %s: %w", src.shown, dst.shown, err)
		}
		if same {
			return nil
		}
	}
	return notEmpty(dst.shown, have)
}

// counts is the tally of the view's ledger: nothing for a missing state or
// one of an older schema.
func (v *View) counts(ctx context.Context) (tally, error) {
	if v.db == nil {
		return tally{}, nil
	}
	n, err := counts(ctx, v.db)
	if err != nil {
		return n, fmt.Errorf("read state %s: %w", v.shown, err)
	}
	return n, nil
}

// rowQuerier is a database or a transaction.
type rowQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// ledgerKeys are the columns that make two ledgers the same one: the
// opt-out log's entries with their numbers, the numbers opted out now, the
// numbers of the cap's index. Equal counts are not enough: two projects
// that each opted out one person hold as many rows, and a copy taken for
// "already there" would leave the source's person free to be messaged.
var ledgerKeys = []string{
	`SELECT id, phone, action FROM optouts`,
	`SELECT phone, id FROM optouts_now`,
	`SELECT phone FROM caps`,
}

// sameLedger reports whether a and b hold the same rows under ledgerKeys.
// Each side is summed as a multiset (a hash of each row, added), so that
// neither engine's order or collation matters.
func sameLedger(ctx context.Context, a, b rowQuerier) (bool, error) {
	for _, q := range ledgerKeys {
		ha, err := rowsSum(ctx, a, q)
		if err != nil {
			return false, err
		}
		hb, err := rowsSum(ctx, b, q)
		if err != nil || ha != hb {
			return false, err
		}
	}
	return true, nil
}

// rowsSum is the sum of a 128-bit hash of each row q reads, its values as
// text.
func rowsSum(ctx context.Context, db rowQuerier, q string) ([2]uint64, error) {
	var sum [2]uint64
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return sum, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return sum, err
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var buf []byte
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return sum, err
		}
		buf = buf[:0]
		for _, v := range vals {
			buf = append(append(buf, v.String...), 0)
		}
		h := sha256.Sum256(buf)
		sum[0] += binary.LittleEndian.Uint64(h[:8])
		sum[1] += binary.LittleEndian.Uint64(h[8:16])
	}
	return sum, rows.Err()
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tally counts the rows of the ledger: the opt-out log, the numbers
// opted out now, the numbers of the cap index.
type tally struct{ optouts, optedOut, capNumbers int }

func counts(ctx context.Context, db querier) (tally, error) {
	var n tally
	err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM optouts), (SELECT count(*) FROM optouts_now), (SELECT count(*) FROM caps)`).
		Scan(&n.optouts, &n.optedOut, &n.capNumbers)
	return n, err
}

// receivedCounts counts the replies and the reports matched to no
// campaign of a state of this build's schema.
func receivedCounts(ctx context.Context, db querier) ([2]int, error) {
	var n [2]int
	err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM replies), (SELECT count(*) FROM reports WHERE campaign_id = 0)`).Scan(&n[0], &n[1])
	return n, err
}

// copyTable copies one table of src's ledger into tx, copyChunk rows a
// statement, every value as text.
func copyTable(ctx context.Context, src *View, tx *sql.Tx, t ledgerTable, insert string) error {
	rows, err := src.db.QueryContext(ctx, `SELECT `+t.columns+` FROM `+t.from)
	if err != nil {
		return fmt.Errorf("read state %s: %w", src.shown, err)
	}
	defer rows.Close()
	n := strings.Count(t.columns, ",") + 1
	vals := make([]sql.NullString, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var chunk [][]string
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		b, err := json.Marshal(chunk)
		if err != nil {
			return err
		}
		chunk = chunk[:0]
		_, err = tx.ExecContext(ctx, insert, string(b))
		return err
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("read state %s: %w", src.shown, err)
		}
		row := make([]string, n)
		for i, v := range vals {
			row[i] = v.String
		}
		if t.rewrite != nil {
			t.rewrite(row)
		}
		if chunk = append(chunk, row); len(chunk) == copyChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read state %s: %w", src.shown, err)
	}
	return flush()
}
