package state

import (
	"strconv"
	"strings"
)

// dialect is the SQL of one backend. A scoped query's first arguments are
// the State's scope (see State.args); its own follow.
type dialect struct {
	begin string // starts the writer's transaction, taking the write lock at once

	insertAttempt string // scope, batch, body hash, phones, recipients, started at, plan id; returns id, nothing while the campaign is paused
	setPhones     string // an intent's phones and recipients trimmed (phones, recipients, id)
	dropAttempt   string // id
	attempt       string // id; returns state, phones
	finishAttempt string // state, http status, request id, reason, finished at, id of an open intent; returns phones, body hash, plan id
	bumpSerial    string // scope, how much to add

	// Reads of every attempt, oldest first (scope).
	eachRecord string // batch, state, body hash, phones, reason, started at, finished at, plan id
	attempts   string // id, batch, state, body hash, recipients, http status, request id, reason, started at, finished at
	knownSize  string // how many recipients have a record
	knownRows  string // id, batch, state, phones

	// resolveRows returns the id and phones of attempts matching cond (scope, and batch if byBatch).
	resolveRows func(cond string, byBatch bool) string
	setAttempt  string // state, finished at, id

	planApplied string // scope, plan id; returns serial, done (no row: never applied)
	insertPlan  string // scope, plan id, applied at, serial, done: inserts or updates

	meta string // scope; returns lineage, campaign, serial, the moved mark (to, at, by, serial), the pause (at, by, reason), latency (ms)

	// pick selects campaigns by name, every one for "" (the name).
	pick string
	// insertCampaign creates a campaign's record unless it exists (name,
	// lineage, created at); campaignByName returns its id, lineage, serial.
	insertCampaign string
	campaignByName string

	// The record's controls (see controls.go); none bumps the serial.
	setMoved       string // scope, to, at, by, serial
	pause          string // name, lineage, created at, paused at, by, reason: creates the record if need be
	resume         string // name
	pausedNow      string // scope; returns paused at, by, reason
	setLatency     string // scope, ms
	insertTestSend string // scope, at, by, body hash, outcome, http status, request id, reason, phones
	lastTestSend   string // scope; returns at, by, body hash, outcome, http status, request id, reason, phones

	// The ledger (ledger.go), over a JSON array of numbers: each one's row
	// of the cap index (capsFor: phone, sends; in PostgreSQL it also makes
	// the missing rows and locks them all, in the numbers' order, so it
	// writes); the rows written back from a JSON array of {p, s, l}
	// (capsWrite); a claim, one entry appended to the rows of a JSON array
	// of numbers but those opted out, made if missing, locked in the
	// numbers' order in PostgreSQL (capsClaim: numbers, entry, unix time;
	// returns each row claimed, phone and sends with the claim).
	capsFor, capsWrite, capsClaim string

	// The ledger's management (optouts.go): an opt-out change logged
	// (phone, action, at, by, reason; returns its number) and applied to
	// the current opt-outs (optOutNow: phone, number, at, by, reason;
	// optInNow: phone); the current opt-outs by number (phone, at, by,
	// reason), or their numbers only; the numbers whose opt-out changed
	// after a log number; one number's latest action as of a log number
	// (phone, number; returns action); the cap index's rows with a send
	// after a unix time, or all; a row deleted or set (phone, sends, last).
	insertOptOut, optOutNow, optInNow, optoutsNow, optoutPhones, optoutsAfter, optoutAsOf string
	capsSince, capsAll, capsDelete, capsSet                                               string

	// For Copy back into a record that moved away: its rows go, and its
	// mark (scope).
	dropAttempts, dropPlans, dropTestSends, clearMoved string

	// For Copy: every attempt whole, oldest first, and every applied plan
	// (scope); an attempt written whole; the lineage and serial set.
	copyAttempts string
	copyPlans    string
	putAttempt   string // scope, batch, state, body hash, recipients, http status, request id, reason, started, finished, plan id, phones; returns id
	putPlan      string // scope, plan id, applied at, serial, done
	setMeta      string // lineage, serial, scope
}

// sqliteDialect reads and writes one campaign's rows of a state file: its
// scope is the campaign's id. The statements are PostgreSQL's, but for the
// placeholders and how a transaction starts.
var sqliteDialect = sqlite(postgresDialect)

