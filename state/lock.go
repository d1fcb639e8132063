package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// lockPoll is how often Open retries a held lock while LockTimeout allows.
const lockPoll = 50 * time.Millisecond

// holderWait is how long a refused Open waits for the holder to say who
// it is: it writes that a moment after taking the lock.
const holderWait = time.Second

// lockFile is a held lock on a lock file beside a state: flock(2) on
// Unix, LockFileEx on Windows. The kernel drops it when the process dies,
// so a crashed holder never blocks anyone; the file's content only tells
// others who holds it.
//
// A lock file is opened without following symbolic links and must be a
// regular file: a link planted there must not make smsform write into
// whatever it points to. It is never the state file itself: SQLite puts
// POSIX locks on that, and closing any descriptor of a file drops them.
//
// The lock file is named after the state's path; where the kernel allows
// (lockInode), the holder also locks the campaign's byte of the state
// file itself, so that one file reached at two paths (a bind mount) is
// one lock too.
type lockFile struct {
	path   string
	f      *os.File
	runURL string
	// state and campaign name the byte lockInode locked, through inode
	// (nil when none is held: no file yet, or no such lock here).
	state, campaign string
	inode           *os.File
	// sign: the lock file said, before it was taken, that a state had been
	// used here; it is never removed then (see release).
	sign bool
}

// holder is what the lock file says about the process that holds it.
type holder struct {
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	RunURL  string    `json:"run_url,omitempty"`
	// Creating marks a holder that had not created the state yet: should
	// it die there, its lock file is no sign that a state existed.
	Creating bool `json:"creating,omitempty"`
	// Released is when the last holder let go; no one holds the lock then.
	Released time.Time `json:"released,omitzero"`
}

// tryLock takes the lock at path if it is free. It reports false when
// another process holds it. The file is created if missing; a lock file
// that was removed or replaced while this process waited for it is not
// the lock any more, so it is opened again.
func tryLock(path string) (*os.File, bool, error) {
	for {
		f, err := openLockFile(path)
		if err != nil {
			return nil, false, err
		}
		ok, err := flockTry(f)
		if err != nil || !ok {
			f.Close()
			return nil, false, err
		}
		held, err1 := f.Stat()
		now, err2 := os.Lstat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, true, nil
		}
		f.Close() // the file was removed or replaced under us: try again
	}
}

// openLockFile opens (creating it if need be) the lock file at path,
// refusing a symbolic link or anything but a regular file.
func openLockFile(path string) (*os.File, error) {
	f, err := openNoFollow(path)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("lock file %s is a symbolic link: smsform never follows one there; remove it (no smsform ever makes one)", path)
		}
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("lock file %s is not a regular file: remove it", path)
		}
		return nil, err
	}
	return f, nil
}

// acquireLock takes campaign's lock of the state file real: its lock file,
// then its byte of the file itself (see lockInode). A byte held through
// another path to the same file is a held lock like the other, waited for
// within opts.LockTimeout; its holder's lock file is beside that other
// path, so the error cannot name the holder.
func acquireLock(ctx context.Context, real, campaign string, opts Options) (*lockFile, error) {
	path := lockPath(real, campaign)
	timeout, runURL := opts.LockTimeout, opts.RunURL
	deadline := time.Now().Add(timeout)
	for waited := false; ; waited = true {
		sign := lockSign(path)
		f, ok, err := tryLock(path)
		if err != nil {
			return nil, fmt.Errorf("lock state: %w", err)
		}
		elsewhere := false
		if ok {
			lk := &lockFile{path: path, f: f, runURL: runURL, sign: sign, state: real, campaign: campaign}
			held, err := lk.lockInode()
			if err != nil || !held {
				// Taken only to be given back: a lock file this made is
				// removed, so it is no sign of a state used here.
				lk.release(true)
				if err != nil {
					return nil, fmt.Errorf("lock state: %w", err)
				}
				ok, elsewhere = false, true
			}
			if ok {
				if err := lk.writeHolder(false); err != nil {
					lk.release(false)
					return nil, fmt.Errorf("lock state: %w", err)
				}
				return lk, nil
			}
		}
		if timeout <= 0 || !time.Now().Before(deadline) {
			if elsewhere {
				return nil, &LockedError{Path: real + ", through another path to the same file (mounted twice?)"}
			}
			return nil, lockedError(path, holderWait)
		}
		if !waited && opts.LockWait != nil {
			opts.LockWait(timeout)
		}
		t := time.NewTimer(min(lockPoll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock state: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// lockInode locks the campaign's byte of the state file, unless it is held
// already. It reports false when another holds it (through another path,
// since this path's lock file is held). A state file made after the lock
// was taken (State.createFile) is locked then.
func (lk *lockFile) lockInode() (bool, error) {
	if lk.inode != nil {
		return true, nil
	}
	f, ok, err := lockInode(lk.state, lk.campaign)
	lk.inode = f
	return ok, err
}

// writeHolder says, in the held lock file, who holds it.
func (lk *lockFile) writeHolder(creating bool) error {
	host, _ := os.Hostname()
	b, err := json.Marshal(holder{Host: host, PID: os.Getpid(), Started: time.Now().UTC().Truncate(time.Second), RunURL: lk.runURL, Creating: creating})
	if err != nil {
		return err
	}
	return lk.rewrite(b)
}

// rewrite replaces the lock file's content through the held descriptor,
// never by opening its path again.
func (lk *lockFile) rewrite(b []byte) error {
	if err := lk.f.Truncate(0); err != nil {
		return err
	}
	_, err := lk.f.WriteAt(append(b, '\n'), 0)
	return err
}

// release lets the lock go. A lock file beside a state that records
// something stays, saying when it was released: a later reader never names
// a process that no longer holds the lock, and a lock file beside a missing
// state tells that a state was used there. With remove (the campaign
// recorded nothing), the file is removed while still held, unless it was
// such a sign before it was taken; a process waiting for it finds it
// replaced and takes the new one (tryLock).
func (lk *lockFile) release(remove bool) error {
	if lk.f == nil {
		return nil
	}
	var err error
	if remove && !lk.sign {
		err = os.Remove(lk.path)
	} else {
		b, _ := json.Marshal(holder{Released: time.Now().UTC().Truncate(time.Second)})
		err = lk.rewrite(b)
	}
	if lk.inode != nil {
		err = errors.Join(err, unlockInode(lk.inode, lk.campaign))
		lk.inode = nil
	}
	err = errors.Join(err, flockRelease(lk.f), lk.f.Close())
	lk.f = nil
	return err
}

// lockedError reads who holds the lock. The holder may not have written its
// record yet, or may be rewriting it: that moment is waited for, and a
// record still partial after it is reported as unknown.
func lockedError(path string, wait time.Duration) error {
	e := &LockedError{Path: path}
	for deadline := time.Now().Add(wait); ; time.Sleep(lockPoll) {
		if b, err := readNoFollow(path); err == nil {
			var h holder
			if json.Unmarshal(b, &h) == nil && h.PID != 0 {
				e.Host, e.PID, e.Started, e.RunURL = h.Host, h.PID, h.Started, h.RunURL
				return e
			}
		}
		if !time.Now().Before(deadline) {
			return e
		}
	}
}

// readNoFollow reads a lock file, never through a symbolic link.
func readNoFollow(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return os.ReadFile(path)
}
