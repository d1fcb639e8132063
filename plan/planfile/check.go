package planfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/klauspost/compress/gzip"
)

// ErrCampaignChanged is wrapped by the error CheckFiles returns for a file
// that changed or vanished since the plan was made.
var ErrCampaignChanged = errors.New("campaign changed after plan")

// ErrFileList is wrapped by the error CheckFiles returns when the plan's
// list of files is not the list of files the campaign reads: smsform plan
// --out lists every one, so the plan was edited (or made by an smsform that
// read other files).
var ErrFileList = errors.New("the plan's list of files is not what the campaign reads")

// CheckFiles checks that the plan lists exactly the files the campaign
// reads (reads: campaign.Campaign.Files, of the campaign as loaded now),
// then that none of them changed or vanished since the plan was made. The
// first difference is the error. Reading stops when ctx is done.
func (s *Saved) CheckFiles(ctx context.Context, reads []string) error {
	listed := make(map[string]bool, len(s.Files))
	for _, f := range s.Files {
		listed[samePath(f.Path)] = true
	}
	wanted := make(map[string]bool, len(reads))
	for _, p := range reads {
		wanted[samePath(p)] = true
		if !listed[samePath(p)] {
			return fmt.Errorf("%w: it does not list %s, which the campaign reads", ErrFileList, p)
		}
	}
	for _, f := range s.Files {
		if !wanted[samePath(f.Path)] {
			return fmt.Errorf("%w: it lists %s, which the campaign does not read", ErrFileList, f.Path)
		}
	}
	for _, f := range s.Files {
		sum, err := hashFile(ctx, f.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return &goneError{f.Path}
		}
		if err != nil {
			return err
		}
		if sum != f.SHA256 {
			if what := keysChanged(f.Keys, f.Path); what != "" {
				return fmt.Errorf("%w: %s: %s", ErrCampaignChanged, f.Path, what)
			}
			return fmt.Errorf("%w: %s", ErrCampaignChanged, f.Path)
		}
	}
	return nil
}

// goneError says a file the plan was made from is not where the plan says
// it is: it is ErrCampaignChanged and fs.ErrNotExist.
type goneError struct{ path string }

func (e *goneError) Error() string   { return fmt.Sprintf("%v: %s is gone", ErrCampaignChanged, e.path) }
func (e *goneError) Unwrap() []error { return []error{ErrCampaignChanged, fs.ErrNotExist} }

// samePath is what two spellings of one path have in common: the absolute,
// cleaned path (or the cleaned one when it has no absolute form).
func samePath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// ErrNotOverwritable is wrapped by the error CheckOverwrite returns.
var ErrNotOverwritable = errors.New("refusing to write the plan over a file that is not a plan file")

// CheckOverwrite refuses a path that plan --out must not write to: an
// existing file that is not an smsform plan file (a state, a campaign, a
// list, anything else), or something that is not a regular file. It judges
// by content, not by name: a plan file is gzip whose JSON begins as Save
// writes it. A path that does not exist is fine, in a folder that does (a
// missing folder is a [*WriteFolderError]).
func CheckOverwrite(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		if ferr := checkFolder(path); ferr != nil {
			return fmt.Errorf("save plan %s: %w", path, ferr)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotOverwritable, path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is a %s", ErrNotOverwritable, path, kind(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotOverwritable, path, err)
	}
	defer f.Close()
	if !hasPlanHeader(f) {
		return fmt.Errorf("%w: %s exists and is not an smsform plan file", ErrNotOverwritable, path)
	}
	return nil
}

// planHeader is how every plan file's JSON begins (Save encodes Saved,
// whose first field this is).
const planHeader = `{"format_version":`

// hasPlanHeader reports whether r is gzip whose content begins as a plan
// file's: a small read, whatever the file holds.
func hasPlanHeader(r io.Reader) bool {
	zr, err := gzip.NewReader(bufio.NewReader(io.LimitReader(r, 64<<10)))
	if err != nil {
		return false
	}
	head := make([]byte, len(planHeader))
	if _, err := io.ReadFull(zr, head); err != nil {
		return false
	}
	return bytes.Equal(head, []byte(planHeader))
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "folder"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "file that is not a regular file"
}