// sqliteV2Dialect reads a version 2 file, which holds one campaign (table
// meta) and no scope: only for read-only views of a file no writer has
// migrated yet.
var sqliteV2Dialect = &dialect{
	eachRecord:  `SELECT batch_id, state, body_hash, phones, reason, started_at, finished_at, '' FROM attempts ORDER BY id`,
	attempts:    `SELECT id, batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at FROM attempts ORDER BY id`,
	planApplied: `SELECT 0, 1 FROM plans_applied WHERE plan_id = ?`,
	meta:        `SELECT lineage, campaign, serial, '', '', '', 0, '', '', '', 0 FROM meta WHERE id = 1`,
	copyPlans:   `SELECT plan_id, applied_at, 0, 1 FROM plans_applied ORDER BY plan_id`,
}

// postgresDialect reads and writes one campaign's rows of the shared
// tables: its scope is the campaign's id. Unqualified names resolve in the
// state's schema (search_path).
var postgresDialect = &dialect{
	begin: `BEGIN`,
	insertAttempt: `INSERT INTO attempts (campaign_id, batch_id, state, body_hash, phones, recipients, started_at, plan_id)
		SELECT id, $2, 'intent', $3, $4, CAST($5 AS integer), $6, $7 FROM campaigns WHERE id = $1 AND paused_at = '' RETURNING id`,
	setPhones:     `UPDATE attempts SET phones = $1, recipients = $2 WHERE id = $3`,
	dropAttempt:   `DELETE FROM attempts WHERE id = $1`,
	attempt:       numbered(`SELECT state, phones FROM attempts WHERE id = ?`),
	finishAttempt: numbered(`UPDATE attempts SET state = ?, http_status = ?, request_id = ?, reason = ?, finished_at = ? WHERE id = ? AND state = 'intent' RETURNING phones, body_hash, plan_id`),
	bumpSerial:    `UPDATE campaigns SET serial = serial + $2 WHERE id = $1`,
	eachRecord:    numbered(`SELECT batch_id, state, body_hash, phones, reason, started_at, finished_at, plan_id FROM attempts WHERE campaign_id = ? ORDER BY id`),
	attempts:      numbered(`SELECT id, batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at FROM attempts WHERE campaign_id = ? ORDER BY id`),
	knownSize:     numbered(`SELECT coalesce(sum(recipients), 0) FROM attempts WHERE campaign_id = ? AND state NOT IN ('forgotten', 'resolved_unsent', 'split')`),
	knownRows:     numbered(`SELECT id, batch_id, state, phones FROM attempts WHERE campaign_id = ? ORDER BY id`),
	resolveRows: func(cond string, byBatch bool) string {
		q := `SELECT id, phones FROM attempts WHERE campaign_id = ? AND ` + cond
		if byBatch {
			q += ` AND batch_id = ?`
		}
		return numbered(q + ` ORDER BY id`)
	},
	setAttempt:  numbered(`UPDATE attempts SET state = ?, finished_at = ? WHERE id = ?`),
	planApplied: numbered(`SELECT serial, done FROM plans_applied WHERE campaign_id = ? AND plan_id = ?`),
	insertPlan: numbered(`INSERT INTO plans_applied (campaign_id, plan_id, applied_at, serial, done) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (campaign_id, plan_id) DO UPDATE SET applied_at = excluded.applied_at, serial = excluded.serial, done = excluded.done`),
	meta: numbered(`SELECT lineage, name, serial, moved_to, moved_at, moved_by, moved_serial, paused_at, paused_by, paused_reason, latency_ms
		FROM campaigns WHERE id = ?`),

	pick:           `($1 = '' OR name = $1)`,
	insertCampaign: numbered(`INSERT INTO campaigns (name, lineage, serial, created_at) VALUES (?, ?, 0, ?) ON CONFLICT (name) DO NOTHING`),
	campaignByName: numbered(`SELECT id, lineage, serial FROM campaigns WHERE name = ?`),

	setMoved: `UPDATE campaigns SET moved_to = $2, moved_at = $3, moved_by = $4, moved_serial = $5 WHERE id = $1`,
	pause: numbered(`INSERT INTO campaigns (name, lineage, serial, created_at, paused_at, paused_by, paused_reason) VALUES (?, ?, 0, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET paused_at = excluded.paused_at, paused_by = excluded.paused_by, paused_reason = excluded.paused_reason`),
	resume:         numbered(`UPDATE campaigns SET paused_at = '', paused_by = '', paused_reason = '' WHERE name = ?`),
	pausedNow:      numbered(`SELECT paused_at, paused_by, paused_reason FROM campaigns WHERE id = ?`),
	setLatency:     `UPDATE campaigns SET latency_ms = $2 WHERE id = $1`,
	insertTestSend: numbered(`INSERT INTO test_sends (campaign_id, at, by_whom, body_hash, outcome, http_status, request_id, reason, phones) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
	lastTestSend:   numbered(`SELECT at, by_whom, body_hash, outcome, http_status, request_id, reason, phones FROM test_sends WHERE campaign_id = ? ORDER BY id DESC LIMIT 1`),

	// One statement makes the missing rows and locks every row, in the
	// numbers' order: an update that changes nothing locks as FOR UPDATE
	// would, and returns the row.
	capsFor: `INSERT INTO caps AS c (phone, sends, last_at) SELECT p, '', 0 FROM jsonb_array_elements_text($1::jsonb) AS p ORDER BY p
		ON CONFLICT (phone) DO UPDATE SET last_at = c.last_at
		RETURNING c.phone, c.sends`,
	// Both write through the primary key: as an update joined to the
	// numbers, a prepared statement's generic plan, made while the table
	// was small, scanned it whole for every intent ever after (100,000
	// rows: 19 ms an intent, and growing). An insert that conflicts finds
	// each row through its key whatever the table's size.
	capsWrite: `INSERT INTO caps AS c (phone, sends, last_at) SELECT v.p, v.s, v.l FROM jsonb_to_recordset($1::jsonb) AS v(p text, s text, l bigint) ORDER BY v.p
		ON CONFLICT (phone) DO UPDATE SET sends = excluded.sends, last_at = excluded.last_at`,
	capsClaim: `INSERT INTO caps AS c (phone, sends, last_at)
		SELECT p, $2, $3 FROM jsonb_array_elements_text($1::jsonb) AS p
		LEFT JOIN LATERAL (SELECT true AS out FROM optouts_now o WHERE o.phone = p LIMIT 1) o ON true WHERE o.out IS NULL ORDER BY p
		ON CONFLICT (phone) DO UPDATE SET sends = CASE WHEN c.sends = '' THEN excluded.sends ELSE c.sends || ',' || excluded.sends END, last_at = GREATEST(c.last_at, excluded.last_at)
		RETURNING c.phone, c.sends`,

	insertOptOut: `INSERT INTO optouts (phone, action, at, by_whom, reason) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
	optOutNow: `INSERT INTO optouts_now (phone, id, at, by_whom, reason) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (phone) DO UPDATE SET id = excluded.id, at = excluded.at, by_whom = excluded.by_whom, reason = excluded.reason`,
	optInNow:     `DELETE FROM optouts_now WHERE phone = $1`,
	optoutsNow:   `SELECT phone, at, by_whom, reason FROM optouts_now ORDER BY phone`,
	optoutPhones: `SELECT phone FROM optouts_now`,
	optoutsAfter: `SELECT DISTINCT phone FROM optouts WHERE id > $1`,
	optoutAsOf:   `SELECT action FROM optouts WHERE phone = $1 AND id <= $2 ORDER BY id DESC LIMIT 1`,
	capsSince:    `SELECT phone, sends FROM caps WHERE last_at > $1`,
	capsAll:      `SELECT phone, sends FROM caps`,
	// Prune writes a row only as it read it: a claim committed since (by an
	// apply running meanwhile) leaves the row for the next prune.
	capsDelete: `DELETE FROM caps WHERE phone = $1 AND sends = $2`,
	capsSet:    `UPDATE caps SET sends = $2, last_at = $3 WHERE phone = $1 AND sends = $4`,

	dropAttempts:  `DELETE FROM attempts WHERE campaign_id = $1`,
	dropPlans:     `DELETE FROM plans_applied WHERE campaign_id = $1`,
	dropTestSends: `DELETE FROM test_sends WHERE campaign_id = $1`,
	clearMoved:    `UPDATE campaigns SET moved_to = '', moved_at = '', moved_by = '', moved_serial = 0 WHERE id = $1`,

	copyAttempts: numbered(`SELECT batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at, plan_id, phones FROM attempts WHERE campaign_id = ? ORDER BY id`),
	copyPlans:    numbered(`SELECT plan_id, applied_at, serial, done FROM plans_applied WHERE campaign_id = ? ORDER BY plan_id`),
	putAttempt:   numbered(`INSERT INTO attempts (campaign_id, batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at, plan_id, phones) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
	putPlan:      numbered(`INSERT INTO plans_applied (campaign_id, plan_id, applied_at, serial, done) VALUES (?, ?, ?, ?, ?)`),
	setMeta:      numbered(`UPDATE campaigns SET lineage = ?, serial = ? WHERE id = ?`),
}

// numbered turns the ? placeholders of q into PostgreSQL's $1, $2...;
// the queries above hold no ? of their own.
func numbered(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sqlite is the dialect d for SQLite: its placeholders $n become ?n, and
// the writer's transaction takes the write lock at once.
func sqlite(d *dialect) *dialect {
	q := func(s string) string { return strings.ReplaceAll(s, "$", "?") }
	return &dialect{
		begin:         `BEGIN IMMEDIATE`,
		insertAttempt: q(d.insertAttempt),
		setPhones:     q(d.setPhones),
		dropAttempt:   q(d.dropAttempt),
		attempt:       q(d.attempt),
		finishAttempt: q(d.finishAttempt),
		bumpSerial:    q(d.bumpSerial),
		eachRecord:    q(d.eachRecord),
		attempts:      q(d.attempts),
		knownSize:     q(d.knownSize),
		knownRows:     q(d.knownRows),
		resolveRows: func(cond string, byBatch bool) string {
			return q(d.resolveRows(cond, byBatch))
		},
		setAttempt:     q(d.setAttempt),
		planApplied:    q(d.planApplied),
		insertPlan:     q(d.insertPlan),
		meta:           q(d.meta),
		pick:           q(d.pick),
		insertCampaign: q(d.insertCampaign),
		campaignByName: q(d.campaignByName),
		setMoved:       q(d.setMoved),
		pause:          q(d.pause),
		resume:         q(d.resume),
		pausedNow:      q(d.pausedNow),
		setLatency:     q(d.setLatency),
		insertTestSend: q(d.insertTestSend),
		lastTestSend:   q(d.lastTestSend),
		// SQLite's ledger takes the file's write lock with the transaction.
		capsFor: `SELECT j.value, coalesce(c.sends, '') FROM json_each(?1) j LEFT JOIN caps c ON c.phone = j.value`,
		capsWrite: `INSERT INTO caps (phone, sends, last_at) SELECT value ->> 'p', value ->> 's', value ->> 'l' FROM json_each(?1) WHERE true
			ON CONFLICT (phone) DO UPDATE SET sends = excluded.sends, last_at = excluded.last_at`,
		capsClaim: `INSERT INTO caps (phone, sends, last_at)
			SELECT value, ?2, ?3 FROM json_each(?1) WHERE NOT EXISTS (SELECT 1 FROM optouts_now o WHERE o.phone = value)
			ON CONFLICT (phone) DO UPDATE SET sends = CASE WHEN sends = '' THEN excluded.sends ELSE sends || ',' || excluded.sends END, last_at = max(last_at, excluded.last_at)
			RETURNING phone, sends`,
		insertOptOut:  q(d.insertOptOut),
		optOutNow:     q(d.optOutNow),
		optInNow:      q(d.optInNow),
		optoutsNow:    q(d.optoutsNow),
		optoutPhones:  q(d.optoutPhones),
		optoutsAfter:  q(d.optoutsAfter),
		optoutAsOf:    q(d.optoutAsOf),
		capsSince:     q(d.capsSince),
		capsAll:       q(d.capsAll),
		capsDelete:    q(d.capsDelete),
		capsSet:       q(d.capsSet),
		dropAttempts:  q(d.dropAttempts),
		dropPlans:     q(d.dropPlans),
		dropTestSends: q(d.dropTestSends),
		clearMoved:    q(d.clearMoved),
		copyAttempts:  q(d.copyAttempts),
		copyPlans:     q(d.copyPlans),
		putAttempt:    q(d.putAttempt),
		putPlan:       q(d.putPlan),
		setMeta:       q(d.setMeta),
	}
}
