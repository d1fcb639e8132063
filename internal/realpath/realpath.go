// Package realpath makes paths absolute the way the operating system reads
// them. filepath.Abs and filepath.Join clean a path as text first, so
// "link/../state.smsstate" becomes "state.smsstate"; the system instead
// follows link and then goes up from where it leads. Two spellings of one
// file must name one file (one state, one lock), so the paths that decide a
// state's identity or a project's folder are made absolute here and their
// links resolved by filepath.EvalSymlinks, which takes ".." after a link as
// the system does.
package realpath

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Abs is path made absolute against the working folder without cleaning it
// as text where that would change which file it names (a ".." element).
func Abs(path string) (string, error) {
	if filepath.IsAbs(path) {
		return path, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return Join(wd, path), nil
}

// Join is filepath.Join(dir, rel), but keeps rel's ".." elements for the
// system to follow after dir's links when there are any.
func Join(dir, rel string) string {
	if !slices.Contains(strings.FieldsFunc(rel, isSeparator), "..") {
		return filepath.Join(dir, rel)
	}
	return strings.TrimRight(dir, string(filepath.Separator)) + string(filepath.Separator) + rel
}

// Split is filepath.Split without cleaning: the folder part keeps its ".."
// elements, so that resolving it finds the folder the system would.
func Split(path string) (dir, file string) {
	i := strings.LastIndexFunc(path, isSeparator)
	if i < 0 {
		return ".", path
	}
	if i == 0 {
		return path[:1], path[1:]
	}
	return path[:i], path[i+1:]
}

// Dir is the folder the file at path really sits in: path made absolute
// and its links resolved, the file's own included, so that a file reached
// through a link (itself one, or in a linked folder) is where the link
// leads. A file that does not resolve (missing, or a link to nothing)
// gives the folder part of path, as [Split] does, for the caller to
// resolve as a folder.
func Dir(path string) (string, error) {
	abs, err := Abs(path)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return filepath.Dir(real), nil
	}
	dir, _ := Split(abs)
	return dir, nil
}

func isSeparator(r rune) bool { return os.IsPathSeparator(uint8(r)) }
