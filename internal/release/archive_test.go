package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"testing"
	"time"
)

func testArchive(order []int) archive {
	all := []entry{
		{name: "smsform", mode: 0o755, data: []byte("\x7fELF pretend binary")},
		{name: "README.md", mode: 0o644, data: []byte("# smsform\n")},
		{name: "docs/install.md", mode: 0o600, data: []byte("install\n")},
	}
	a := archive{dir: "smsform_v1.2.3_linux_amd64", mtime: time.Date(2026, 3, 1, 12, 30, 45, 0, time.FixedZone("CET", 3600))}
	for _, i := range order {
		a.entries = append(a.entries, all[i])
	}
	return a
}

// Entries gathered in another order, at another moment, give the same
// bytes: the order is the names', the time the commit's.
func TestArchivesDoNotDependOnOrder(t *testing.T) {
	for _, format := range []string{"tar.gz", "zip"} {
		t.Run(format, func(t *testing.T) {
			var out [2]bytes.Buffer
			for i, order := range [][]int{{0, 1, 2}, {2, 0, 1}} {
				a := testArchive(order)
				write := a.writeTarGz
				if format == "zip" {
					write = a.writeZip
				}
				if err := write(&out[i]); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond) // a clock in the archive would show
			}
			if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
				t.Fatalf("two archives of the same entries differ (%d and %d bytes)", out[0].Len(), out[1].Len())
			}
		})
	}
}

type listed struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
	data  string
}

var wantListing = []listed{
	{"smsform_v1.2.3_linux_amd64/", fs.ModeDir | 0o755, time.Unix(1772364645, 0), ""},
	{"smsform_v1.2.3_linux_amd64/README.md", 0o644, time.Unix(1772364645, 0), "# smsform\n"},
	{"smsform_v1.2.3_linux_amd64/docs/install.md", 0o600, time.Unix(1772364645, 0), "install\n"},
	{"smsform_v1.2.3_linux_amd64/smsform", 0o755, time.Unix(1772364645, 0), "\x7fELF pretend binary"},
}

func checkListing(t *testing.T, got []listed) {
	t.Helper()
	if len(got) != len(wantListing) {
		t.Fatalf("archive lists %d entries, want %d: %+v", len(got), len(wantListing), got)
	}
	for i, w := range wantListing {
		g := got[i]
		if g.name != w.name || g.mode != w.mode || !g.mtime.Equal(w.mtime) || g.data != w.data {
			t.Errorf("entry %d = %q %v %v %q, want %q %v %v %q", i, g.name, g.mode, g.mtime.UTC(), g.data, w.name, w.mode, w.mtime.UTC(), w.data)
		}
	}
}

// What tar and unzip will show: the folder first, names sorted, the
// commit's time, root's ownership, the modes given.
func TestTarGzListing(t *testing.T) {
	var buf bytes.Buffer
	if err := testArchive([]int{1, 2, 0}).writeTarGz(&buf); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header carries name %q, time %v: it must carry neither", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	var got []listed
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || h.Gname != "root" {
			t.Errorf("%s: owner %d/%d %s/%s, want root", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		data, _ := io.ReadAll(tr)
		got = append(got, listed{h.Name, h.FileInfo().Mode(), h.ModTime, string(data)})
	}
	checkListing(t, got)
}

func TestZipListing(t *testing.T) {
	var buf bytes.Buffer
	if err := testArchive([]int{2, 1, 0}).writeZip(&buf); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var got []listed
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		got = append(got, listed{f.Name, f.Mode(), f.Modified, string(data)})
	}
	checkListing(t, got)
}
