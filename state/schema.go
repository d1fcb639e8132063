package state

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/smsform/smsform/internal/atomicfile"
)

// migrations build the schema; migrations[i] takes it to version i+1. Only
// ever append. The tables stick to plain types and statements PostgreSQL
// also accepts (placeholders aside), so the schema can move there; the
// recipients view is SQLite's (json_each), PostgreSQL would build it with
// jsonb_array_elements_text.
var migrations = []string{
	// Version 1 kept a row per recipient, rewritten at every step of its
	// batch: per-batch cost grew with the batch in B-tree updates.
	`CREATE TABLE meta (
		id         INTEGER PRIMARY KEY CHECK (id = 1),
		lineage    TEXT    NOT NULL,
		campaign   TEXT    NOT NULL,
		serial     BIGINT  NOT NULL,
		created_at TEXT    NOT NULL
	);
	CREATE TABLE attempts (
		id          INTEGER PRIMARY KEY,
		batch_id    TEXT    NOT NULL,
		state       TEXT    NOT NULL CHECK (state IN ('intent', 'sent', 'failed', 'in_doubt', 'forgotten', 'resolved_sent', 'resolved_unsent')),
		body_hash   TEXT    NOT NULL,
		recipients  INTEGER NOT NULL,
		http_status INTEGER NOT NULL DEFAULT 0,
		request_id  TEXT    NOT NULL DEFAULT '',
		reason      TEXT    NOT NULL DEFAULT '',
		started_at  TEXT    NOT NULL,
		finished_at TEXT    NOT NULL DEFAULT ''
	);
	CREATE INDEX attempts_batch ON attempts (batch_id, id);
	CREATE INDEX attempts_state ON attempts (state);
	CREATE TABLE recipients (
		phone      TEXT    PRIMARY KEY,
		status     TEXT    NOT NULL CHECK (status IN ('sent', 'failed', 'in_doubt')),
		batch_id   TEXT    NOT NULL,
		attempt_id INTEGER NOT NULL REFERENCES attempts (id),
		body_hash  TEXT    NOT NULL,
		at         TEXT    NOT NULL,
		reason     TEXT    NOT NULL DEFAULT ''
	);
	CREATE INDEX recipients_attempt ON recipients (attempt_id);
	CREATE TABLE plans_applied (
		plan_id    TEXT PRIMARY KEY,
		applied_at TEXT NOT NULL
	);`,

	// Version 2 writes per batch attempt: its recipients are a JSON array
	// in the attempt's row, and a recipient's record is derived from its
	// latest attempt. The version 1 rows become those arrays: each phone
	// goes to the attempt its row named, the one its record derives from.
	// Attempts forgotten or resolved as unsent, whose rows version 1 had
	// deleted, keep an empty array (they count only as recipients).
	//
	// The attempts have no index but their key: every index is pages more
	// to write per step. The writer finds a batch's latest attempt in
	// memory; resolve, rare, scans. phones comes last, so that reading the
	// other columns of a large batch's row stops short of its overflow
	// pages.
	`CREATE TABLE attempts_v2 (
		id          INTEGER PRIMARY KEY,
		batch_id    TEXT    NOT NULL,
		state       TEXT    NOT NULL CHECK (state IN ('intent', 'sent', 'failed', 'in_doubt', 'forgotten', 'resolved_sent', 'resolved_unsent')),
		body_hash   TEXT    NOT NULL,
		recipients  INTEGER NOT NULL,
		http_status INTEGER NOT NULL DEFAULT 0,
		request_id  TEXT    NOT NULL DEFAULT '',
		reason      TEXT    NOT NULL DEFAULT '',
		started_at  TEXT    NOT NULL,
		finished_at TEXT    NOT NULL DEFAULT '',
		phones      TEXT    NOT NULL
	);
	INSERT INTO attempts_v2 (id, batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at, phones)
		SELECT a.id, a.batch_id, a.state, a.body_hash, a.recipients, a.http_status, a.request_id, a.reason, a.started_at, a.finished_at,
			coalesce((SELECT json_group_array(r.phone) FROM recipients r WHERE r.attempt_id = a.id), '[]')
		FROM attempts a ORDER BY a.id;
	DROP TABLE recipients;
	DROP TABLE attempts;
	ALTER TABLE attempts_v2 RENAME TO attempts;
	CREATE VIEW recipients AS
		SELECT phone, status, batch_id, attempt_id, body_hash, at, reason FROM (
			SELECT j.value AS phone,
				CASE a.state WHEN 'sent' THEN 'sent' WHEN 'resolved_sent' THEN 'sent' WHEN 'failed' THEN 'failed'
					WHEN 'intent' THEN 'in_doubt' WHEN 'in_doubt' THEN 'in_doubt' END AS status,
				a.batch_id, a.id AS attempt_id, a.body_hash,
				CASE WHEN a.finished_at <> '' THEN a.finished_at ELSE a.started_at END AS at,
				CASE WHEN a.state = 'resolved_sent' THEN '` + resolvedSentReason + `' ELSE a.reason END AS reason,
				row_number() OVER (PARTITION BY j.value ORDER BY a.id DESC) AS latest
			FROM attempts a, json_each(a.phones) j
		) WHERE latest = 1 AND status IS NOT NULL;`,

	// Version 3 holds any number of campaigns, as PostgreSQL does: a
	// project's campaigns share one file, and with it their opt-outs and
	// frequency caps. The one campaign of a version 2 file keeps id 1.
	// Attempts may now be split per recipient (the provider answered each
	// one: the intent becomes "split", its parts follow it) and suppressed
	// (opted out after the plan); each names the saved plan it applied.
	// Campaigns carry a moved mark (state migrate), a pause and the
	// measured latency of their provider.
	campaignsV3 + `
	INSERT INTO campaigns (id, name, lineage, serial, created_at) SELECT 1, campaign, lineage, serial, created_at FROM meta;
	DROP TABLE meta;
	CREATE TABLE attempts_v3 (
		id          INTEGER PRIMARY KEY,
		campaign_id INTEGER NOT NULL REFERENCES campaigns (id),
		batch_id    TEXT    NOT NULL,
		state       TEXT    NOT NULL CHECK (state IN (` + attemptStates + `)),
		body_hash   TEXT    NOT NULL,
		recipients  INTEGER NOT NULL,
		http_status INTEGER NOT NULL DEFAULT 0,
		request_id  TEXT    NOT NULL DEFAULT '',
		reason      TEXT    NOT NULL DEFAULT '',
		started_at  TEXT    NOT NULL,
		finished_at TEXT    NOT NULL DEFAULT '',
		plan_id     TEXT    NOT NULL DEFAULT '',
		phones      TEXT    NOT NULL
	);
	INSERT INTO attempts_v3 (id, campaign_id, batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at, phones)
		SELECT id, 1, batch_id, state, body_hash, recipients, http_status, request_id, reason, started_at, finished_at, phones FROM attempts ORDER BY id;
	DROP VIEW recipients;
	DROP TABLE attempts;
	ALTER TABLE attempts_v3 RENAME TO attempts;
	CREATE TABLE plans_applied_v3 (
		campaign_id INTEGER NOT NULL REFERENCES campaigns (id),
		plan_id     TEXT    NOT NULL,
		applied_at  TEXT    NOT NULL,
		serial      BIGINT  NOT NULL DEFAULT 0,
		done        INTEGER NOT NULL DEFAULT 1,
		PRIMARY KEY (campaign_id, plan_id)
	);
	INSERT INTO plans_applied_v3 (campaign_id, plan_id, applied_at) SELECT 1, plan_id, applied_at FROM plans_applied;
	DROP TABLE plans_applied;
	ALTER TABLE plans_applied_v3 RENAME TO plans_applied;
	` + ledgerV3 + `
	CREATE TABLE file_locks (
		campaign  TEXT PRIMARY KEY,
		lock_path TEXT NOT NULL
	);
	CREATE VIEW recipients AS
		SELECT c.name AS campaign, r.phone, r.status, r.batch_id, r.attempt_id, r.body_hash, r.at, r.reason FROM (
			SELECT a.campaign_id, j.value AS phone, ` + recipientStatus + ` AS status,
				a.batch_id, a.id AS attempt_id, a.body_hash,
				CASE WHEN a.finished_at <> '' THEN a.finished_at ELSE a.started_at END AS at,
				CASE WHEN a.state = 'resolved_sent' THEN '` + resolvedSentReason + `' ELSE a.reason END AS reason,
				row_number() OVER (PARTITION BY a.campaign_id, j.value ORDER BY a.id DESC) AS latest
			FROM attempts a, json_each(a.phones) j WHERE a.state <> 'split'
		) r JOIN campaigns c ON c.id = r.campaign_id
		WHERE r.latest = 1 AND r.status IS NOT NULL;`,

	// Version 4 keeps what the provider said of each recipient: the status
	// it gave when that was not plainly "sent" (a refusal's, or one the
	// mapping does not name) and, aligned with phones, the id of each
	// message (a JSON array, '' when the answer gave none). The lock file a
	// campaign was last locked through is no longer kept: a state file
	// with a second name is refused instead (oneName).
	`ALTER TABLE attempts ADD COLUMN provider_status TEXT NOT NULL DEFAULT '';
	ALTER TABLE attempts ADD COLUMN provider_ids TEXT NOT NULL DEFAULT '';
	DROP TABLE file_locks;
	DROP VIEW recipients;
	CREATE VIEW recipients AS
		SELECT c.name AS campaign, r.phone, r.status, r.batch_id, r.attempt_id, r.body_hash, r.at, r.reason,
			r.provider_status, r.provider_id, r.request_id AS provider_batch_id FROM (
			SELECT a.campaign_id, j.value AS phone, ` + recipientStatus + ` AS status,
				a.batch_id, a.id AS attempt_id, a.body_hash,
				CASE WHEN a.finished_at <> '' THEN a.finished_at ELSE a.started_at END AS at,
				CASE WHEN a.state = 'resolved_sent' THEN '` + resolvedSentReason + `' ELSE a.reason END AS reason,
				a.provider_status, coalesce(json_extract(nullif(a.provider_ids, ''), '$[' || j.key || ']'), '') AS provider_id, a.request_id,
				row_number() OVER (PARTITION BY a.campaign_id, j.value ORDER BY a.id DESC) AS latest
			FROM attempts a, json_each(a.phones) j WHERE a.state <> 'split'
		) r JOIN campaigns c ON c.id = r.campaign_id
		WHERE r.latest = 1 AND r.status IS NOT NULL;`,

	// Version 5 keeps what happens after the send (see receiver.go): an
	// index from the provider's message ids to the recipients they were
	// sent to (filled from version 4's ids), the delivery reports, each
	// once (report_key), matched to its recipient or not and why, and the
	// replies, each once; an opt-out says where it came from (source:
	// reply, or "" for a person's command).
	receiveV5 + `
	INSERT INTO messages (provider_id, campaign_id, phone, attempt_id)
		SELECT json_extract(a.provider_ids, '$[' || j.key || ']'), a.campaign_id, j.value, a.id
		FROM attempts a, json_each(a.phones) j
		WHERE a.provider_ids <> '' AND coalesce(json_extract(a.provider_ids, '$[' || j.key || ']'), '') <> '';
	ALTER TABLE optouts ADD COLUMN source TEXT NOT NULL DEFAULT '';
	ALTER TABLE optouts_now ADD COLUMN source TEXT NOT NULL DEFAULT '';
	DROP VIEW recipients;
	CREATE VIEW recipients AS
		SELECT c.name AS campaign, r.phone, r.status, r.batch_id, r.attempt_id, r.body_hash, r.at, r.reason,
			r.provider_status, r.provider_id, r.request_id AS provider_batch_id FROM (
			SELECT a.campaign_id, j.value AS phone, ` + recipientStatus + ` AS status,
				a.batch_id, a.id AS attempt_id, a.body_hash,
				CASE WHEN a.finished_at <> '' THEN a.finished_at ELSE a.started_at END AS at,
				CASE WHEN a.state = 'resolved_sent' AND a.reason NOT LIKE '` + reportResolvedPrefix + `%' THEN '` + resolvedSentReason + `' ELSE a.reason END AS reason,
				a.provider_status, coalesce(json_extract(nullif(a.provider_ids, ''), '$[' || j.key || ']'), '') AS provider_id, a.request_id,
				row_number() OVER (PARTITION BY a.campaign_id, j.value ORDER BY a.id DESC) AS latest
			FROM attempts a, json_each(a.phones) j WHERE a.state <> 'split'
		) r JOIN campaigns c ON c.id = r.campaign_id
		WHERE r.latest = 1 AND r.status IS NOT NULL;`,

	// Version 6 keeps the frequency cap's index as rows, a send each (the
	// number, when, the attempt that made it, whether it was marketing),
	// read through (phone, at) by an intent's claim and (at) by a plan
	// (version 7: (at, phone, marketing)),
	// rather than as a comma-joined text column rewritten at every send;
	// caps keeps a row per number, the one a claim locks in PostgreSQL,
	// and its latest send. Sends recorded before count as marketing: a
	// law's cap on marketing messages must not forget them.
	capsV6 + `
	INSERT INTO cap_sends (phone, at, attempt_id, marketing)
		SELECT c.phone, CAST(substr(v.value, 1, instr(v.value, ':') - 1) AS INTEGER), CAST(substr(v.value, instr(v.value, ':') + 1) AS INTEGER), 1
		FROM caps c, json_each('["' || replace(c.sends, ',', '","') || '"]') v
		WHERE c.sends <> '' AND instr(v.value, ':') > 0;
	ALTER TABLE caps DROP COLUMN sends;`,

	// Version 7 reads a plan's recent sends from an index on (at, phone,
	// marketing) instead of (at): the sends of the cap's window alone, a
	// thirtieth of a month's ledger for a day's cap, without a look into
	// the table for each. Before, a plan scanned the whole (phone, at)
	// index, ten million entries for a ledger of ten million sends.
	capsV7,

	// Version 8 fills the index of message ids when it is read rather than
	// with each outcome (see indexMessages): an attempt whose ids are not
	// in it yet is marked (ids_pending). Attempts copied from another
	// state before were never indexed: they are marked too. A resolution
	// by a delivery report names the id of the part it resolves, indexed
	// with that part: it is never marked.
	idsPendingV8 + `UPDATE attempts SET ids_pending = 1 WHERE ` + idsNeverIndexed + ` AND id NOT IN (SELECT attempt_id FROM messages);`,
}

