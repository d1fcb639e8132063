//go:build linux

package state

import (
	"errors"
	"hash/fnv"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The lock file is named after the state's path, so one file reached at two
// paths that resolving cannot join (a file bind-mounted at a second place,
// or mounted into two containers) would have two lock files. The lock on
// the state file's own inode closes that gap: a byte per campaign, far past
// anything SQLite locks (its bytes start at 1 GiB and span 512), taken with
// an open file description lock (F_OFD_SETLK). Such a lock belongs to the
// descriptor that took it, as flock's does, not to the process as POSIX
// locks do: it conflicts with a second descriptor of the same process too,
// it never meets SQLite's locks, on other bytes (POSIX locks, modernc's
// default, or OFD ones with MODERNC_SQLITE_OFD_LOCK), and the kernel drops
// it when the process dies. Nothing else in smsform locks the state file:
// flock is on lock files only. A byte, not flock on the whole
// file, so that the campaigns of a project's file still run at once.
const (
	inodeLockBase = 1 << 62
	inodeLockSpan = 1 << 60
)

// inodeLockByte is campaign's byte in the state file.
func inodeLockByte(campaign string) int64 {
	h := fnv.New64a()
	h.Write([]byte(campaign))
	return inodeLockBase + int64(h.Sum64()%inodeLockSpan)
}

// fileID is a file's device and inode.
type fileID struct{ dev, ino uint64 }

// parked holds the descriptors of the state files this process locked,
// each free to lock again, never closed: closing any descriptor of a file
// drops every POSIX lock this process holds on it, and SQLite's own locks
// on the state (another campaign's apply in this process, a read-only
// view) would go with it. A parked descriptor keeps its inode from being
// reused, so its device and inode keep naming that file.
var parked = struct {
	sync.Mutex
	free map[fileID][]*os.File
}{free: map[fileID][]*os.File{}}

func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), st.Ino}, true
}

// openState is a descriptor of the state file at path, open for writing
// (a write lock needs it): a parked one of that file, else a new one.
func openState(path string) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil {
		if id, ok := idOf(fi); ok {
			parked.Lock()
			fs := parked.free[id]
			if n := len(fs); n > 0 {
				f := fs[n-1]
				parked.free[id] = fs[:n-1]
				parked.Unlock()
				return f, nil
			}
			parked.Unlock()
		}
	}
	return os.OpenFile(path, os.O_RDWR, 0)
}

// park keeps f, unlocked, for the next lock of its file.
func park(f *os.File) {
	fi, err := f.Stat()
	id, ok := idOf(fi)
	if err != nil || !ok {
		id = fileID{} // still never closed
	}
	parked.Lock()
	parked.free[id] = append(parked.free[id], f)
	parked.Unlock()
}

// lockInode takes campaign's byte on the state file at path without
// waiting. It reports false when another descriptor holds it, and true
// with no descriptor when there is nothing to lock: no file yet (the first
// change makes it: see State.createFile), or a kernel without these locks
// (before Linux 3.15), where the lock file alone stands.
func lockInode(path, campaign string) (*os.File, bool, error) {
	f, err := openState(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: inodeLockByte(campaign), Len: 1}
	for {
		err = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return f, true, nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		park(f)
		return nil, false, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOLCK), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		// No such lock here (an old kernel, NFS without its lock
		// daemon, some FUSE file systems): the lock file alone stands,
		// as it did before.
		park(f)
		return nil, true, nil
	}
	park(f)
	return nil, false, err
}

// unlockInode lets campaign's byte go and parks f. A descriptor whose
// byte could not be let go is kept out of the pool (and still never
// closed): reused, it would hold the lock for a campaign that gave it up.
func unlockInode(f *os.File, campaign string) error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: inodeLockByte(campaign), Len: 1}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	if err == nil {
		park(f)
	} else {
		leaked.Lock()
		leaked.files = append(leaked.files, f)
		leaked.Unlock()
	}
	return err
}

// leaked keeps the descriptors unlockInode could not park, so that no
// finalizer closes them (see parked).
var leaked struct {
	sync.Mutex
	files []*os.File
}

// inodeLocked reports whether another open file description holds
// campaign's byte of the state file at path (see lockInode): an apply, a
// resolve or a migration of that campaign is running. known is false when
// this cannot be told (no file, a kernel or file system without these
// locks): the caller then assumes one may be running. It takes no lock,
// and keeps its descriptor parked (closing one would drop SQLite's locks
// of this process on the file).
func inodeLocked(path, campaign string) (held, known bool, err error) {
	f, err := openState(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	defer park(f)
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: inodeLockByte(campaign), Len: 1}
	for {
		err = unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return lk.Type != unix.F_UNLCK, true, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOLCK), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		return false, false, nil
	}
	return false, false, err
}
