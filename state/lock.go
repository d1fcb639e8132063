package state

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/gofrs/flock"
)

// lockPoll is how often Open retries a held lock while LockTimeout allows.
const lockPoll = 50 * time.Millisecond

// holderWait is how long a refused Open waits for the holder to say who
// it is: it writes that a moment after taking the lock.
const holderWait = time.Second

// lockFile is a held flock(2) lock. The kernel drops it when the process
// dies, so a crashed holder never blocks anyone; the file's content only
// tells others who holds it.
type lockFile struct {
	path   string
	fl     *flock.Flock
	runURL string
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

func acquireLock(ctx context.Context, path string, opts Options) (*lockFile, error) {
	timeout, runURL := opts.LockTimeout, opts.RunURL
	fl := flock.New(path, flock.SetPermissions(0o600))
	deadline := time.Now().Add(timeout)
	for waited := false; ; waited = true {
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("lock state: %w", err)
		}
		if ok {
			lk := &lockFile{path: path, fl: fl, runURL: runURL}
			if err := lk.writeHolder(false); err != nil {
				fl.Unlock()
				return nil, fmt.Errorf("lock state: %w", err)
			}
			return lk, nil
		}
		if timeout <= 0 || !time.Now().Before(deadline) {
			fl.Close()
			return nil, lockedError(path, holderWait)
		}
		if !waited && opts.LockWait != nil {
			opts.LockWait(timeout)
		}
		t := time.NewTimer(min(lockPoll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			fl.Close()
			return nil, fmt.Errorf("lock state: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func (lk *lockFile) writeHolder(creating bool) error {
	host, _ := os.Hostname()
	b, err := json.Marshal(holder{Host: host, PID: os.Getpid(), Started: time.Now().UTC().Truncate(time.Second), RunURL: lk.runURL, Creating: creating})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(lk.path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// release replaces the holder record with the moment of release before
// unlocking, so a later reader never names a process that no longer holds
// the lock, and a lock file beside a missing state tells that a state was
// used there. The file itself stays:
// removing a lock file races with others that have it open.
func (lk *lockFile) release() error {
	b, _ := json.Marshal(holder{Released: time.Now().UTC().Truncate(time.Second)})
	if err := os.WriteFile(lk.path, append(b, '\n'), 0o600); err != nil && !os.IsNotExist(err) {
		lk.fl.Unlock()
		return err
	}
	return lk.fl.Unlock()
}

// lockedError reads who holds the lock. The holder may not have written its
// record yet, or may be rewriting it: that moment is waited for, and a
// record still partial after it is reported as unknown.
func lockedError(path string, wait time.Duration) error {
	e := &LockedError{Path: path}
	for deadline := time.Now().Add(wait); ; time.Sleep(lockPoll) {
		if b, err := os.ReadFile(path); err == nil {
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