// idsPendingV8 is what version 8 adds, SQLite's and PostgreSQL's alike;
// idsNeverIndexed, with the test each engine answers fast, picks the
// attempts it marks: SQLite makes NOT IN a lookup in a temporary index,
// PostgreSQL only NOT EXISTS an anti-join (its NOT IN read the messages
// once for each attempt).
const (
	idsPendingV8 = `ALTER TABLE attempts ADD COLUMN ids_pending INTEGER NOT NULL DEFAULT 0;
	CREATE INDEX attempts_ids_pending ON attempts (id) WHERE ids_pending = 1;
	`
	idsNeverIndexed = `provider_ids <> '' AND state <> 'resolved_sent'`
)

// capsV7 is what version 7 changes, SQLite's and PostgreSQL's alike.
const capsV7 = `DROP INDEX cap_sends_at;
	CREATE INDEX cap_sends_recent ON cap_sends (at, phone, marketing);`

// attemptStates lists every state an attempt may be in (see AttemptState).
const attemptStates = `'intent', 'sent', 'failed', 'in_doubt', 'forgotten', 'resolved_sent', 'resolved_unsent', 'split', 'suppressed'`

// recipientStatus is the SQL of a recipient's status from its latest
// attempt's state a.state, NULL for none (attemptStatus in Go). A split
// attempt is never a recipient's latest: its parts follow it.
const recipientStatus = `CASE a.state WHEN 'sent' THEN 'sent' WHEN 'resolved_sent' THEN 'sent' WHEN 'failed' THEN 'failed'
					WHEN 'intent' THEN 'in_doubt' WHEN 'in_doubt' THEN 'in_doubt' WHEN 'suppressed' THEN 'suppressed' END`

