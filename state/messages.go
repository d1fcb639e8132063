package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/smsform/smsform/internal/rawjson"
)

// The index of message ids (table messages) maps the id the provider gave
// each message to the recipient and attempt that sent it: a delivery
// report names its message by the id alone. Apply does not write it: an
// attempt that has ids is marked (ids_pending) and whoever reads the index
// fills it first (indexMessages). Written with each outcome, a batch's
// thousand ids went to as many places of an index ordered by id, dirtying
// most of its pages at every commit of the one writer every intent waits
// for: an apply that kept the ids sent 0.75 of the requests a second of
// the same apply without them, and 0.95 once the index was left to its
// readers. Filled in groups, the pages are written once a group.

// indexIDs is about how many ids one transaction of indexMessages puts in
// the index: a receiver holds the write lock, which applies wait for, that
// long (a fraction of a second).
const indexIDs = 20_000

// indexMessages puts the ids of every marked attempt into the index and
// unmarks them, a group of attempts a transaction. Receivers may do so at
// once: in PostgreSQL each takes the messages table's lock in SHARE ROW
// EXCLUSIVE mode, which excludes itself and not readers, and reads the
// marks after it; in SQLite the transaction takes the write lock at once.
// Each attempt's ids are so put in the index once.
func indexMessages(ctx context.Context, db *sql.DB, q *dialect, pg bool) error {
	var pending int
	if err := db.QueryRowContext(ctx, q[qAnyIDsPending]).Scan(&pending); err != nil || pending == 0 {
		return err
	}
	limit := 64 // attempts the first group reads; then as many as hold about indexIDs ids
	for {
		n, ids, err := indexSome(ctx, db, q, pg, limit)
		if err != nil || n < limit {
			return err
		}
		limit = max(1, min(10_000, indexIDs*n/max(ids, 1)))
	}
}

// indexSome indexes the ids of up to limit marked attempts, oldest first,
// in one transaction: it returns how many attempts it read and how many
// ids they had.
func indexSome(ctx context.Context, db *sql.DB, q *dialect, pg bool, limit int) (attempts, ids int, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	if pg {
		if _, err := tx.ExecContext(ctx, `LOCK TABLE messages IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return 0, 0, err
		}
	}
	type marked struct {
		id, campaign int64
		phones, ids  string
	}
	rows, err := tx.QueryContext(ctx, q[qIDsPending], limit)
	if err != nil {
		return 0, 0, err
	}
	var ms []marked
	for rows.Next() {
		var m marked
		if err := rows.Scan(&m.id, &m.campaign, &m.phones, &m.ids); err != nil {
			rows.Close()
			return 0, 0, err
		}
		ms = append(ms, m)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, 0, err
	}
	if len(ms) == 0 {
		return 0, 0, nil
	}
	var buf []byte
	done := []byte{'['}
	for i, m := range ms {
		var phones, pids []string
		if err := json.Unmarshal([]byte(m.phones), &phones); err != nil {
			return 0, 0, fmt.Errorf("attempt %d: phones: %w", m.id, err)
		}
		if err := json.Unmarshal([]byte(m.ids), &pids); err != nil {
			return 0, 0, fmt.Errorf("attempt %d: provider ids: %w", m.id, err)
		}
		ids += len(pids)
		// Aligned with phones, as apply writes them; a state edited by
		// hand may not be, and its extra ids name nobody.
		buf = appendIDPairs(buf[:0], pids[:min(len(pids), len(phones))], phones)
		if len(buf) > 2 {
			if _, err := tx.ExecContext(ctx, q[qPutMessages], m.campaign, string(buf), m.id); err != nil {
				return 0, 0, err
			}
		}
		if i > 0 {
			done = append(done, ',')
		}
		done = strconv.AppendInt(done, m.id, 10)
	}
	done = append(done, ']')
	if _, err := tx.ExecContext(ctx, q[qIDsIndexed], string(done)); err != nil {
		return 0, 0, err
	}
	return len(ms), ids, tx.Commit()
}

// appendIDPairs appends the JSON array of the [id, phone] pair of each
// recipient of phones whose provider id (ids: one each) is not empty.
func appendIDPairs(b []byte, ids, phones []string) []byte {
	b = append(b, '[')
	first := true
	for i, id := range ids {
		if id == "" {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		pair := [2]string{id, phones[i]}
		b = rawjson.AppendStrings(b, pair[:])
	}
	return append(b, ']')
}
