package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("failure leaves the old file and no temporary", func(t *testing.T) {
		boom := errors.New("boom")
		err := Write(path, 0o600, func(w io.Writer) error {
			fmt.Fprint(w, "half")
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
		if got, _ := os.ReadFile(path); string(got) != "old" {
			t.Fatalf("content = %q, want old", got)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Fatalf("dir has %d entries, want 1", len(entries))
		}
	})

	t.Run("success replaces with the mode asked", func(t *testing.T) {
		if err := Write(path, 0o600, func(w io.Writer) error {
			_, err := fmt.Fprint(w, "new")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if string(got) != "new" || fi.Mode().Perm() != 0o600 {
			t.Fatalf("content %q mode %v, want new 0600", got, fi.Mode().Perm())
		}
	})
}
