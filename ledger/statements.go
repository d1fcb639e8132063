package ledger

import "strings"

// stmt names one statement of the ledger; each engine has its text in a
// table ([postgres], and sqlite derived from it unless sqliteOwn says
// otherwise), which TestStatements walks and prepares against both.
type stmt int

const (
	// An intent's claim: the cap rows of a JSON array of numbers made if
	// missing, their latest send set to a unix time and, in PostgreSQL,
	// locked in the numbers' order, returning which are opted out now
	// (phone, out); their recent sends (phone, at, marketing) after a
	// unix time; the claim written for those sent (numbers, at, attempt,
	// marketing); a claim given back (attempt, numbers).
	qLock stmt = iota
	qRecent
	qClaim
	qRelease

	// The opt-outs: a change logged (phone, action, at, by, reason,
	// source; returns its number) and applied to the numbers opted out now
	// (phone, number, at, by, reason, source; or phone to remove); the
	// numbers opted out now by number (phone, at, by, reason, source), or
	// their numbers only; the numbers whose opt-out changed after a log
	// number; one number's latest action as of a log number (phone,
	// number; returns action); whether a number is opted out now; the
	// log's number now.
	qInsertOptOut
	qOptOutNow
	qOptInNow
	qOptOutsNow
	qOptOutPhones
	qOptOutsAfter
	qOptOutAsOf
	qOptedOut
	qLatestChange
	qOptOutSeq

	// The caps' index as a plan reads it (phone, at, marketing after a
	// unix time, which the index on (at, phone, marketing) answers without
	// reading the table) and as prune drops it (sends before a unix time;
	// numbers whose last send is before one).
	qSendsSince
	qPruneSends
	qPruneNumbers

	numStmts
)

type dialect [numStmts]string

var postgres = &dialect{
	// One statement makes the missing rows and locks every row, in the
	// numbers' order (an update that changes nothing locks as FOR UPDATE
	// would), and says which are opted out.
	qLock: `INSERT INTO caps AS c (phone, last_at) SELECT p, $2 FROM jsonb_array_elements_text($1::jsonb) AS p ORDER BY p
		ON CONFLICT (phone) DO UPDATE SET last_at = GREATEST(c.last_at, excluded.last_at)
		RETURNING c.phone, (SELECT true FROM optouts_now o WHERE o.phone = c.phone LIMIT 1) IS NOT NULL`,
	qRecent: `SELECT s.phone, s.at, s.marketing FROM cap_sends s WHERE s.phone IN (SELECT jsonb_array_elements_text($1::jsonb)) AND s.at > $2`,
	qClaim:  `INSERT INTO cap_sends (phone, at, attempt_id, marketing) SELECT p, $2, $3, $4 FROM jsonb_array_elements_text($1::jsonb) AS p`,
	// The numbers as an array, not a subquery: each number's rows found
	// through the index whatever plan PostgreSQL has cached (a semi join
	// on an empty table's statistics scans it).
	qRelease: `DELETE FROM cap_sends WHERE phone = ANY (ARRAY (SELECT jsonb_array_elements_text($2::jsonb))) AND attempt_id = $1`,

	qInsertOptOut: `INSERT INTO optouts (phone, action, at, by_whom, reason, source) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
	qOptOutNow: `INSERT INTO optouts_now (phone, id, at, by_whom, reason, source) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (phone) DO UPDATE SET id = excluded.id, at = excluded.at, by_whom = excluded.by_whom, reason = excluded.reason, source = excluded.source`,
	qOptInNow:     `DELETE FROM optouts_now WHERE phone = $1`,
	qOptOutsNow:   `SELECT phone, at, by_whom, reason, source FROM optouts_now ORDER BY phone`,
	qOptOutPhones: `SELECT phone FROM optouts_now`,
	// Not DISTINCT: SQLite would answer that by scanning the whole index
	// on (phone, id), a million entries for a million opt-outs, where the
	// log's numbers after asOf are usually none.
	qOptOutsAfter: `SELECT phone FROM optouts WHERE id > $1`,
	qOptOutAsOf:   `SELECT action FROM optouts WHERE phone = $1 AND id <= $2 ORDER BY id DESC LIMIT 1`,
	qOptedOut:     `SELECT count(*) FROM optouts_now WHERE phone = $1`,
	// The number's latest change: what it did, when and where from.
	qLatestChange: `SELECT action, at, source FROM optouts WHERE phone = $1 ORDER BY id DESC LIMIT 1`,
	qOptOutSeq:    `SELECT coalesce(max(id), 0) FROM optouts`,

	qSendsSince:   `SELECT phone, at, marketing FROM cap_sends WHERE at > $1`,
	qPruneSends:   `DELETE FROM cap_sends WHERE at < $1`,
	qPruneNumbers: `DELETE FROM caps WHERE last_at < $1 AND NOT EXISTS (SELECT 1 FROM cap_sends s WHERE s.phone = caps.phone)`,
}

// sqliteOwn are the statements SQLite says in words of its own (a file's
// writer holds the file's write lock for its whole transaction: nothing
// need be locked row by row).
var sqliteOwn = map[stmt]string{
	qLock: `INSERT INTO caps (phone, last_at) SELECT value, ?2 FROM json_each(?1) WHERE true
		ON CONFLICT (phone) DO UPDATE SET last_at = max(last_at, excluded.last_at)
		RETURNING phone, EXISTS (SELECT 1 FROM optouts_now o WHERE o.phone = caps.phone)`,
	qRecent:  `SELECT s.phone, s.at, s.marketing FROM cap_sends s WHERE s.phone IN (SELECT value FROM json_each(?1)) AND s.at > ?2`,
	qClaim:   `INSERT INTO cap_sends (phone, at, attempt_id, marketing) SELECT value, ?2, ?3, ?4 FROM json_each(?1)`,
	qRelease: `DELETE FROM cap_sends WHERE attempt_id = ?1 AND phone IN (SELECT value FROM json_each(?2))`,
}

var sqlite = sqliteOf(postgres, sqliteOwn)

func sqliteOf(pg *dialect, own map[stmt]string) *dialect {
	var d dialect
	for q := range numStmts {
		if s, ok := own[q]; ok {
			d[q] = s
			continue
		}
		d[q] = strings.ReplaceAll(pg[q], "$", "?")
	}
	return &d
}

// of is the dialect of an engine.
func of(postgresql bool) *dialect {
	if postgresql {
		return postgres
	}
	return sqlite
}