// campaignsV3 is the table of campaigns, SQLite's and PostgreSQL's alike
// but for the key's type.
const campaignsV3 = `CREATE TABLE campaigns (
		id            INTEGER PRIMARY KEY,
		name          TEXT    NOT NULL UNIQUE,
		lineage       TEXT    NOT NULL,
		serial        BIGINT  NOT NULL,
		created_at    TEXT    NOT NULL,
		moved_to      TEXT    NOT NULL DEFAULT '',
		moved_at      TEXT    NOT NULL DEFAULT '',
		moved_by      TEXT    NOT NULL DEFAULT '',
		moved_serial  BIGINT  NOT NULL DEFAULT 0,
		paused_at     TEXT    NOT NULL DEFAULT '',
		paused_by     TEXT    NOT NULL DEFAULT '',
		paused_reason TEXT    NOT NULL DEFAULT '',
		latency_ms    INTEGER NOT NULL DEFAULT 0
	);`

// ledgerV3 holds what concerns people rather than campaigns, shared by
// every campaign of the state: opt-outs, as a log of additions and
// removals (a plan sees them as of the log's id when it was made) and the
// numbers opted out now, kept beside it so that neither a plan nor an
// intent reads the log; the frequency cap's index (each number's recent
// sends, "unix:attempt,…", and the latest of them: no index on it, which
// every send would have to update, while a plan reads the table in one
// scan); and test sends.
const ledgerV3 = `CREATE TABLE optouts (
		id      INTEGER PRIMARY KEY,
		phone   TEXT NOT NULL,
		action  TEXT NOT NULL CHECK (action IN ('add', 'remove')),
		at      TEXT NOT NULL,
		by_whom TEXT NOT NULL DEFAULT '',
		reason  TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX optouts_phone ON optouts (phone, id);
	CREATE TABLE optouts_now (
		phone   TEXT    PRIMARY KEY,
		id      BIGINT  NOT NULL,
		at      TEXT    NOT NULL,
		by_whom TEXT    NOT NULL DEFAULT '',
		reason  TEXT    NOT NULL DEFAULT ''
	);
	CREATE TABLE caps (
		phone   TEXT   PRIMARY KEY,
		sends   TEXT   NOT NULL DEFAULT '',
		last_at BIGINT NOT NULL DEFAULT 0
	);
	CREATE TABLE test_sends (
		id          INTEGER PRIMARY KEY,
		campaign_id INTEGER NOT NULL REFERENCES campaigns (id),
		at          TEXT    NOT NULL,
		by_whom     TEXT    NOT NULL DEFAULT '',
		body_hash   TEXT    NOT NULL,
		outcome     TEXT    NOT NULL,
		http_status INTEGER NOT NULL DEFAULT 0,
		request_id  TEXT    NOT NULL DEFAULT '',
		reason      TEXT    NOT NULL DEFAULT '',
		phones      TEXT    NOT NULL
	);`

