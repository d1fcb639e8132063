// Package atomicfile writes files so that a crash at any instant leaves
// either the old file or the whole new one, never a torn mix: a temporary
// file in the same folder is written, synced, closed and renamed over the
// target, and the folder is synced so the rename itself survives.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with what write produces, with the given mode. On error
// the temporary file is removed and path is untouched.
func Write(path string, mode os.FileMode, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	bw := bufio.NewWriter(tmp)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return Rename(tmp.Name(), path)
}

// Rename moves tmp, a complete file already synced to disk, over path in the
// same folder, and syncs the folder so that the rename itself survives a
// crash. It is for files that another library writes (a SQLite database),
// where [Write] cannot be used.
func Rename(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// Link puts the finished file tmp at path only if nothing is there yet,
// atomically (a hard link never replaces a file), then removes tmp and
// syncs the folder. It reports false, and removes tmp, when path already
// exists: someone else made it first.
func Link(tmp, path string) (bool, error) {
	err := os.Link(tmp, path)
	os.Remove(tmp)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, syncDir(filepath.Dir(path))
}
