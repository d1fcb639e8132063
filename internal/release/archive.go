package main

import (
	"archive/tar"
	"archive/zip"
	"compress/flate"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// entry is one file of an archive, held whole: a release holds a binary
// and a page of text.
type entry struct {
	name string // relative to the archive's folder, slash-separated
	mode fs.FileMode
	data []byte
}

// archive is the content of one release archive: its entries inside one
// folder, all stamped with one time.
type archive struct {
	dir     string // the folder every entry is in: smsform_v0.3.0_linux_amd64
	mtime   time.Time
	entries []entry
}

// sorted is the archive's entries in name order, whatever order they came
// in: the archive's bytes must not depend on how they were gathered.
func (a archive) sorted() []entry {
	es := slices.Clone(a.entries)
	slices.SortFunc(es, func(x, y entry) int { return strings.Compare(x.name, y.name) })
	return es
}

// writeTarGz writes a as a gzip-compressed tar: no owner but root, fixed
// modes, the commit's time on every entry, and a gzip header without a
// name or time.
func (a archive) writeTarGz(w io.Writer) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	hdr := func(name string, mode fs.FileMode, size int64, typ byte) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: int64(mode.Perm()), Size: size, ModTime: a.mtime,
			Uid: 0, Gid: 0, Uname: "root", Gname: "root", Format: tar.FormatUSTAR}
	}
	if err := tw.WriteHeader(hdr(a.dir+"/", 0o755, 0, tar.TypeDir)); err != nil {
		return err
	}
	for _, e := range a.sorted() {
		if err := tw.WriteHeader(hdr(path.Join(a.dir, e.name), e.mode, int64(len(e.data)), tar.TypeReg)); err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// writeZip writes a as a zip, for Windows: the same fixed order, modes and
// time (in UTC, so the MS-DOS time fields do not depend on the machine's
// zone).
func (a archive) writeZip(w io.Writer) error {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestCompression)
	})
	dir := &zip.FileHeader{Name: a.dir + "/", Method: zip.Store, Modified: a.mtime.UTC()}
	dir.SetMode(fs.ModeDir | 0o755)
	if _, err := zw.CreateHeader(dir); err != nil {
		return err
	}
	for _, e := range a.sorted() {
		h := &zip.FileHeader{Name: path.Join(a.dir, e.name), Method: zip.Deflate, Modified: a.mtime.UTC()}
		h.SetMode(e.mode.Perm())
		f, err := zw.CreateHeader(h)
		if err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
		if _, err := f.Write(e.data); err != nil {
			return err
		}
	}
	return zw.Close()
}