// receiveV5 holds what arrives after the send, SQLite's and PostgreSQL's
// alike but for the keys' types (see pgMigrations).
const receiveV5 = `CREATE TABLE messages (
		provider_id TEXT    NOT NULL,
		campaign_id INTEGER NOT NULL,
		phone       TEXT    NOT NULL,
		attempt_id  INTEGER NOT NULL
	);
	CREATE INDEX messages_provider_id ON messages (provider_id);
	CREATE TABLE reports (
		id              INTEGER PRIMARY KEY,
		report_key      TEXT    NOT NULL UNIQUE,
		campaign_id     INTEGER NOT NULL DEFAULT 0,
		phone           TEXT    NOT NULL DEFAULT '',
		provider_id     TEXT    NOT NULL DEFAULT '',
		delivery        TEXT    NOT NULL CHECK (delivery IN ('pending', 'delivered', 'undelivered')),
		provider_status TEXT    NOT NULL DEFAULT '',
		reason          TEXT    NOT NULL DEFAULT '',
		at              TEXT    NOT NULL,
		received_at     TEXT    NOT NULL,
		matched_by      TEXT    NOT NULL DEFAULT '',
		unmatched       TEXT    NOT NULL DEFAULT '',
		anomaly         TEXT    NOT NULL DEFAULT ''
	);
	CREATE INDEX reports_recipient ON reports (campaign_id, phone);
	CREATE TABLE replies (
		id          INTEGER PRIMARY KEY,
		reply_key   TEXT    NOT NULL UNIQUE,
		phone       TEXT    NOT NULL,
		kind        TEXT    NOT NULL CHECK (kind IN ('stop', 'start', 'other')),
		word        TEXT    NOT NULL DEFAULT '',
		campaign_id INTEGER NOT NULL DEFAULT 0,
		at          TEXT    NOT NULL,
		received_at TEXT    NOT NULL
	);`

