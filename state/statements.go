package state

import "strings"

// stmt names one SQL statement of the state. Each engine has its text of
// every statement in a table indexed by name ([dialect]): PostgreSQL's is
// written out, SQLite's is PostgreSQL's with its placeholders ($n becomes
// ?n) unless the statement needs words of its own (sqliteOwn). A name
// without a text in either engine is an empty string that TestStatements,
// which walks every name and prepares it against both engines, refuses.
type stmt int

// A scoped statement's first arguments are the State's scope (see
// State.args); its own follow.
const (
	qBegin stmt = iota // starts the writer's transaction, taking the write lock at once
	qCommit
	qRollback
	qInsertAttempt // scope, batch, body hash, phones, recipients, started at, plan id; returns id, nothing while the campaign is paused
	qSetPhones     // an intent's phones and recipients trimmed (phones, recipients, id)
	qDropAttempt   // id
	qAttempt       // id; returns state, phones
	qFinishAttempt // state, http status, request id, reason, finished at, id of an open intent; returns phones, body hash, plan id
	// The same with the provider's words of every recipient (provider
	// status, provider ids, marked for the index as qPutAttempt marks
	// them), if the intent's phones are these: returns nothing otherwise.
	qFinishWhole // state, http status, request id, reason, finished at, provider status, provider ids, id, phones
	qBumpSerial  // scope, how much to add

	// Reads of every attempt, oldest first (scope).
	qEachRecord // batch, state, body hash, phones, reason, started at, finished at, plan id, request id, provider status, provider ids
	qAttempts   // id, batch, state, body hash, recipients, http status, request id, reason, started at, finished at
	qKnownSize  // how many recipients have a record
	qKnownRows  // id, batch, state, phones

	// The id, phones, batch, body hash, plan and start of the attempts a resolve moves (scope, and the
	// batch for the ...Batch ones).
	qResolveInDoubt
	qResolveInDoubtBatch
	qResolveFailed
	qResolveFailedBatch
	qSetAttempt // state, finished at, id

	qPlanApplied // scope, plan id; returns serial, done (no row: never applied)
	qInsertPlan  // scope, plan id, applied at, serial, done: inserts or updates

	qMeta // scope; returns lineage, campaign, serial, the moved mark (to, at, by, serial), the pause (at, by, reason), latency (ms)

	qPickCampaigns  // name, or "" for every one; returns id, name by name
	qMovedMarks     // returns id, moved to ("": not moved) of every campaign
	qInsertCampaign // creates a campaign's record unless it exists (name, lineage, created at)
	qCampaignByName // name; returns id, lineage, serial

	// The record's controls (see controls.go); none bumps the serial.
	qSetMoved       // scope, to, at, by, serial
	qPause          // name, lineage, created at, paused at, by, reason: creates the record if need be
	qResume         // name
	qPausedNow      // scope; returns paused at, by, reason
	qSetLatency     // scope, ms
	qInsertTestSend // scope, at, by, body hash, outcome, http status, request id, reason, phones
	qLastTestSend   // scope; returns at, by, body hash, outcome, http status, request id, reason, phones

	// For Copy back into a record that moved away: its rows go, and its
	// mark (scope).
	qDropAttempts
	qDropPlans
	qDropTestSends
	qClearMoved

	// For Copy: every attempt whole, oldest first, and every applied plan
	// (scope); the campaign's delivery reports and test sends, oldest
	// first, and how many of each (scope); an attempt written whole; the
	// lineage and serial set.
	qCopyAttempts
	qCopyPlans
	qCopyReports
	qCopyTestSends
	qCountCopied
	qReportElsewhere // report keys (a JSON array), campaign id; returns one recorded for another campaign or none
	qSetCopied       // scope, paused at, by, reason, latency ms

	// For Copy of a record that has no claims in its source's cap index
	// (see claimCopied): whether a state holds anything of a project's
	// ledger (returns 1 or 0); the claims of a record copied before (their
	// marker, the campaign's id); the numbers' rows of the cap index, locked (a JSON
	// array of [phone, at], in the numbers' order); the claims made (the
	// same array, the marker).
	qHoldsLedger
	qDropCopiedClaims
	qLockCopiedClaims
	qCopiedClaims
	qPutAttempt // scope, batch, state, body hash, recipients, http status, request id, reason, started, finished, plan id, phones, provider status, provider ids; returns id. Marks the ids to index (see indexMessages), but a resolution's: it names the id of the part it resolves
	qPutPlan    // scope, plan id, applied at, serial, done
	qSetMeta    // lineage, serial, scope

	// What arrives after the send (receiver.go). The index of message ids
	// (messages.go): the attempts whose ids are not in it yet, oldest
	// first (how many): id, campaign, phones, provider ids; whether there
	// is one; ids put in it (a JSON array of [id, phone, campaign,
	// attempt] rows, all strings); the attempts of a JSON array of ids marked as in it.
	// Rows, not arrays joined on their positions: SQLite joins two
	// json_each by scanning one for each row of the other, which took
	// 0.15-0.3 s for a batch of 1,000.
	qIDsPending
	qAnyIDsPending
	qPutMessages
	qIDsIndexed
	// The recipients, and their attempts' states, of a JSON array of
	// message ids: id, campaign, phone, attempt, state.
	qMessagesFor
	// The attempts of a JSON array of ids: id, campaign, state, batch,
	// body hash, plan id.
	qAttemptsByID
	// The attempts after an id, for the index of numbers: id, campaign,
	// state, phones, started at, finished at.
	qAttemptsAfter
	// The same of the attempts with the ids of a JSON array.
	qAttemptsIn
	// How many attempts of a campaign after an id hold a phone (a LIKE
	// pattern of the phone as the JSON array writes it): whether a
	// recipient in doubt was already taken over.
	qLaterWith
	// The attempts of every campaign still open or in doubt: id, campaign,
	// phones.
	qOpenAttempts
	// The delivered and undelivered reports of one recipient (campaign,
	// phone): phone, provider id, delivery, provider status, reason, at.
	qProofsOf
	qUnmatchedProofsOf
	// One attempt's phones and provider ids, as JSON arrays ("" for no
	// ids): the id the provider gave one of its messages.
	qAttemptIDs
	// Reports and replies from a JSON array of rows, each once: returns
	// the keys of those inserted (the others were there).
	qInsertReports
	qInsertReplies
	// The reports of a campaign, oldest first (scope): phone, delivery,
	// provider status, reason, at, anomaly, provider id.
	qReportsOf
	// Whether a campaign has a report at all (scope): 1 or 0.
	qAnyReport
	// How many reports no recipient was matched to.
	qUnmatchedReports
	// How many recipients of a campaign have a report that contradicts
	// the record (scope).
	qAnomalies

	numStmts
)

