package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A state file holds the records of any number of campaigns (a project's
// campaigns share one). It is identified by the file itself, never by the
// spelling of its path: Open resolves symbolic links, and each campaign's
// lock file is named after the real file; on Linux each holder also locks
// its campaign's byte of the file itself, so one file mounted at two paths
// is one lock (see lockInode). A file with a second name (a hard link) is
// refused (see oneName): SQLite's journal follows the name.

// lockPath is the lock file of a campaign in the state file real.
func lockPath(real, campaign string) string { return real + "." + campaign + ".lock" }

// LockFile is the lock file of campaign in the state file at path (as
// written: links are not resolved), for callers that look for signs of an
// earlier state.
func LockFile(path, campaign string) string { return lockPath(path, campaign) }

// openFile is Open for a state file. A missing file is not created here:
// the first change creates it (see born), so an apply that records nothing
// leaves no state behind, and no lock file.
func openFile(ctx context.Context, path string, opts Options) (_ *State, err error) {
	real, err := ResolveFile(path)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	if opts.Campaign == "" {
		if opts.Campaign, err = onlyCampaign(ctx, real); err != nil {
			return nil, err
		}
	}
	// Signs are looked for before the lock, whose file is one of them.
	// Should another apply be creating the state right now, the lock
	// below says so, which is the better message.
	exists, err := checkFile(real)
	if err != nil {
		return nil, err
	}
	var signs []string
	if !opts.NewState {
		signs = append(fileSigns(real, opts.Campaign, exists), opts.Signs...)
	}
	lk, err := acquireLock(ctx, real, opts.Campaign, opts)
	if err != nil {
		return nil, err
	}
	s := &State{loc: real, q: sqliteDialect, now: clock(opts), lock: lk, atClose: closeSQLite, campaign: opts.Campaign, shared: opts.Shared, gate: opts.Gate,
		guardVacated: opts.Shared && !opts.AllowMoved}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if exists, err = checkFile(real); err != nil {
		return nil, err
	}
	var conn *sql.Conn
	if exists {
		if conn, err = s.attachFile(ctx); err != nil {
			return nil, err
		}
	} else {
		s.mkConn = s.createFile
	}
	if !s.recorded() {
		if len(signs) > 0 {
			return nil, &EarlierStateError{Loc: real, Campaign: opts.Campaign, Signs: signs}
		}
		// Until its first change, a holder that dies leaves no sign.
		if err := lk.writeHolder(true); err != nil {
			return nil, fmt.Errorf("lock state %s: %w", path, err)
		}
		s.born = func() { lk.writeHolder(false) }
	}
	if !opts.AllowMoved {
		err := s.checkMoved()
		if err == nil && conn != nil && s.guardVacated && !s.recorded() {
			err = s.checkVacated(ctx, conn)
		}
		if err != nil {
			if conn != nil {
				conn.Close()
			}
			return nil, err
		}
	}
	if s.w, err = newWriter(ctx, s, conn); err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	return s, nil
}

// onlyCampaign is the name of the one campaign the file at real records,
// for commands that name a state but no campaign.
func onlyCampaign(ctx context.Context, real string) (string, error) {
	st, err := openFileReadOnly(ctx, real, "", true)
	if err != nil {
		return "", err
	}
	defer st.Close()
	if st.Campaign() == "" {
		return "", fmt.Errorf("open state %s: it records no campaign yet: name one, with the campaign file", real)
	}
	return st.Campaign(), nil
}

// attachFile opens the existing state file for writing: migrated to this
// build's schema, in WAL mode, its campaign found (s.id stays 0 when the
// file does not record it yet). It returns the writer's connection.
func (s *State) attachFile(ctx context.Context) (_ *sql.Conn, err error) {
	s.db, err = sql.Open("sqlite", dsn(s.loc, false))
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", s.loc, err)
	}
	s.db.SetMaxOpenConns(4)
	if err := migrate(ctx, s.db, s.loc); err != nil {
		return nil, err
	}
	s.schema = SchemaVersion
	// WAL: a commit appends to one file and fsyncs it once, where a
	// rollback journal needs three or four fsyncs; readers are not blocked
	// by the writer. Close switches back so the file at rest stands alone.
	if err := walMode(ctx, s.db); err != nil {
		return nil, fmt.Errorf("open state %s: %w", s.loc, err)
	}
	if err := s.findCampaign(ctx, s.db); err != nil {
		return nil, err
	}
	if !s.shared {
		if err := s.onlyOwn(ctx, s.db); err != nil {
			return nil, err
		}
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", s.loc, err)
	}
	return conn, nil
}

