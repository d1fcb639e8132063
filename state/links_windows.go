//go:build windows

package state

import (
	"os"

	"golang.org/x/sys/windows"
)

// linkCount is how many names (hard links) the open file f has.
func linkCount(f *os.File, _ os.FileInfo) (uint64, error) {
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &d); err != nil {
		return 0, err
	}
	return uint64(d.NumberOfLinks), nil
}
