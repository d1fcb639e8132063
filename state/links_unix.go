//go:build !windows

package state

import (
	"os"
	"syscall"
)

// linkCount is how many names (hard links) the open file f has.
func linkCount(f *os.File, fi os.FileInfo) (uint64, error) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink), nil
	}
	return 1, nil
}
