//go:build windows

package state

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// openNoFollow opens path for reading and writing, creating it; a symbolic
// link (a reparse point) is opened as itself, never followed, and refused.
// The file is shared for deletion too (os.OpenFile does not share it), so
// that release can remove a lock file it still holds, as on Unix.
func openNoFollow(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link", path)
	}
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_ALWAYS, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(h), path)
	// A link made between the check above and the open is caught here.
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s is a symbolic link", path)
	}
	return f, nil
}

// The lock is a byte far past the end of the file: LockFileEx's locks are
// mandatory, and a lock on the holder's record itself would keep others from
// reading who holds it.
const lockOffsetHigh = 0x7fffffff

// flockTry takes an exclusive LockFileEx lock on f without waiting.
func flockTry(f *os.File) (bool, error) {
	ol := windows.Overlapped{OffsetHigh: lockOffsetHigh}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return err == nil, err
}

func flockRelease(f *os.File) error {
	ol := windows.Overlapped{OffsetHigh: lockOffsetHigh}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
