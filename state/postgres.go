package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/smsform/smsform/internal/redact"
)

// DefaultSchema is the PostgreSQL schema of smsform's tables unless the
// URL's schema parameter names another.
const DefaultSchema = "smsform"

// A dead holder frees the lock when its session ends. A killed process's
// socket is closed by its kernel, and the server ends the session at once.
// A machine that vanished (power, network) closes nothing: the server
// notices through TCP keepalives, probing a connection idle for
// keepaliveIdle every keepaliveInterval, and giving up after
// keepaliveCount unanswered probes; tcp_user_timeout bounds data left
// unacknowledged. So the lock of a vanished holder is free within about
// keepaliveIdle + keepaliveCount*keepaliveInterval (30 s). The client sets
// the same on its side, so a vanished server fails an apply as quickly.
const (
	keepaliveIdle     = 15 * time.Second
	keepaliveInterval = 5 * time.Second
	keepaliveCount    = 3
)

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// pgTarget is a parsed state URL.
type pgTarget struct {
	cfg    *pgx.ConnConfig
	schema string
	shown  string // the URL with its password masked
	raw    string // the URL as written, for masking its password in others' messages
}

// parsePostgres reads a state URL or keyword string with pgx's own
// parser. Connection settings follow libpq: what the location leaves out
// comes from PGHOST, PGUSER, PGPASSWORD, PGSSLMODE, ~/.pgpass and the
// like. The parameter schema (smsform's own, which pgx hands back as a
// run-time parameter and which is never sent to the server) picks the
// schema, DefaultSchema by default.
func parsePostgres(loc string) (*pgTarget, error) {
	l, err := ParseLocation(loc)
	if err != nil {
		return nil, err
	}
	t := &pgTarget{shown: l.String(), raw: l.Unmasked(), schema: DefaultSchema}
	cfg, err := pgx.ParseConfig(l.Unmasked())
	if err != nil {
		return nil, fmt.Errorf("state %s: %s", t.shown, parseError(l, err))
	}
	if schema, ok := cfg.RuntimeParams["schema"]; ok {
		t.schema = schema
		delete(cfg.RuntimeParams, "schema")
	}
	if !schemaName.MatchString(t.schema) {
		return nil, fmt.Errorf("state %s: schema %q: use lower-case letters, digits and _ (at most 63, not starting with a digit)", t.shown, t.schema)
	}
	cfg.RuntimeParams["search_path"] = t.schema
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "smsform"
	}
	// The server's side of the keepalives (ignored on a unix socket).
	cfg.RuntimeParams["tcp_keepalives_idle"] = fmt.Sprint(keepaliveIdle.Seconds())
	cfg.RuntimeParams["tcp_keepalives_interval"] = fmt.Sprint(keepaliveInterval.Seconds())
	cfg.RuntimeParams["tcp_keepalives_count"] = fmt.Sprint(keepaliveCount)
	cfg.RuntimeParams["tcp_user_timeout"] = fmt.Sprint((keepaliveIdle + keepaliveCount*keepaliveInterval).Milliseconds())
	d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAliveConfig: net.KeepAliveConfig{
		Enable: true, Idle: keepaliveIdle, Interval: keepaliveInterval, Count: keepaliveCount}}
	if d.Timeout == 0 {
		d.Timeout = 30 * time.Second
	}
	cfg.DialFunc = d.DialContext
	t.cfg = cfg
	return t, nil
}

// parseError is what pgx said of a location it could not read, without
// the location: pgx quotes it with its passwords masked as best it can,
// which misses some (a quoted keyword value with blanks), so the quote
// goes, and any password still named in the rest is masked.
func parseError(l Location, err error) string {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		if i := strings.LastIndex(msg, "`: "); i >= 0 {
			msg = msg[i+len("`: "):]
		}
	}
	return redact.Secrets(msg, l.Unmasked())
}