// capsV6 is the cap index's rows of sends, SQLite's and PostgreSQL's alike.
const capsV6 = `CREATE TABLE cap_sends (
		phone      TEXT    NOT NULL,
		at         BIGINT  NOT NULL,
		attempt_id BIGINT  NOT NULL,
		marketing  BOOLEAN NOT NULL DEFAULT TRUE
	);
	CREATE INDEX cap_sends_phone ON cap_sends (phone, at);
	CREATE INDEX cap_sends_at ON cap_sends (at);`

// resolvedSentReason is the reason of a recipient resolved as sent by the
// operator; one resolved by a delivery report keeps its own, which starts
// with reportResolvedPrefix.
const (
	resolvedSentReason   = "resolved as sent by the operator"
	reportResolvedPrefix = "resolved as sent by a delivery report"
)

// SchemaVersion is the schema version this build writes and reads.
const SchemaVersion = 8

const timeFormat = time.RFC3339Nano

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) time.Time {
	t, _ := time.Parse(timeFormat, s)
	return t
}

// busyTimeout is how long a connection waits for a lock another holds.
const busyTimeout = 10 * time.Second

// dsn builds the driver's name for path. The writer gets synchronous=FULL
// (and WAL, see Open): a commit is durable when it returns, at one fsync.
// busy_timeout covers the moments a reader and the writer meet.
func dsn(path string, readOnly bool) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	if readOnly {
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
	} else {
		// journal_mode is persistent, so Open sets it once the file is
		// known to be a state: a refused open must not change the file.
		q.Add("_pragma", "foreign_keys(1)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_pragma", "cache_size(-32000)") // KiB: keeps the upper B-tree levels of large campaigns in memory
		q.Set("_txlock", "immediate")
	}
	return u.String() + "?" + q.Encode()
}