// dialect is one engine's text of every statement.
type dialect [numStmts]string

// postgresDialect reads and writes one campaign's rows of the shared
// tables: its scope is the campaign's id. Unqualified names resolve in the
// state's schema (search_path).
var postgresDialect = &dialect{
	qBegin:    `BEGIN`,
	qCommit:   `COMMIT`,
	qRollback: `ROLLBACK`,
	qInsertAttempt: `INSERT INTO attempts (campaign_id, batch_id, state, body_hash, phones, recipients, started_at, plan_id)
		SELECT id, $2, 'intent', $3, $4, CAST($5 AS integer), $6, $7 FROM campaigns WHERE id = $1 AND paused_at = '' RETURNING id`,
	qSetPhones:     `UPDATE attempts SET phones = $1, recipients = $2 WHERE id = $3`,
	qDropAttempt:   `DELETE FROM attempts WHERE id = $1`,
	qAttempt:       `SELECT state, phones FROM attempts WHERE id = $1`,
	qFinishAttempt: `UPDATE attempts SET state = $1, http_status = $2, request_id = $3, reason = $4, finished_at = $5 WHERE id = $6 AND state = 'intent' RETURNING phones, body_hash, plan_id`,
	qFinishWhole: `UPDATE attempts SET state = $1, http_status = $2, request_id = $3, reason = $4, finished_at = $5, provider_status = $6, provider_ids = $7,
		ids_pending = CASE WHEN $7 <> '' THEN 1 ELSE 0 END WHERE id = $8 AND state = 'intent' AND phones = $9 RETURNING 1`,
	qBumpSerial: `UPDATE campaigns SET serial = serial + $2 WHERE id = $1`,
	qEachRecord: `SELECT batch_id, state, body_hash, phones, reason, started_at, finished_at, plan_id, request_id, provider_status, provider_ids FROM attempts WHERE campaign_id = $1 ORDER BY id`,
	qAttempts:   `SELECT id, batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at FROM attempts WHERE campaign_id = $1 ORDER BY id`,
	qKnownSize:  `SELECT coalesce(sum(recipients), 0) FROM attempts WHERE campaign_id = $1 AND state NOT IN ('forgotten', 'resolved_unsent', 'split')`,
	qKnownRows:  `SELECT id, batch_id, state, phones FROM attempts WHERE campaign_id = $1 ORDER BY id`,

	// In-doubt recipients belong to attempts still open (no outcome) or
	// recorded as in doubt.
	qResolveInDoubt:      `SELECT id, phones, batch_id, body_hash, plan_id, started_at FROM attempts WHERE campaign_id = $1 AND state IN ('intent', 'in_doubt') ORDER BY id`,
	qResolveInDoubtBatch: `SELECT id, phones, batch_id, body_hash, plan_id, started_at FROM attempts WHERE campaign_id = $1 AND state IN ('intent', 'in_doubt') AND batch_id = $2 ORDER BY id`,
	qResolveFailed:       `SELECT id, phones, batch_id, body_hash, plan_id, started_at FROM attempts WHERE campaign_id = $1 AND state = 'failed' ORDER BY id`,
	qResolveFailedBatch:  `SELECT id, phones, batch_id, body_hash, plan_id, started_at FROM attempts WHERE campaign_id = $1 AND state = 'failed' AND batch_id = $2 ORDER BY id`,
	qSetAttempt:          `UPDATE attempts SET state = $1, finished_at = $2 WHERE id = $3`,

	qPlanApplied: `SELECT serial, done FROM plans_applied WHERE campaign_id = $1 AND plan_id = $2`,
	qInsertPlan: `INSERT INTO plans_applied (campaign_id, plan_id, applied_at, serial, done) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (campaign_id, plan_id) DO UPDATE SET applied_at = excluded.applied_at, serial = excluded.serial, done = excluded.done`,
	qMeta: `SELECT lineage, name, serial, moved_to, moved_at, moved_by, moved_serial, paused_at, paused_by, paused_reason, latency_ms
		FROM campaigns WHERE id = $1`,

	qPickCampaigns:  `SELECT id, name FROM campaigns WHERE ($1 = '' OR name = $1) ORDER BY name`,
	qMovedMarks:     `SELECT id, moved_to FROM campaigns`,
	qInsertCampaign: `INSERT INTO campaigns (name, lineage, serial, created_at) VALUES ($1, $2, 0, $3) ON CONFLICT (name) DO NOTHING`,
	qCampaignByName: `SELECT id, lineage, serial FROM campaigns WHERE name = $1`,

	qSetMoved: `UPDATE campaigns SET moved_to = $2, moved_at = $3, moved_by = $4, moved_serial = $5 WHERE id = $1`,
	qPause: `INSERT INTO campaigns (name, lineage, serial, created_at, paused_at, paused_by, paused_reason) VALUES ($1, $2, 0, $3, $4, $5, $6)
		ON CONFLICT (name) DO UPDATE SET paused_at = excluded.paused_at, paused_by = excluded.paused_by, paused_reason = excluded.paused_reason`,
	qResume:         `UPDATE campaigns SET paused_at = '', paused_by = '', paused_reason = '' WHERE name = $1`,
	qPausedNow:      `SELECT paused_at, paused_by, paused_reason FROM campaigns WHERE id = $1`,
	qSetLatency:     `UPDATE campaigns SET latency_ms = $2 WHERE id = $1`,
	qInsertTestSend: `INSERT INTO test_sends (campaign_id, at, by_whom, body_hash, outcome, http_status, request_id, reason, phones) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
	qLastTestSend:   `SELECT at, by_whom, body_hash, outcome, http_status, request_id, reason, phones FROM test_sends WHERE campaign_id = $1 ORDER BY id DESC LIMIT 1`,

	qHoldsLedger:      `SELECT CASE WHEN EXISTS (SELECT 1 FROM caps) OR EXISTS (SELECT 1 FROM optouts) THEN 1 ELSE 0 END`,
	qDropCopiedClaims: `DELETE FROM cap_sends WHERE attempt_id = $1 OR attempt_id IN (SELECT id FROM attempts WHERE campaign_id = $2)`,
	qLockCopiedClaims: `INSERT INTO caps AS c (phone, last_at) SELECT r->>0, max((r->>1)::bigint) FROM jsonb_array_elements($1::jsonb) r GROUP BY 1 ORDER BY 1
		ON CONFLICT (phone) DO UPDATE SET last_at = GREATEST(c.last_at, excluded.last_at)`,
	qCopiedClaims: `INSERT INTO cap_sends (phone, at, attempt_id, marketing) SELECT r->>0, (r->>1)::bigint, $2, true FROM jsonb_array_elements($1::jsonb) r`,

	qDropAttempts:  `DELETE FROM attempts WHERE campaign_id = $1`,
	qDropPlans:     `DELETE FROM plans_applied WHERE campaign_id = $1`,
	qDropTestSends: `DELETE FROM test_sends WHERE campaign_id = $1`,
	qClearMoved:    `UPDATE campaigns SET moved_to = '', moved_at = '', moved_by = '', moved_serial = 0 WHERE id = $1`,

	qCopyAttempts: `SELECT batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at, plan_id, phones, provider_status, provider_ids FROM attempts WHERE campaign_id = $1 ORDER BY id`,
	qCopyPlans:    `SELECT plan_id, applied_at, serial, done FROM plans_applied WHERE campaign_id = $1 ORDER BY plan_id`,
	qCopyReports: `SELECT report_key, phone, provider_id, delivery, provider_status, reason, at, received_at, matched_by, unmatched, anomaly
		FROM reports WHERE campaign_id = $1 ORDER BY id`,
	qCopyTestSends:   `SELECT at, by_whom, body_hash, outcome, http_status, request_id, reason, phones FROM test_sends WHERE campaign_id = $1 ORDER BY id`,
	qCountCopied:     `SELECT (SELECT count(*) FROM reports WHERE campaign_id = $1), (SELECT count(*) FROM test_sends WHERE campaign_id = $1)`,
	qReportElsewhere: `SELECT report_key FROM reports WHERE report_key IN (SELECT jsonb_array_elements_text($1::jsonb)) AND campaign_id <> $2 LIMIT 1`,
	qSetCopied:       `UPDATE campaigns SET paused_at = $2, paused_by = $3, paused_reason = $4, latency_ms = $5 WHERE id = $1`,
	qPutAttempt: `INSERT INTO attempts (campaign_id, batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at, plan_id, phones, provider_status, provider_ids, ids_pending)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, CASE WHEN $14 <> '' AND $3 <> 'resolved_sent' THEN 1 ELSE 0 END) RETURNING id`,
	qPutPlan: `INSERT INTO plans_applied (campaign_id, plan_id, applied_at, serial, done) VALUES ($1, $2, $3, $4, $5)`,
	qSetMeta: `UPDATE campaigns SET lineage = $1, serial = $2 WHERE id = $3`,

	qIDsPending:    `SELECT id, campaign_id, phones, provider_ids FROM attempts WHERE ids_pending = 1 ORDER BY id LIMIT $1`,
	qAnyIDsPending: `SELECT count(*) FROM (SELECT 1 FROM attempts WHERE ids_pending = 1 LIMIT 1) AS p`,
	qPutMessages: `INSERT INTO messages (provider_id, campaign_id, phone, attempt_id)
		SELECT r->>0, (r->>2)::bigint, r->>1, (r->>3)::bigint FROM jsonb_array_elements($1::jsonb) AS r`,
	qIDsIndexed: `UPDATE attempts SET ids_pending = 0 WHERE id IN (SELECT CAST(jsonb_array_elements_text($1::jsonb) AS bigint))`,
	qMessagesFor: `SELECT m.provider_id, m.campaign_id, m.phone, m.attempt_id, a.state FROM messages m JOIN attempts a ON a.id = m.attempt_id
		WHERE m.provider_id IN (SELECT jsonb_array_elements_text($1::jsonb))`,
	qAttemptsByID: `SELECT id, campaign_id, state, batch_id, body_hash, plan_id FROM attempts
		WHERE id IN (SELECT CAST(jsonb_array_elements_text($1::jsonb) AS bigint))`,
	qAttemptsAfter: `SELECT id, campaign_id, state, phones, started_at, finished_at FROM attempts WHERE id > $1 ORDER BY id`,
	qAttemptsIn: `SELECT id, campaign_id, state, phones, started_at, finished_at FROM attempts
		WHERE id IN (SELECT CAST(jsonb_array_elements_text($1::jsonb) AS bigint)) ORDER BY id`,
	qLaterWith:    `SELECT count(*) FROM attempts WHERE campaign_id = $1 AND id > $2 AND phones LIKE $3`,
	qOpenAttempts: `SELECT id, campaign_id, phones FROM attempts WHERE state IN ('intent', 'in_doubt') ORDER BY id`,
	qAttemptIDs:   `SELECT phones, provider_ids FROM attempts WHERE id = $1`,
	qProofsOf: `SELECT phone, provider_id, delivery, provider_status, reason, at FROM reports
		WHERE campaign_id = $1 AND phone = $2 ORDER BY id`,
	// The reports of a number that matched no campaign (two messages to it
	// in the window, say): one may be about a message of this campaign.
	qUnmatchedProofsOf: `SELECT phone, provider_id, delivery, provider_status, reason, at FROM reports
		WHERE campaign_id = 0 AND phone = $1 ORDER BY id`,
	qInsertReports: `INSERT INTO reports (report_key, campaign_id, phone, provider_id, delivery, provider_status, reason, at, received_at, matched_by, unmatched, anomaly)
		SELECT r->>0, CAST(r->>1 AS bigint), r->>2, r->>3, r->>4, r->>5, r->>6, r->>7, r->>8, r->>9, r->>10, r->>11 FROM jsonb_array_elements($1::jsonb) AS r
		ON CONFLICT (report_key) DO NOTHING RETURNING report_key`,
	qInsertReplies: `INSERT INTO replies (reply_key, phone, kind, word, campaign_id, at, received_at)
		SELECT r->>0, r->>1, r->>2, r->>3, CAST(r->>4 AS bigint), r->>5, r->>6 FROM jsonb_array_elements($1::jsonb) AS r
		ON CONFLICT (reply_key) DO NOTHING RETURNING reply_key`,
	qReportsOf:        `SELECT phone, delivery, provider_status, reason, at, anomaly, provider_id FROM reports WHERE campaign_id = $1 ORDER BY at, id`,
	qAnyReport:        `SELECT count(*) FROM (SELECT 1 FROM reports WHERE campaign_id = $1 LIMIT 1) AS r`,
	qUnmatchedReports: `SELECT count(*) FROM reports WHERE campaign_id = 0`,
	qAnomalies:        `SELECT count(DISTINCT phone) FROM reports WHERE campaign_id = $1 AND anomaly <> ''`,
}

// sqliteOwn are the statements SQLite says in words of its own.
var sqliteOwn = map[stmt]string{
	qLockCopiedClaims: `INSERT INTO caps (phone, last_at) SELECT value->>0, max(value->>1) FROM json_each(?1) WHERE true GROUP BY 1
		ON CONFLICT (phone) DO UPDATE SET last_at = max(last_at, excluded.last_at)`,
	qCopiedClaims: `INSERT INTO cap_sends (phone, at, attempt_id, marketing) SELECT value->>0, value->>1, ?2, 1 FROM json_each(?1)`,
	// The writer's transaction takes the file's write lock at once: the
	// ledger's gate relies on it.
	qBegin: `BEGIN IMMEDIATE`,
	qPutMessages: `INSERT INTO messages (provider_id, campaign_id, phone, attempt_id)
		SELECT value->>0, CAST(value->>2 AS INTEGER), value->>1, CAST(value->>3 AS INTEGER) FROM json_each(?1)`,
	qIDsIndexed: `UPDATE attempts SET ids_pending = 0 WHERE id IN (SELECT value FROM json_each(?1))`,
	qMessagesFor: `SELECT m.provider_id, m.campaign_id, m.phone, m.attempt_id, a.state FROM messages m JOIN attempts a ON a.id = m.attempt_id
		WHERE m.provider_id IN (SELECT value FROM json_each(?1))`,
	qAttemptsByID:    `SELECT id, campaign_id, state, batch_id, body_hash, plan_id FROM attempts WHERE id IN (SELECT value FROM json_each(?1))`,
	qReportElsewhere: `SELECT report_key FROM reports WHERE report_key IN (SELECT value FROM json_each(?1)) AND campaign_id <> ?2 LIMIT 1`,
	qAttemptsIn:      `SELECT id, campaign_id, state, phones, started_at, finished_at FROM attempts WHERE id IN (SELECT value FROM json_each(?1)) ORDER BY id`,
	qInsertReports: `INSERT INTO reports (report_key, campaign_id, phone, provider_id, delivery, provider_status, reason, at, received_at, matched_by, unmatched, anomaly)
		SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8, value->>9, value->>10, value->>11
		FROM json_each(?1) WHERE true ON CONFLICT (report_key) DO NOTHING RETURNING report_key`,
	qInsertReplies: `INSERT INTO replies (reply_key, phone, kind, word, campaign_id, at, received_at)
		SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6
		FROM json_each(?1) WHERE true ON CONFLICT (reply_key) DO NOTHING RETURNING reply_key`,
}

// sqliteDialect reads and writes one campaign's rows of a state file: its
// scope is the campaign's id.
var sqliteDialect = sqliteOf(postgresDialect, sqliteOwn)

// sqliteOf is SQLite's text of every statement: own's where it has one,
// else pg's with its placeholders $n as ?n.
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

// sqliteV2Dialect reads a version 2 file, which holds one campaign (table
// meta) and no scope: only for read-only views of a file no writer has
// migrated yet, so it has only the reads they make.
var sqliteV2Dialect = &dialect{
	qEachRecord:  `SELECT batch_id, state, body_hash, phones, reason, started_at, finished_at, '', request_id, '', '' FROM attempts ORDER BY id`,
	qAttempts:    `SELECT id, batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at FROM attempts ORDER BY id`,
	qPlanApplied: `SELECT 0, 1 FROM plans_applied WHERE plan_id = ?`,
	qMeta:        `SELECT lineage, campaign, serial, '', '', '', 0, '', '', '', 0 FROM meta WHERE id = 1`,
	qCopyPlans:   `SELECT plan_id, applied_at, 0, 1 FROM plans_applied ORDER BY plan_id`,
}
