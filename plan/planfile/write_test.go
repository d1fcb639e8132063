package planfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smsform/smsform/plan"
)

// TestSaveInMissingFolder: a plan or manifest whose folder is missing, or
// is a file, is refused in words that name the folder and say what to do,
// never the name of the temporary file the write goes through.
func TestSaveInMissingFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := func() *Saved { return &Saved{FormatVersion: plan.FormatVersion, ID: "x", Plan: &plan.Plan{}} }
	tests := []struct {
		name, path, want, hint string
	}{
		{"missing folder", filepath.Join(dir, "nodir", "x.plan"), "folder " + filepath.Join(dir, "nodir") + " does not exist", "create the folder " + filepath.Join(dir, "nodir") + " first"},
		{"missing folders", filepath.Join(dir, "a", "b", "x.plan"), "folder " + filepath.Join(dir, "a", "b") + " does not exist", "create the folder"},
		{"folder is a file", filepath.Join(file, "x.plan"), file + " is a file, not a folder", "in a folder that exists"},
		{"a file on the way", filepath.Join(file, "b", "x.plan"), file + " is a file, not a folder", "in a folder that exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := map[string]error{
				"CheckOverwrite": CheckOverwrite(tt.path),
				"Save":           Save(tt.path, saved()),
				"WriteManifest":  WriteManifest(filepath.Dir(tt.path), "v", nil),
			}
			for what, err := range errs {
				var fe *WriteFolderError
				if !errors.As(err, &fe) {
					t.Fatalf("%s: %v (%T), want a *WriteFolderError", what, err, err)
				}
				if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), ".tmp-") || strings.Contains(err.Error(), "open ") {
					t.Errorf("%s: %q, want %q and no temporary file", what, err, tt.want)
				}
				if !strings.Contains(fe.Hint(), tt.hint) {
					t.Errorf("%s: hint %q, want %q", what, fe.Hint(), tt.hint)
				}
			}
		})
	}
}

// TestWriteErrorHidesTemporaryFile: whatever fails while a file is written
// through its temporary file is said of the file itself.
func TestWriteErrorHidesTemporaryFile(t *testing.T) {
	path := filepath.Join("plans", "x.plan")
	tmp := filepath.Join("plans", ".x.plan.tmp-2374397679")
	tests := []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "open", Path: tmp, Err: syscall.EACCES}, "folder plans may not be written to (permission denied)"},
		{&fs.PathError{Op: "open", Path: tmp, Err: syscall.EROFS}, "cannot create a file in folder plans: " + syscall.EROFS.Error()},
		{&fs.PathError{Op: "write", Path: tmp, Err: syscall.ENOSPC}, "write: " + syscall.ENOSPC.Error()},
		{&os.LinkError{Op: "rename", Old: tmp, New: path, Err: syscall.EXDEV}, "rename: " + syscall.EXDEV.Error()},
	}
	for _, tt := range tests {
		err := writeError(path, tt.err)
		if err.Error() != tt.want {
			t.Errorf("writeError(%v) = %q, want %q", tt.err, err, tt.want)
		}
		if !errors.Is(err, tt.err.(interface{ Unwrap() error }).Unwrap()) {
			t.Errorf("writeError(%v) does not wrap the system's error", tt.err)
		}
	}
	other := &fs.PathError{Op: "open", Path: "elsewhere", Err: syscall.EACCES}
	if err := writeError(path, other); err != other {
		t.Errorf("an error of another file became %v", err)
	}
}