// pgMigrations build the schema; pgMigrations[i] takes it to version i+1.
// Only ever append. Each is written out in full, never derived from the
// file's (SQLite's) text: a reformat of one must not silently change the
// other. The tables are the file's, shared by every campaign:
// each row names its campaign by id. phones is text, not jsonb: it is
// read back exactly as written, which the fast reader relies on.
var pgMigrations = []string{
	`CREATE TABLE campaigns (
		id         bigserial PRIMARY KEY,
		name       text   NOT NULL UNIQUE,
		lineage    text   NOT NULL,
		serial     bigint NOT NULL,
		created_at text   NOT NULL
	);
	CREATE TABLE attempts (
		id          bigserial PRIMARY KEY,
		campaign_id bigint  NOT NULL REFERENCES campaigns (id),
		batch_id    text    NOT NULL,
		state       text    NOT NULL CHECK (state IN ('intent', 'sent', 'failed', 'in_doubt', 'forgotten', 'resolved_sent', 'resolved_unsent')),
		body_hash   text    NOT NULL,
		recipients  integer NOT NULL,
		http_status integer NOT NULL DEFAULT 0,
		request_id  text    NOT NULL DEFAULT '',
		reason      text    NOT NULL DEFAULT '',
		started_at  text    NOT NULL,
		finished_at text    NOT NULL DEFAULT '',
		phones      text    NOT NULL
	);
	CREATE INDEX attempts_campaign ON attempts (campaign_id, id);
	CREATE TABLE plans_applied (
		campaign_id bigint NOT NULL REFERENCES campaigns (id),
		plan_id     text   NOT NULL,
		applied_at  text   NOT NULL,
		PRIMARY KEY (campaign_id, plan_id)
	);
	CREATE TABLE locks (
		campaign    text        PRIMARY KEY,
		host        text        NOT NULL,
		pid         integer     NOT NULL,
		backend_pid integer     NOT NULL,
		started_at  timestamptz NOT NULL,
		run_url     text        NOT NULL DEFAULT '',
		released_at timestamptz
	);
	CREATE VIEW recipients AS
		SELECT c.name AS campaign, r.phone, r.status, r.batch_id, r.attempt_id, r.body_hash, r.at, r.reason FROM (
			SELECT a.campaign_id, j.phone,
				CASE a.state WHEN 'sent' THEN 'sent' WHEN 'resolved_sent' THEN 'sent' WHEN 'failed' THEN 'failed'
					WHEN 'intent' THEN 'in_doubt' WHEN 'in_doubt' THEN 'in_doubt' END AS status,
				a.batch_id, a.id AS attempt_id, a.body_hash,
				CASE WHEN a.finished_at <> '' THEN a.finished_at ELSE a.started_at END AS at,
				CASE WHEN a.state = 'resolved_sent' THEN '` + resolvedSentReason + `' ELSE a.reason END AS reason,
				row_number() OVER (PARTITION BY a.campaign_id, j.phone ORDER BY a.id DESC) AS latest
			FROM attempts a CROSS JOIN LATERAL jsonb_array_elements_text(a.phones::jsonb) AS j(phone)
		) r JOIN campaigns c ON c.id = r.campaign_id
		WHERE r.latest = 1 AND r.status IS NOT NULL;`,

	// Version 2: what the file's schema version 3 added (see there).
	`ALTER TABLE campaigns
		ADD COLUMN moved_to      text   NOT NULL DEFAULT '',
		ADD COLUMN moved_at      text   NOT NULL DEFAULT '',
		ADD COLUMN moved_by      text   NOT NULL DEFAULT '',
		ADD COLUMN moved_serial  bigint NOT NULL DEFAULT 0,
		ADD COLUMN paused_at     text   NOT NULL DEFAULT '',
		ADD COLUMN paused_by     text   NOT NULL DEFAULT '',
		ADD COLUMN paused_reason text   NOT NULL DEFAULT '',
		ADD COLUMN latency_ms    integer NOT NULL DEFAULT 0;
	ALTER TABLE attempts ADD COLUMN plan_id text NOT NULL DEFAULT '';
	ALTER TABLE attempts DROP CONSTRAINT attempts_state_check;
	ALTER TABLE attempts ADD CONSTRAINT attempts_state_check CHECK (state IN (` + attemptStates + `));
	ALTER TABLE plans_applied ADD COLUMN serial bigint NOT NULL DEFAULT 0, ADD COLUMN done integer NOT NULL DEFAULT 1;
	ALTER TABLE locks ADD COLUMN creating boolean NOT NULL DEFAULT false;
	CREATE TABLE optouts (
		id      bigserial PRIMARY KEY,
		phone   text NOT NULL,
		action  text NOT NULL CHECK (action IN ('add', 'remove')),
		at      text NOT NULL,
		by_whom text NOT NULL DEFAULT '',
		reason  text NOT NULL DEFAULT ''
	);
	CREATE INDEX optouts_phone ON optouts (phone, id);
	CREATE TABLE optouts_now (
		phone   text   PRIMARY KEY,
		id      bigint NOT NULL,
		at      text   NOT NULL,
		by_whom text   NOT NULL DEFAULT '',
		reason  text   NOT NULL DEFAULT ''
	);
	-- Each claim rewrites its number's row: room left in each page keeps
	-- the new version on the same page (a HOT update, no index change).
	CREATE TABLE caps (
		phone   text   PRIMARY KEY,
		sends   text   NOT NULL DEFAULT '',
		last_at bigint NOT NULL DEFAULT 0
	) WITH (fillfactor = 70);
	CREATE TABLE test_sends (
		id          bigserial PRIMARY KEY,
		campaign_id bigint  NOT NULL REFERENCES campaigns (id),
		at          text    NOT NULL,
		by_whom     text    NOT NULL DEFAULT '',
		body_hash   text    NOT NULL,
		outcome     text    NOT NULL,
		http_status integer NOT NULL DEFAULT 0,
		request_id  text    NOT NULL DEFAULT '',
		reason      text    NOT NULL DEFAULT '',
		phones      text    NOT NULL
	);
	CREATE OR REPLACE VIEW recipients AS
		SELECT c.name AS campaign, r.phone, r.status, r.batch_id, r.attempt_id, r.body_hash, r.at, r.reason FROM (
			SELECT a.campaign_id, j.phone, ` + recipientStatus + ` AS status,
				a.batch_id, a.id AS attempt_id, a.body_hash,
				CASE WHEN a.finished_at <> '' THEN a.finished_at ELSE a.started_at END AS at,
				CASE WHEN a.state = 'resolved_sent' THEN '` + resolvedSentReason + `' ELSE a.reason END AS reason,
				row_number() OVER (PARTITION BY a.campaign_id, j.phone ORDER BY a.id DESC) AS latest
			FROM attempts a CROSS JOIN LATERAL jsonb_array_elements_text(a.phones::jsonb) AS j(phone)
			WHERE a.state <> 'split'
		) r JOIN campaigns c ON c.id = r.campaign_id
		WHERE r.latest = 1 AND r.status IS NOT NULL;`,

	// Version 3: what the file's schema version 4 added (see there).
	`ALTER TABLE attempts ADD COLUMN provider_status text NOT NULL DEFAULT '', ADD COLUMN provider_ids text NOT NULL DEFAULT '';
	DROP VIEW recipients;
	CREATE VIEW recipients AS
		SELECT c.name AS campaign, r.phone, r.status, r.batch_id, r.attempt_id, r.body_hash, r.at, r.reason,
			r.provider_status, r.provider_id, r.request_id AS provider_batch_id FROM (
			SELECT a.campaign_id, j.phone, ` + recipientStatus + ` AS status,
				a.batch_id, a.id AS attempt_id, a.body_hash,
				CASE WHEN a.finished_at <> '' THEN a.finished_at ELSE a.started_at END AS at,
				CASE WHEN a.state = 'resolved_sent' THEN '` + resolvedSentReason + `' ELSE a.reason END AS reason,
				a.provider_status, coalesce(nullif(a.provider_ids, '')::jsonb ->> (j.n - 1)::int, '') AS provider_id, a.request_id,
				row_number() OVER (PARTITION BY a.campaign_id, j.phone ORDER BY a.id DESC) AS latest
			FROM attempts a CROSS JOIN LATERAL jsonb_array_elements_text(a.phones::jsonb) WITH ORDINALITY AS j(phone, n)
			WHERE a.state <> 'split'
		) r JOIN campaigns c ON c.id = r.campaign_id
		WHERE r.latest = 1 AND r.status IS NOT NULL;`,

	// Version 4: what the file's schema version 5 added (see there).
	`CREATE TABLE messages (
		provider_id text   NOT NULL,
		campaign_id bigint NOT NULL,
		phone       text   NOT NULL,
		attempt_id  bigint NOT NULL
	);
	CREATE INDEX messages_provider_id ON messages (provider_id);
	CREATE TABLE reports (
		id              bigserial PRIMARY KEY,
		report_key      text   NOT NULL UNIQUE,
		campaign_id     bigint NOT NULL DEFAULT 0,
		phone           text   NOT NULL DEFAULT '',
		provider_id     text   NOT NULL DEFAULT '',
		delivery        text   NOT NULL CHECK (delivery IN ('pending', 'delivered', 'undelivered')),
		provider_status text   NOT NULL DEFAULT '',
		reason          text   NOT NULL DEFAULT '',
		at              text   NOT NULL,
		received_at     text   NOT NULL,
		matched_by      text   NOT NULL DEFAULT '',
		unmatched       text   NOT NULL DEFAULT '',
		anomaly         text   NOT NULL DEFAULT ''
	);
	CREATE INDEX reports_recipient ON reports (campaign_id, phone);
	CREATE TABLE replies (
		id          bigserial PRIMARY KEY,
		reply_key   text   NOT NULL UNIQUE,
		phone       text   NOT NULL,
		kind        text   NOT NULL CHECK (kind IN ('stop', 'start', 'other')),
		word        text   NOT NULL DEFAULT '',
		campaign_id bigint NOT NULL DEFAULT 0,
		at          text   NOT NULL,
		received_at text   NOT NULL
	);
	INSERT INTO messages (provider_id, campaign_id, phone, attempt_id)
		SELECT i.id, a.campaign_id, p.phone, a.id FROM attempts a
		CROSS JOIN LATERAL jsonb_array_elements_text(a.phones::jsonb) WITH ORDINALITY AS p(phone, n)
		CROSS JOIN LATERAL jsonb_array_elements_text(a.provider_ids::jsonb) WITH ORDINALITY AS i(id, m)
		WHERE a.provider_ids <> '' AND i.m = p.n AND i.id <> '';
	ALTER TABLE optouts ADD COLUMN source text NOT NULL DEFAULT '';
	ALTER TABLE optouts_now ADD COLUMN source text NOT NULL DEFAULT '';
	DROP VIEW recipients;
	CREATE VIEW recipients AS
		SELECT c.name AS campaign, r.phone, r.status, r.batch_id, r.attempt_id, r.body_hash, r.at, r.reason,
			r.provider_status, r.provider_id, r.request_id AS provider_batch_id FROM (
			SELECT a.campaign_id, j.phone, ` + recipientStatus + ` AS status,
				a.batch_id, a.id AS attempt_id, a.body_hash,
				CASE WHEN a.finished_at <> '' THEN a.finished_at ELSE a.started_at END AS at,
				CASE WHEN a.state = 'resolved_sent' AND a.reason NOT LIKE '` + reportResolvedPrefix + `%' THEN '` + resolvedSentReason + `' ELSE a.reason END AS reason,
				a.provider_status, coalesce(nullif(a.provider_ids, '')::jsonb ->> (j.n - 1)::int, '') AS provider_id, a.request_id,
				row_number() OVER (PARTITION BY a.campaign_id, j.phone ORDER BY a.id DESC) AS latest
			FROM attempts a CROSS JOIN LATERAL jsonb_array_elements_text(a.phones::jsonb) WITH ORDINALITY AS j(phone, n)
			WHERE a.state <> 'split'
		) r JOIN campaigns c ON c.id = r.campaign_id
		WHERE r.latest = 1 AND r.status IS NOT NULL;`,

	// Version 5: what the file's schema version 6 added (see there).
	capsV6 + `
	INSERT INTO cap_sends (phone, at, attempt_id, marketing)
		SELECT c.phone, CAST(split_part(v, ':', 1) AS bigint), CAST(split_part(v, ':', 2) AS bigint), true
		FROM caps c CROSS JOIN LATERAL unnest(string_to_array(c.sends, ',')) AS v
		WHERE c.sends <> '' AND v LIKE '%:%';
	ALTER TABLE caps DROP COLUMN sends;`,

	// Version 6: what the file's schema version 7 changed (see there).
	capsV7,

	// Version 7: what the file's schema version 8 changed (see there).
	idsPendingV8 + `UPDATE attempts SET ids_pending = 1 WHERE ` + idsNeverIndexed + `
		AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.attempt_id = attempts.id);`,
}

