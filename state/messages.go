package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"

	"github.com/smsform/smsform/internal/rawjson"
)

// The index of message ids (table messages) maps the id the provider gave
// each message to the recipient and attempt that sent it: a delivery
// report names its message by the id alone. Apply does not write it: an
// attempt that has ids is marked (ids_pending) and whoever reads the index
// fills it first (indexMessages). Written with each outcome, a batch's
// thousand ids went to as many places of an index ordered by id, dirtying
// most of its pages at every commit of the one writer every intent waits
// for: an apply that kept the ids sent 0.72-0.75 of the requests a second
// of the same apply without a mapping (make bench), and 0.89 once the
// index was left to its readers. Filled in groups, sorted, each page is
// written once a group.

// indexIDs is about how many ids one transaction of indexMessages puts in
// the index. The more, the fewer times each page of the index is written
// (a group's ids are sorted first); the fewer, the shorter the write lock
// that applies wait for is held: 100,000 take about half a second in a
// file.
const indexIDs = 100_000

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
		id, campaign string // numbers, kept as the text the index's rows are written with
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
	type row struct {
		id, phone string
		attempt   int
	}
	var put []row
	done := []byte{'['}
	for i, m := range ms {
		if i > 0 {
			done = append(done, ',')
		}
		done = append(done, m.id...)
		// Apply writes two arrays of strings, aligned. A state edited by
		// hand may hold something else: what cannot be read names nobody
		// (its reports are matched by number) rather than stop every
		// receiver of the project.
		var phones, pids []string
		if json.Unmarshal([]byte(m.phones), &phones) != nil || json.Unmarshal([]byte(m.ids), &pids) != nil {
			continue
		}
		ids += len(pids)
		for j, id := range pids[:min(len(pids), len(phones))] {
			if id != "" {
				put = append(put, row{id, phones[j], i})
			}
		}
	}
	// In the index's order: each of its pages is then met once, however
	// many of the group's ids go to it.
	slices.SortFunc(put, func(a, b row) int { return strings.Compare(a.id, b.id) })
	var buf []byte
	for len(put) > 0 {
		n := min(len(put), 10_000)
		buf = append(buf[:0], '[')
		for k, r := range put[:n] {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = rawjson.AppendStrings(buf, []string{r.id, r.phone, ms[r.attempt].campaign, ms[r.attempt].id})
		}
		buf = append(buf, ']')
		if _, err := tx.ExecContext(ctx, q[qPutMessages], string(buf)); err != nil {
			return 0, 0, err
		}
		put = put[n:]
	}
	done = append(done, ']')
	if _, err := tx.ExecContext(ctx, q[qIDsIndexed], string(done)); err != nil {
		return 0, 0, err
	}
	return len(ms), ids, tx.Commit()
}
