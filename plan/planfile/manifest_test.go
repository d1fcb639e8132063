package planfile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A folder's manifest lists what Save wrote, and Check finds every plan
// file of the folder that is missing, changed or not listed.
func TestManifest(t *testing.T) {
	dir := t.TempDir()
	var plans []ManifestPlan
	for _, name := range []string{"b.plan", "a.plan"} {
		path, _ := savedForTest(t)
		s, err := Load(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := SaveSum(filepath.Join(dir, name), s)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(dir, name))
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			t.Fatalf("SaveSum = %s, the file's SHA-256 is %x", sum, got)
		}
		plans = append(plans, ManifestPlan{File: name, Campaign: "c", ID: s.ID, SHA256: sum})
	}
	if _, err := ReadManifest(dir); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrManifest) {
		t.Fatalf("no manifest: %v", err)
	}
	if err := WriteManifest(dir, "test", plans); err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Plans) != 2 || m.Plans[0].File != "a.plan" || m.Plans[1] != plans[0] {
		t.Fatalf("read back %+v, want the plans in name order", m.Plans)
	}
	if err := m.Check(context.Background(), dir); err != nil {
		t.Fatalf("the folder as written: %v", err)
	}

	// One plan added, one changed, one gone: all three named at once.
	os.WriteFile(filepath.Join(dir, "z.plan"), []byte("another plan"), 0o600)
	os.WriteFile(filepath.Join(dir, "b.plan"), []byte("edited"), 0o600)
	os.Remove(filepath.Join(dir, "a.plan"))
	err = m.Check(context.Background(), dir)
	var fe *FolderError
	if !errors.As(err, &fe) || !errors.Is(err, ErrManifest) {
		t.Fatalf("Check = %v, want a *FolderError", err)
	}
	join := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	if !slices.Equal(fe.Added, join("z.plan")) || !slices.Equal(fe.Changed, join("b.plan")) || !slices.Equal(fe.Missing, join("a.plan")) {
		t.Errorf("Check found added %v, changed %v, missing %v", fe.Added, fe.Changed, fe.Missing)
	}
}

// A manifest names plan files in its folder only, once each, and holds
// nothing else: anything else is not one smsform wrote.
func TestReadManifestRefuses(t *testing.T) {
	for name, text := range map[string]string{
		"a path up":      `{"format_version":"1","smsform_version":"x","plans":[{"file":"../x.plan","campaign":"x","id":"p-0","sha256":"00"}]}`,
		"a sub-folder":   `{"format_version":"1","smsform_version":"x","plans":[{"file":"sub/x.plan","campaign":"x","id":"p-0","sha256":"00"}]}`,
		"a hidden file":  `{"format_version":"1","smsform_version":"x","plans":[{"file":".x.plan","campaign":"x","id":"p-0","sha256":"00"}]}`,
		"not a plan":     `{"format_version":"1","smsform_version":"x","plans":[{"file":"x.txt","campaign":"x","id":"p-0","sha256":"00"}]}`,
		"twice":          `{"format_version":"1","smsform_version":"x","plans":[{"file":"x.plan","campaign":"x","id":"p-0","sha256":"00"},{"file":"x.plan","campaign":"x","id":"p-0","sha256":"00"}]}`,
		"unknown field":  `{"format_version":"1","smsform_version":"x","approved":true,"plans":[]}`,
		"another format": `{"format_version":"2","smsform_version":"x","plans":[]}`,
		"trailing data":  `{"format_version":"1","smsform_version":"x","plans":[]} {}`,
		"not JSON":       `plans: [x.plan]`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, ManifestName), []byte(text), 0o644)
			_, err := ReadManifest(dir)
			if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "is not a manifest smsform wrote") {
				t.Errorf("ReadManifest = %v, want it refused", err)
			}
		})
	}
	if err := WriteManifest(t.TempDir(), "x", []ManifestPlan{{File: "../x.plan"}}); err == nil {
		t.Error("WriteManifest wrote a name outside the folder")
	}
}

// FuzzReadManifest feeds arbitrary bytes to the manifest reader: it returns
// a manifest or ErrManifest, never panics, and a manifest it accepts names
// plan files in its folder only.
func FuzzReadManifest(f *testing.F) {
	f.Add([]byte(`{"format_version":"1","smsform_version":"x","plans":[{"file":"a.plan","campaign":"a","id":"p-0","sha256":"00"}]}`))
	f.Add([]byte(`{"format_version":"1","smsform_version":"x","plans":[{"file":"../a.plan"}]}`))
	f.Add([]byte(`{"format_version":"1","plans":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ReadManifest(dir)
		if err != nil {
			if !errors.Is(err, ErrManifest) {
				t.Fatalf("error %v is not ErrManifest", err)
			}
			return
		}
		for _, p := range m.Plans {
			if filepath.Base(p.File) != p.File || !strings.HasSuffix(p.File, ".plan") || strings.HasPrefix(p.File, ".") {
				t.Fatalf("accepted %q", p.File)
			}
		}
	})
}