// walMode puts the database in WAL mode. Switching modes needs the file to
// itself, and SQLite answers "busy" at once, without waiting, while
// another process has it open in the other mode (a project's file, where
// an opt-out or a pause is being written): that moment is waited out, as
// long as the busy timeout would wait for a lock.
func walMode(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		switch {
		case err == nil && mode == "wal":
			return nil
		case err == nil:
			return fmt.Errorf("cannot use WAL journal (got %q)", mode)
		case !strings.Contains(err.Error(), "SQLITE_BUSY") || !time.Now().Before(deadline):
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// createFile makes the missing state file (schema only, no campaign), or
// takes the one another process made meanwhile, and attaches to it: the
// writer calls it before the first change.
func (s *State) createFile(ctx context.Context) (*sql.Conn, error) {
	if err := create(ctx, s.loc, s.now()); err != nil {
		return nil, fmt.Errorf("create state %s: %w", s.loc, err)
	}
	// The file did not exist when the lock was taken, so its byte was not
	// locked: another path to it (mounted since) must not take it now.
	if lk, ok := s.lock.(*lockFile); ok {
		if held, err := lk.lockInode(); err != nil || !held {
			if err == nil {
				err = &LockedError{Path: s.loc + ", through another path to the same file (mounted twice?)"}
			}
			return nil, fmt.Errorf("create state %s: %w", s.loc, err)
		}
	}
	return s.attachFile(ctx)
}

// findCampaign sets the state's campaign id and meta when q's database
// records it. A state created without a campaign name (by an older
// smsform) adopts the first one given.
func (s *State) findCampaign(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}) error {
	var id int64
	err := q.QueryRowContext(ctx, `SELECT id FROM campaigns WHERE name = ?`, s.campaign).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM campaigns`).Scan(&n); err != nil {
			return fmt.Errorf("open state %s: %w", s.loc, err)
		}
		err = q.QueryRowContext(ctx, `UPDATE campaigns SET name = ?, serial = serial + 1 WHERE name = '' AND ? = 1 RETURNING id`, s.campaign, n).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // not recorded yet: its first change creates it
		}
	}
	if err != nil {
		return fmt.Errorf("open state %s: %w", s.loc, err)
	}
	s.id.Store(id)
	return s.loadMeta(ctx)
}

// closeSQLite leaves the file self-contained: checkpointed and back in
// rollback-journal mode, so that it can be copied alone and read without
// creating "-wal"/"-shm" files.
func closeSQLite(conn *sql.Conn) {
	// Every change is already durable in the WAL, so this is tidying: when
	// a reader in another process holds the WAL open it fails after a short
	// wait, and the next writer's Close folds the WAL in instead.
	ctx := context.Background()
	conn.ExecContext(ctx, "PRAGMA busy_timeout = 1000")
	conn.ExecContext(ctx, "PRAGMA journal_mode = DELETE")
}

// openFileReadOnly is OpenReadOnly for a state file.
//
// A state at rest (closed cleanly) is read without creating any file next to
// it. While an apply has it open, or after a crash, the reader shares the
// writer's "-wal" and "-shm" files and sees every committed change.
func openFileReadOnly(ctx context.Context, path, campaign string, shared bool) (_ *State, err error) {
	s, err := openFileView(ctx, path)
	if err != nil || s.db == nil || s.unscoped {
		if err == nil && campaign != "" && s.campaign != "" && s.campaign != campaign {
			s.Close()
			return nil, fmt.Errorf("open state %s: it records campaign %q, not %q: %w", path, s.campaign, campaign, ErrLineage)
		}
		return s, err
	}
	s.campaign = campaign
	if err := s.pickCampaign(ctx, campaign); err != nil {
		s.Close()
		return nil, err
	}
	if !shared && campaign != "" && !s.recorded() {
		if err := s.onlyOwn(ctx, s.db); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// openFileView opens the state file at path read-only, no campaign picked
// yet: an empty view when it does not exist; a version 2 file, which holds
// one campaign, with that one.
func openFileView(ctx context.Context, path string) (_ *State, err error) {
	real, err := ResolveFile(path)
	if err != nil {
		abs, aerr := filepath.Abs(path)
		if _, serr := os.Stat(filepath.Dir(abs)); aerr == nil && errors.Is(serr, os.ErrNotExist) {
			return &State{loc: abs, q: sqliteDialect, now: time.Now}, nil // nothing there: an empty view
		}
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	s := &State{loc: real, q: sqliteDialect, now: time.Now}
	exists, err := checkFile(real)
	if err != nil || !exists {
		return s, err
	}
	s.db, err = sql.Open("sqlite", dsn(real, true))
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			s.db.Close()
		}
	}()
	s.db.SetMaxOpenConns(4)
	// A read-only view cannot migrate: an older schema is read as it is.
	if s.schema, err = schemaVersion(ctx, s.db, real); err != nil {
		return nil, err
	}
	if s.schema < 3 {
		// One campaign a file, in table meta.
		s.q, s.unscoped = sqliteV2Dialect, true
		if err := s.loadMeta(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// onlyOwn refuses a file that records another campaign than the state's
// own: a file that is not a project's holds one campaign.
func (s *State) onlyOwn(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) error {
	var other string
	err := q.QueryRowContext(ctx, `SELECT name FROM campaigns WHERE name <> ? ORDER BY name LIMIT 1`, s.campaign).Scan(&other)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open state %s: %w", s.loc, err)
	}
	return fmt.Errorf("open state %s: it records campaign %q, not %q: %w", s.loc, other, s.campaign, ErrLineage)
}

// pickCampaign sets the read-only view on campaign's record, or on the
// state's only campaign when campaign is "". A state that does not record
// it is an empty view.
func (s *State) pickCampaign(ctx context.Context, campaign string) error {
	rows, err := s.db.QueryContext(ctx, s.q[qPickCampaigns], campaign)
	if err != nil {
		return fmt.Errorf("open state %s: %w", s.loc, err)
	}
	var ids []int64
	var names []string
	for rows.Next() {
		var id int64
		var n string
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return fmt.Errorf("open state %s: %w", s.loc, err)
		}
		ids, names = append(ids, id), append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("open state %s: %w", s.loc, err)
	}
	switch {
	case len(ids) == 0:
		return nil
	case len(ids) > 1:
		return fmt.Errorf("open state %s: it holds %d campaigns (%s): say which, with the campaign file", s.loc, len(ids), strings.Join(names, ", "))
	}
	s.id.Store(ids[0])
	return s.loadMeta(ctx)
}

// fileSigns lists what suggests that the campaign's record in the state
// file at path existed: its lock file, left by an apply that recorded
// something (or an older smsform's lock file of the whole state); when the
// file itself is missing, the files SQLite leaves beside a state; and other
// state files in the same folder that record this campaign (renamed?).
func fileSigns(path, campaign string, exists bool) []string {
	var signs []string
	for _, lock := range []string{path + ".lock", lockPath(path, campaign)} {
		if lockSign(lock) {
			signs = append(signs, fmt.Sprintf("%s exists (an apply or resolve locked a state here)", lock))
		}
	}
	if exists {
		return signs
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + suffix); err == nil {
			signs = append(signs, fmt.Sprintf("%s exists (a file SQLite leaves beside a state)", path+suffix))
		}
	}
	if campaign == "" {
		return signs
	}
	for _, r := range RecordingsIn(context.Background(), filepath.Dir(path), campaign) {
		if r.File == path || r.Err != nil {
			continue
		}
		sign := fmt.Sprintf("%s records campaign %q (lineage %s, serial %d)", r.File, campaign, r.Lineage, r.Serial)
		// The default state of a campaign file beside it: another
		// file of the campaign's name (a copy), or a renamed one.
		for _, ext := range []string{".yaml", ".yml"} {
			f := strings.TrimSuffix(r.File, ".smsstate") + ext
			if _, err := os.Stat(f); err == nil {
				sign += fmt.Sprintf(", the state of %s: if that is another campaign file of the same name, give each campaign its own name", filepath.Base(f))
				break
			}
		}
		signs = append(signs, sign)
	}
	return signs
}

// Recording is a state file of a folder that records a campaign, or could
// not be read (Err) and so may.
type Recording struct {
	File    string
	Lineage string
	Serial  int64
	Err     error
}

// RecordingsIn are the state files (*.smsstate) in dir that record the
// campaign, or could not be read. The folder is read, not globbed (its
// name may hold a pattern's characters: "acme[1]"); only regular files are
// opened (a FIFO would block for good), read only; a state of another
// campaign (an older smsform's file of one campaign) records nothing of
// this one.
func RecordingsIn(ctx context.Context, dir, campaign string) []Recording {
	entries, _ := os.ReadDir(dir)
	var out []Recording
	for _, e := range entries {
		f := filepath.Join(dir, e.Name())
		if !strings.HasSuffix(e.Name(), ".smsstate") {
			continue
		}
		if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
			continue // a link to nothing, a folder, a pipe or a device records nothing
		}
		st, err := openFileReadOnly(ctx, f, campaign, true)
		switch {
		case errors.Is(err, ErrLineage):
			continue
		case err != nil:
			out = append(out, Recording{File: f, Err: err})
			continue
		}
		if st.Campaign() == campaign && st.Lineage() != "" {
			out = append(out, Recording{File: f, Lineage: st.Lineage(), Serial: st.Serial()})
		}
		st.Close()
	}
	return out
}

// LockLeft reports whether the lock file at lockPath tells that a state
// was used beside it (see lockSign): a sign of an earlier state when that
// state file is gone.
func LockLeft(lockPath string) bool { return lockSign(lockPath) }

// lockSign reports whether the lock file tells that a state was used here:
// released by an apply, or held by one that died after creating the
// campaign's record. A holder that died before its first change is no
// sign; nor is a file just created and still empty: another apply starting
// at the same moment (the lock itself then sorts them out). An empty file
// older than a minute is one left by an smsform that emptied lock files on
// release.
func lockSign(lockPath string) bool {
	b, err := readNoFollow(lockPath)
	if err != nil {
		return false
	}
	if len(b) == 0 {
		fi, err := os.Stat(lockPath)
		return err == nil && time.Since(fi.ModTime()) > time.Minute
	}
	var h holder
	return json.Unmarshal(b, &h) != nil || !h.Creating
}
