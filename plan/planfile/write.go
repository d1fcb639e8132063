package planfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// WriteFolderError is a file that cannot be written because of the folder it
// goes in: the folder does not exist, is not a folder, or may not be
// written to. It names the file and its folder, never the temporary file a
// crash-safe write goes through.
type WriteFolderError struct {
	Dir string // the folder, as the path given spells it
	Err error  // what the system said: fs.ErrNotExist, syscall.ENOTDIR, fs.ErrPermission, …
}

func (e *WriteFolderError) Error() string {
	switch {
	case errors.Is(e.Err, fs.ErrNotExist):
		return fmt.Sprintf("folder %s does not exist", e.Dir)
	case errors.Is(e.Err, syscall.ENOTDIR):
		return fmt.Sprintf("%s is a file, not a folder", e.Dir)
	case errors.Is(e.Err, fs.ErrPermission):
		return fmt.Sprintf("folder %s may not be written to (permission denied)", e.Dir)
	}
	return fmt.Sprintf("cannot create a file in folder %s: %v", e.Dir, e.Err)
}

func (e *WriteFolderError) Unwrap() error { return e.Err }

// Hint says what to do about it.
func (e *WriteFolderError) Hint() string {
	switch {
	case errors.Is(e.Err, fs.ErrNotExist):
		return fmt.Sprintf("create the folder %s first, or give a path in a folder that exists", e.Dir)
	case errors.Is(e.Err, syscall.ENOTDIR):
		return "give a path in a folder that exists"
	case errors.Is(e.Err, fs.ErrPermission):
		return "give a path in a folder you may write to"
	}
	return ""
}

// checkFolder returns a *WriteFolderError when path's folder is missing or is
// not a folder, so that a file that cannot be written is refused before
// the work of making it.
func checkFolder(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &WriteFolderError{Dir: dir, Err: fs.ErrNotExist}
	case errors.Is(err, syscall.ENOTDIR), err == nil && !fi.IsDir():
		return &WriteFolderError{Dir: fileOnPath(dir), Err: syscall.ENOTDIR}
	}
	return nil // any other trouble shows when the file is written
}

// fileOnPath is the part of dir that is a file rather than a folder (for
// a/b/c where a/b is a file, a/b), or dir when none is found.
func fileOnPath(dir string) string {
	for d := dir; ; {
		if fi, err := os.Stat(d); err == nil && !fi.IsDir() {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return dir
		}
		d = up
	}
}

// writeError words err, from writing path with atomicfile, without the
// name of the temporary file it went through (.NAME.tmp-123456, which
// means nothing to whoever reads the error): a temporary file that could
// not be created is its folder's problem, any other failure is path's.
func writeError(path string, err error) error {
	temp := func(p string) bool {
		return filepath.Dir(p) == filepath.Dir(path) && strings.HasPrefix(filepath.Base(p), "."+filepath.Base(path)+".tmp-")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && temp(pe.Path) {
		if pe.Op == "open" {
			dir := filepath.Dir(path)
			if errors.Is(pe.Err, syscall.ENOTDIR) {
				dir = fileOnPath(dir)
			}
			return &WriteFolderError{Dir: dir, Err: pe.Err}
		}
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) && temp(le.Old) {
		return fmt.Errorf("%s: %w", le.Op, le.Err)
	}
	return err
}
