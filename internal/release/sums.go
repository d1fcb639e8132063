package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/smsform/smsform/internal/atomicfile"
)

// sumsFile lists every release file's SHA-256, in the format sha256sum -c
// reads: "HASH  NAME", one a line, sorted by name.
const sumsFile = "SHA256SUMS"

func writeSums(dir string, names []string) error {
	names = slices.Sorted(slices.Values(names))
	var lines []byte
	for _, name := range names {
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		lines = fmt.Appendf(lines, "%s  %s\n", sum, name)
	}
	return atomicfile.Write(filepath.Join(dir, sumsFile), 0o644, func(w io.Writer) error {
		_, err := w.Write(lines)
		return err
	})
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