// checkFile reports whether path exists, and refuses a file that cannot be
// an intact SQLite database, before SQLite sees it: SQLite would take an
// empty file for a new database, and a truncated one is only noticed when
// the missing pages are read.
func checkFile(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open state %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("open state %s: %w", path, err)
	}
	if fi.IsDir() {
		return false, fmt.Errorf("open state %s: it is a folder", path)
	}
	if err := oneName(path, f, fi); err != nil {
		return false, err
	}
	if fi.Size() == 0 {
		return false, fmt.Errorf("open state %s: the file is empty, so it records nothing (truncated?); restore it, or delete it to start over, which forgets who was already sent", path)
	}
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[:16]) != "SQLite format 3\x00" {
		return false, fmt.Errorf("open state %s: not an smsform state file (not an SQLite database)", path)
	}
	if ps := pageSize(h); ps < 512 || ps&(ps-1) != 0 {
		return false, fmt.Errorf("open state %s: not an smsform state file (bad SQLite header)", path)
	}
	if size, want := fi.Size(), wantSize(h); size < want && !beingWritten(path, f) {
		return false, fmt.Errorf("open state %s: the file is truncated (%d of %d bytes); restore it from a copy", path, size, want)
	}
	return true, nil
}

func pageSize(h [100]byte) int64 {
	if ps := int64(binary.BigEndian.Uint16(h[16:18])); ps != 1 {
		return ps
	}
	return 65536
}

// wantSize is the size the header's page count gives the file. The count
// is valid when the "version-valid-for" number matches the change counter;
// 0 when it is not.
func wantSize(h [100]byte) int64 {
	if binary.BigEndian.Uint32(h[92:96]) != binary.BigEndian.Uint32(h[24:28]) {
		return 0
	}
	return int64(binary.BigEndian.Uint32(h[28:32])) * pageSize(h)
}

// beingWritten reports whether a file that looks shorter than its header
// says is only being written: SQLite writes a checkpoint's pages (or a
// transaction's, without WAL) in page order, header first, so while another
// process writes, the header may already count pages the file does not
// have yet. A -wal or -journal file beside it means that can be so; the file
// growing to its header's size within a moment shows it was. A file copied
// short stays short.
func beingWritten(path string, f *os.File) bool {
	for range 10 {
		for _, side := range []string{"-wal", "-journal"} {
			if fi, err := os.Stat(path + side); err == nil && fi.Size() > 0 {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
		var h [100]byte
		fi, err := f.Stat()
		if _, rerr := f.ReadAt(h[:], 0); err != nil || rerr != nil {
			return false
		}
		if fi.Size() >= wantSize(h) {
			return true
		}
	}
	return false
}

// create makes a new state file at path, recording no campaign yet,
// atomically: it is built under a temporary name and linked into place, so
// a crash never leaves a half-made state that a later Open would have to
// guess about, and a file another process made meanwhile (another campaign
// of the project) is kept, not replaced.
func create(ctx context.Context, path string, now time.Time) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer func() {
		if err != nil {
			os.Remove(tmpName)
			os.Remove(tmpName + "-journal")
		}
	}()
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(tmpName)}
	db, err := sql.Open("sqlite", u.String()+"?_pragma=synchronous(FULL)&_pragma=journal_mode(DELETE)")
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := applyMigrations(ctx, tx, 0, now); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	_, err = atomicfile.Link(tmpName, path)
	return err
}

