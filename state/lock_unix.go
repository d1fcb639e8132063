//go:build !windows

package state

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens path for reading and writing, creating it, and fails
// (ELOOP) when it is a symbolic link.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
}

// flockTry takes an exclusive flock(2) on f without waiting.
func flockTry(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		}
		return false, err
	}
}

func flockRelease(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
