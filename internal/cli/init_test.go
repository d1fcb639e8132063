package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// createExcl never writes over a file, nor through a link, even one that
// appears after init looked (the check before writing cannot see that).
func TestCreateExclNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "smsform.yaml")
	if err := os.WriteFile(existing, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	for _, path := range []string{existing, link} {
		if err := createExcl(path, []byte("init's")); !errors.Is(err, fs.ErrExist) {
			t.Errorf("createExcl(%s) = %v, want an error that it exists", filepath.Base(path), err)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "mine" {
		t.Errorf("the existing file now holds %q", b)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}

// The files init writes carry the version of the smsform that wrote them
// (the schema and the action pinned to it), or main for a build without one.
func TestProjectFilesPinTheVersion(t *testing.T) {
	for version, want := range map[string]string{"v0.3.0": "smsform/smsform@v0.3.0", "dev": "smsform/smsform@main", "1a2b3c-dirty": "smsform/smsform@main"} {
		files, err := projectFiles(version)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range files {
			if f.rel == ".github/workflows/smsform-plan.yml" {
				found = true
				if !strings.Contains(string(f.data), "uses: "+want+"\n") {
					t.Errorf("version %s: the plan workflow does not use %s:\n%s", version, want, f.data)
				}
			}
			if strings.Contains(string(f.data), "@SCHEMA_REF@") || strings.Contains(string(f.data), "@ACTION_REF@") {
				t.Errorf("version %s: %s keeps a placeholder", version, f.rel)
			}
		}
		if !found {
			t.Fatal("init writes no plan workflow")
		}
	}
}