// newLineage is a new random lineage: a record's identity, kept when it is
// copied elsewhere.
func newLineage() string {
	var id [16]byte
	rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

func applyMigrations(ctx context.Context, tx *sql.Tx, from int, now time.Time) error {
	if from == 0 {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
			return err
		}
	}
	for v := from; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v+1, formatTime(now)); err != nil {
			return err
		}
	}
	return nil
}

// schemaVersion returns the state's schema version, refusing a database
// that is not an smsform state or is newer than this build.
func schemaVersion(ctx context.Context, db *sql.DB, path string) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('schema_migrations', 'meta', 'campaigns')`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("open state %s: not a readable smsform state file: %w", path, err)
	}
	if n != 2 {
		return 0, fmt.Errorf("open state %s: not an smsform state file (an SQLite database without smsform's tables)", path)
	}
	var v sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("open state %s: %w", path, err)
	}
	if int(v.Int64) > SchemaVersion {
		return 0, fmt.Errorf("open state %s: it was written by a newer smsform (schema version %d; this one knows up to %d): upgrade smsform", path, v.Int64, SchemaVersion)
	}
	if v.Int64 < 1 {
		return 0, fmt.Errorf("open state %s: not an smsform state file (no schema version)", path)
	}
	return int(v.Int64), nil
}

// migrate brings an older state up to this build's schema.
func migrate(ctx context.Context, db *sql.DB, path string) error {
	v, err := schemaVersion(ctx, db, path)
	if err != nil || v == SchemaVersion {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("open state %s: %w", path, err)
	}
	defer tx.Rollback()
	if err := applyMigrations(ctx, tx, v, time.Now()); err != nil {
		return fmt.Errorf("open state %s: %w", path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("open state %s: %w", path, err)
	}
	return nil
}

func (s *State) loadMeta(ctx context.Context) error {
	var serial int64
	var m Moved
	var p Pause
	var movedAt, pausedAt string
	var latency int64
	err := s.db.QueryRowContext(ctx, s.q[qMeta], s.args()...).
		Scan(&s.lineage, &s.campaign, &serial, &m.To, &movedAt, &m.By, &m.Serial, &pausedAt, &p.By, &p.Reason, &latency)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("open state %s: not an smsform state file (no meta record)", s.loc)
	}
	if err != nil {
		return fmt.Errorf("open state %s: %w", s.loc, err)
	}
	s.serial.Store(serial)
	if m.To != "" {
		m.At = parseTime(movedAt)
		s.moved = &m
	}
	if pausedAt != "" {
		p.At = parseTime(pausedAt)
		s.pause = &p
	}
	s.latency = time.Duration(latency) * time.Millisecond
	return nil
}

// ErrHardLinks is wrapped by the error of a state file that has more than
// one name.
var ErrHardLinks = errors.New("state file has more than one name")

// oneName refuses a state file with more than one hard link. SQLite names
// its write-ahead log and shared memory after the path a database is opened
// by, so two names are two journals over one file: two applies through two
// names would each see only their own commits, send the same recipients
// and corrupt the file (SQLite's "How To Corrupt An SQLite Database File",
// §2.6). No lock keyed by the file's identity can mend that, so a second
// name is refused, for reading as for writing.
//
// A state file is born through a hard link (atomicfile.Link), which has two
// names for a moment: a count above one is read again for a while before it
// is believed.
func oneName(path string, f *os.File, fi os.FileInfo) error {
	const settle, tries = 20 * time.Millisecond, 10
	for i := 0; ; i++ {
		n, err := linkCount(f, fi)
		if err != nil {
			return fmt.Errorf("open state %s: %w", path, err)
		}
		if n <= 1 {
			return nil
		}
		if i == tries {
			return fmt.Errorf("open state %s: %w (%d hard links): SQLite keeps its journal beside the name it is opened by, so two names would be two journals over one file; remove every other name (find them with: find / -xdev -samefile %s), and copy the file (or run smsform state migrate) instead of linking it", path, ErrHardLinks, n, path)
		}
		time.Sleep(settle)
		if fi, err = f.Stat(); err != nil {
			return fmt.Errorf("open state %s: %w", path, err)
		}
	}
}
