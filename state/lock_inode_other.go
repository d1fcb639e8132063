//go:build !linux

package state

import "os"

// lockInode locks nothing here: only Linux has the open file description
// locks that lock a byte of the state file beside SQLite's own locks
// (lock_inode_linux.go). macOS and the BSDs have no such lock, and their
// flock may meet POSIX locks in one table (FreeBSD's does), so a lock on
// the state file could fight SQLite's; on Windows a lock is mandatory. The
// lock file, named after the state's real path, is the lock there.
func lockInode(path, campaign string) (*os.File, bool, error) { return nil, true, nil }

func unlockInode(f *os.File, campaign string) error { return nil }

// inodeLocked cannot tell here whether campaign's lock is held (see
// lock_inode_linux.go): known is false.
func inodeLocked(path, campaign string) (held, known bool, err error) { return false, false, nil }
