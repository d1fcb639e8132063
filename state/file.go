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

// openFile is Open for a state file.
func openFile(ctx context.Context, path string, opts Options) (_ *State, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	dir := filepath.Dir(abs)
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open state %s: folder %s does not exist", path, dir)
		}
		return nil, fmt.Errorf("open state %s: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("open state %s: %s is not a folder", path, dir)
	}

	// Signs are looked for before the lock, whose file is one of them.
	// Should another apply be creating the state right now, the lock
	// below says so, which is the better message.
	exists, err := checkFile(abs)
	if err != nil {
		return nil, err
	}
	var signs []string
	if !exists && !opts.NewState {
		signs = append(fileSigns(abs, opts.Campaign), opts.Signs...)
	}

	lk, err := acquireLock(ctx, abs+".lock", opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lk.release()
		}
	}()

	s := &State{loc: abs, q: sqliteDialect, now: time.Now, lock: lk, atClose: closeSQLite}
	if exists, err = checkFile(abs); err != nil {
		return nil, err
	}
	if !exists {
		if len(signs) > 0 {
			return nil, &EarlierStateError{Loc: abs, Campaign: opts.Campaign, Signs: signs}
		}
		if err := lk.writeHolder(true); err != nil {
			return nil, fmt.Errorf("lock state %s: %w", path, err)
		}
		if err := create(ctx, abs, opts.Campaign, s.now()); err != nil {
			return nil, fmt.Errorf("create state %s: %w", path, err)
		}
		if err := lk.writeHolder(false); err != nil {
			return nil, fmt.Errorf("lock state %s: %w", path, err)
		}
	}

	s.db, err = sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			s.db.Close()
		}
	}()
	s.db.SetMaxOpenConns(4)
	if err := migrate(ctx, s.db, abs); err != nil {
		return nil, err
	}
	s.schema = SchemaVersion
	if err := s.loadMeta(ctx); err != nil {
		return nil, err
	}
	// WAL: a commit appends to one file and fsyncs it once, where a
	// rollback journal needs three or four fsyncs; readers are not blocked
	// by the writer. Close switches back so the file at rest stands alone.
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	} else if mode != "wal" {
		return nil, fmt.Errorf("open state %s: cannot use WAL journal (got %q)", path, mode)
	}
	if opts.Campaign != "" && s.campaign != opts.Campaign {
		if s.campaign != "" {
			return nil, fmt.Errorf("open state %s: it records campaign %q, not %q: %w", path, s.campaign, opts.Campaign, ErrLineage)
		}
		// A state created without a name adopts the first one given.
		if _, err := s.db.ExecContext(ctx, `UPDATE meta SET campaign = ?, serial = serial + 1 WHERE id = 1`, opts.Campaign); err != nil {
			return nil, fmt.Errorf("open state %s: %w", path, err)
		}
		s.campaign = opts.Campaign
		s.serial.Add(1)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	if s.w, err = newWriter(ctx, s, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	return s, nil
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
func openFileReadOnly(ctx context.Context, path, campaign string) (_ *State, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	s := &State{loc: abs, q: sqliteDialect, now: time.Now}
	exists, err := checkFile(abs)
	if err != nil || !exists {
		return s, err
	}
	s.db, err = sql.Open("sqlite", dsn(abs, true))
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
	if s.schema, err = schemaVersion(ctx, s.db, abs); err != nil {
		return nil, err
	}
	if err := s.loadMeta(ctx); err != nil {
		return nil, err
	}
	if campaign != "" && s.campaign != "" && s.campaign != campaign {
		return nil, fmt.Errorf("open state %s: it records campaign %q, not %q: %w", path, s.campaign, campaign, ErrLineage)
	}
	return s, nil
}

// fileSigns lists what suggests that the missing state file at path
// existed: the files SQLite and the lock leave beside a state, and other
// state files in the same folder that record this campaign (renamed?).
func fileSigns(path, campaign string) []string {
	var signs []string
	for _, suffix := range []string{".lock", "-wal", "-shm", "-journal"} {
		if suffix == ".lock" && !lockSign(path+suffix) {
			continue
		}
		if _, err := os.Stat(path + suffix); err == nil {
			what := "a file SQLite leaves beside a state"
			if suffix == ".lock" {
				what = "an apply or resolve locked a state here"
			}
			signs = append(signs, fmt.Sprintf("%s exists (%s)", path+suffix, what))
		}
	}
	if campaign == "" {
		return signs
	}
	others, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.smsstate"))
	for _, other := range others {
		if other == path || strings.HasPrefix(filepath.Base(other), ".") {
			continue
		}
		st, err := openFileReadOnly(context.Background(), other, "")
		if err != nil {
			continue
		}
		if st.Campaign() == campaign {
			signs = append(signs, fmt.Sprintf("%s records campaign %q (lineage %s, serial %d)", other, campaign, st.Lineage(), st.Serial()))
		}
		st.Close()
	}
	return signs
}

// lockSign reports whether the lock file tells that a state was used here:
// released by an apply, or held by one that died after creating the state.
// A holder that died while creating it is no sign; nor is a file just
// created and still empty: another apply starting at the same moment (the
// lock itself then sorts them out). An empty file older than a minute is one
// left by an smsform that emptied lock files on release.
func lockSign(lockPath string) bool {
	b, err := os.ReadFile(lockPath)
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