// PostgresSchemaVersion is the version of the PostgreSQL schema this build writes and reads.
var PostgresSchemaVersion = len(pgMigrations)

// advisoryKey is the advisory lock of a name in a schema: the same for
// every smsform that opens it, and apart from other schemas' and other
// programs' locks.
func advisoryKey(schema, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("smsform\x00" + schema + "\x00" + name))
	return int64(h.Sum64())
}

// migratePostgres creates or brings up to date the schema, under an
// advisory lock so that two first runs do not both create it.
func migratePostgres(ctx context.Context, conn *sql.Conn, t *pgTarget) error {
	v, err := pgSchemaVersion(ctx, conn, t)
	if err != nil || v == PostgresSchemaVersion {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("open state %s: %w", t.shown, err)
	}
	defer tx.Rollback()
	schema := pgx.Identifier{t.schema}.Sanitize()
	steps := []string{
		`SELECT pg_advisory_xact_lock(` + fmt.Sprint(advisoryKey(t.schema, "\x00migrate")) + `)`,
		`CREATE SCHEMA IF NOT EXISTS ` + schema,
		`CREATE TABLE IF NOT EXISTS ` + schema + `.schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
	}
	for _, q := range steps {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("open state %s: create schema %s: %w", t.shown, t.schema, err)
		}
	}
	// Read again under the lock: another smsform may have just migrated.
	var cur sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(version) FROM `+schema+`.schema_migrations`).Scan(&cur); err != nil {
		return fmt.Errorf("open state %s: %w", t.shown, err)
	}
	for i := int(cur.Int64); i < len(pgMigrations); i++ {
		if _, err := tx.ExecContext(ctx, `SET LOCAL search_path = `+schema); err != nil {
			return fmt.Errorf("open state %s: %w", t.shown, err)
		}
		if _, err := tx.ExecContext(ctx, pgMigrations[i]); err != nil {
			return fmt.Errorf("open state %s: migrate schema %s to version %d: %w", t.shown, t.schema, i+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+schema+`.schema_migrations (version) VALUES ($1)`, i+1); err != nil {
			return fmt.Errorf("open state %s: %w", t.shown, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("open state %s: %w", t.shown, err)
	}
	return nil
}

// pgSchemaVersion is the schema's version, 0 when it has none yet; a
// newer one than this build knows is refused.
func pgSchemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, t *pgTarget) (int, error) {
	var v sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT max(version) FROM `+pgx.Identifier{t.schema}.Sanitize()+`.schema_migrations`).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") { // undefined table, schema
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open state %s: %w", t.shown, err)
	}
	if int(v.Int64) > PostgresSchemaVersion {
		return 0, fmt.Errorf("open state %s: schema %s was written by a newer smsform (version %d; this one knows up to %d): upgrade smsform",
			t.shown, t.schema, v.Int64, PostgresSchemaVersion)
	}
	return int(v.Int64), nil
}

// openPostgres is Open for a PostgreSQL state. The lock and every write
// share one connection: the lock is a session-level advisory lock, so
// should the connection go (server restarted, network cut), the lock goes
// with it, and so does this writer's only way to write.
func openPostgres(ctx context.Context, loc string, opts Options) (_ *State, err error) {
	t, err := parsePostgres(loc)
	if err != nil {
		return nil, err
	}
	defer func() { err = explainPostgres(t, err) }()
	if opts.Campaign == "" {
		return nil, fmt.Errorf("open state %s: a PostgreSQL state holds many campaigns: name one", t.shown)
	}
	s := &State{loc: t.shown, q: postgresDialect, now: clock(opts), schema: SchemaVersion, shared: opts.Shared, gate: opts.Gate,
		guardVacated: opts.Shared && !opts.AllowMoved}
	s.db = stdlib.OpenDB(*t.cfg)
	s.db.SetMaxOpenConns(4)
	defer func() {
		if err != nil {
			s.db.Close()
		}
	}()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", t.shown, err)
	}
	defer func() {
		if err != nil {
			conn.Close() // ends the session, and so the lock
		}
	}()
	if err := migratePostgres(ctx, conn, t); err != nil {
		return nil, err
	}
	lk := &pgLock{conn: conn, key: advisoryKey(t.schema, opts.Campaign), campaign: opts.Campaign, shown: t.shown}
	if err := lk.acquire(ctx, opts.LockTimeout, opts.LockWait); err != nil {
		return nil, err
	}
	// A campaign that recorded nothing leaves no holder's row either.
	s.atClose = func(*sql.Conn) { lk.release(!s.recorded()) }

	s.campaign = opts.Campaign
	var id int64
	err = conn.QueryRowContext(ctx, `SELECT id FROM campaigns WHERE name = $1`, opts.Campaign).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Not recorded yet: the first change creates the record, and with
		// it the holder's row. A holder that dies before leaves neither,
		// nothing to pass for a sign of an earlier state.
		if !opts.NewState {
			if signs := append(pgSigns(ctx, conn, t, lk.previous, opts.Campaign), opts.Signs...); len(signs) > 0 {
				lk.release(false)
				return nil, &EarlierStateError{Loc: t.shown, Campaign: opts.Campaign, Signs: signs}
			}
		}
		if s.guardVacated {
			if err := s.checkVacated(ctx, conn); err != nil {
				lk.release(false)
				return nil, err
			}
		}
		// Until its first change, the holder's row says it is creating the
		// record: a holder that dies before leaves no sign.
		if err := lk.record(ctx, opts.RunURL, true); err != nil {
			lk.release(false)
			return nil, err
		}
		s.onBirth = func(ctx context.Context) error { return lk.record(ctx, opts.RunURL, false) }
	case err != nil:
		lk.release(false)
		return nil, fmt.Errorf("open state %s: %w", t.shown, err)
	default:
		if err := lk.record(ctx, opts.RunURL, false); err != nil {
			lk.release(false)
			return nil, err
		}
		s.id.Store(id)
		if err := s.loadMeta(ctx); err != nil {
			lk.release(false)
			return nil, err
		}
		if !opts.AllowMoved {
			if err := s.checkMoved(); err != nil {
				lk.release(false)
				return nil, err
			}
		}
	}
	if s.w, err = newWriter(ctx, s, conn); err != nil {
		lk.release(false)
		return nil, fmt.Errorf("open state %s: %w", t.shown, err)
	}
	return s, nil
}

// openPostgresReadOnly is OpenReadOnly for a PostgreSQL state. It creates
// nothing: a missing schema or campaign is an empty view.
func openPostgresReadOnly(ctx context.Context, loc, name string) (_ *State, err error) {
	t, err := parsePostgres(loc)
	if err != nil {
		return nil, err
	}
	defer func() { err = explainPostgres(t, err) }()
	s := &State{loc: t.shown, q: postgresDialect, now: time.Now, schema: SchemaVersion}
	db := stdlib.OpenDB(*t.cfg)
	db.SetMaxOpenConns(4)
	defer func() {
		if s.db == nil {
			db.Close()
		}
	}()
	v, err := pgSchemaVersion(ctx, db, t)
	if err != nil || v == 0 {
		return s, err
	}
	if v < PostgresSchemaVersion {
		return nil, fmt.Errorf("open state %s: schema %s is at version %d, this smsform needs %d: run any command that writes (apply, state resolve) to migrate it",
			t.shown, t.schema, v, PostgresSchemaVersion)
	}
	rows, err := db.QueryContext(ctx, `SELECT id, name FROM campaigns WHERE $1 = '' OR name = $1 ORDER BY name`, name)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", t.shown, err)
	}
	var ids []int64
	var names []string
	for rows.Next() {
		var id int64
		var n string
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("open state %s: %w", t.shown, err)
		}
		ids, names = append(ids, id), append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("open state %s: %w", t.shown, err)
	}
	switch {
	case len(ids) == 0:
		s.db = db // no record of the campaign, but the project's ledger
		return s, nil
	case len(ids) > 1:
		return nil, fmt.Errorf("open state %s: it holds %d campaigns (%s): say which, with the campaign file", t.shown, len(ids), strings.Join(names, ", "))
	}
	s.db = db
	s.id.Store(ids[0])
	if err := s.loadMeta(ctx); err != nil {
		s.db = nil
		return nil, err
	}
	return s, nil
}

// pgSigns lists what suggests that the campaign had a record in this
// database: a lock taken for it here, or its record in another smsform
// schema (a changed schema parameter).
func pgSigns(ctx context.Context, conn querier, t *pgTarget, previous *holder, name string) []string {
	var signs []string
	if p := previous; p != nil {
		signs = append(signs, fmt.Sprintf("an apply or resolve (pid %d on host %s) locked campaign %q in schema %s at %s",
			p.PID, p.Host, name, t.schema, p.Started.UTC().Format(time.RFC3339)))
	}
	// Schemas holding smsform's tables, not merely a table of that name.
	rows, err := conn.QueryContext(ctx, `SELECT table_schema FROM information_schema.tables
		WHERE table_name = 'campaigns' AND table_schema <> $1
			AND table_schema IN (SELECT table_schema FROM information_schema.tables WHERE table_name = 'attempts')
			AND table_schema IN (SELECT table_schema FROM information_schema.tables WHERE table_name = 'schema_migrations')
		ORDER BY table_schema`, t.schema)
	if err != nil {
		return signs
	}
	var others []string
	for rows.Next() {
		var sc string
		if rows.Scan(&sc) == nil {
			others = append(others, sc)
		}
	}
	rows.Close()
	for _, sc := range others {
		var lineage string
		var serial int64
		q := `SELECT lineage, serial FROM ` + pgx.Identifier{sc}.Sanitize() + `.campaigns WHERE name = $1`
		if conn.QueryRowContext(ctx, q, name).Scan(&lineage, &serial) == nil {
			signs = append(signs, fmt.Sprintf("schema %s of this database records campaign %q (lineage %s, serial %d): add ?schema=%s to the URL to use it",
				sc, name, lineage, serial, sc))
		}
	}
	return signs
}

// pgLock is a session-level advisory lock on the writer's connection, with
// a row in table locks that says who holds it.
type pgLock struct {
	conn     *sql.Conn
	key      int64
	campaign string
	shown    string
	held     bool
	previous *holder // the last holder's row, found on taking the lock
}

// acquire takes the advisory lock and reads the last holder's row.
func (lk *pgLock) acquire(ctx context.Context, timeout time.Duration, wait func(time.Duration)) error {
	deadline := time.Now().Add(timeout)
	for waited := false; ; waited = true {
		var ok bool
		if err := lk.conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, lk.key).Scan(&ok); err != nil {
			return fmt.Errorf("lock state %s: %w", lk.shown, err)
		}
		if ok {
			break
		}
		if timeout <= 0 || !time.Now().Before(deadline) {
			return lk.lockedError(ctx)
		}
		if !waited && wait != nil {
			wait(timeout)
		}
		t := time.NewTimer(min(lockPoll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("lock state %s: %w", lk.shown, ctx.Err())
		case <-t.C:
		}
	}
	lk.held = true
	lk.previous = lastHolder(ctx, lk.conn, lk.campaign)
	return nil
}

// lastHolder is the row of the last apply or resolve that locked the
// campaign and got past creating its record; nil when there is none.
func lastHolder(ctx context.Context, q querier, campaign string) *holder {
	var p holder
	if q.QueryRowContext(ctx, `SELECT host, pid, started_at FROM locks WHERE campaign = $1 AND NOT creating`, campaign).
		Scan(&p.Host, &p.PID, &p.Started) != nil {
		return nil
	}
	return &p
}

// record writes the row that names this process as the holder.
func (lk *pgLock) record(ctx context.Context, runURL string, creating bool) error {
	host, _ := os.Hostname()
	_, err := lk.conn.ExecContext(ctx, `INSERT INTO locks (campaign, host, pid, backend_pid, started_at, run_url, creating)
		VALUES ($1, $2, $3, pg_backend_pid(), now(), $4, $5)
		ON CONFLICT (campaign) DO UPDATE SET host = $2, pid = $3, backend_pid = pg_backend_pid(), started_at = now(), run_url = $4,
			released_at = NULL, creating = $5`,
		lk.campaign, host, os.Getpid(), runURL, creating)
	if err != nil {
		return fmt.Errorf("lock state %s: %w", lk.shown, err)
	}
	return nil
}

// lockedError names the holder, when its row is the one of the session
// that holds the lock now. A holder writes its row a moment after taking
// the lock (once the campaign's record exists), so that moment is waited
// for; a holder still without a row after it is reported as unknown.
func (lk *pgLock) lockedError(ctx context.Context) error {
	e := &LockedError{Path: lk.shown}
	deadline := time.Now().Add(holderWait)
	for {
		var started time.Time
		err := lk.conn.QueryRowContext(ctx, `SELECT host, pid, started_at, run_url FROM locks
			WHERE campaign = $1 AND released_at IS NULL AND backend_pid IN (
				SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
					AND classid = (($2::bigint >> 32) & 4294967295)::oid AND objid = ($2::bigint & 4294967295)::oid)`,
			lk.campaign, lk.key).Scan(&e.Host, &e.PID, &started, &e.RunURL)
		if err == nil {
			e.Started = started
			return e
		}
		if !errors.Is(err, sql.ErrNoRows) || !time.Now().Before(deadline) {
			return e
		}
		select {
		case <-ctx.Done():
			return e
		case <-time.After(lockPoll):
		}
	}
}

// release marks the row released and unlocks. Errors are of no use: when
// the connection is gone, so is the lock.
func (lk *pgLock) release(remove bool) error {
	if !lk.held {
		return nil
	}
	lk.held = false
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if remove {
		lk.conn.ExecContext(ctx, `DELETE FROM locks WHERE campaign = $1 AND backend_pid = pg_backend_pid() AND creating`, lk.campaign)
	} else {
		lk.conn.ExecContext(ctx, `UPDATE locks SET released_at = now() WHERE campaign = $1 AND backend_pid = pg_backend_pid()`, lk.campaign)
	}
	lk.conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, lk.key)
	return nil
}

// querier is what reading a few rows needs: a connection or a pool.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
