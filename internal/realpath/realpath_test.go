package realpath

import (
	"os"
	"path/filepath"
	"testing"
)

// A ".." after a link goes up from where the link leads, as the system
// reads it, not from the link's own folder.
func TestDotDotAfterALink(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"work", "srv/repo/campaigns"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "srv/repo/campaigns"), filepath.Join(root, "work/link")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	state := filepath.Join(root, "srv/repo/spring.smsstate")
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(root, "work"))

	abs, err := Abs("link/../spring.smsstate")
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		t.Fatalf("the file the system opens is not found through %s: %v", abs, err)
	}
	if real != state {
		t.Errorf("link/../spring.smsstate resolved to %s; the system opens %s", real, state)
	}
	if lexical, _ := filepath.Abs("link/../spring.smsstate"); lexical == real {
		t.Fatalf("the test proves nothing: filepath.Abs gives %s too", lexical)
	}
	dir, file := Split(abs)
	if file != "spring.smsstate" || dir != filepath.Join(root, "work", "link")+string(filepath.Separator)+".." {
		t.Errorf("Split(%s) = %s, %s", abs, dir, file)
	}
	if got := Join("/a/b", "c/d"); got != "/a/b/c/d" {
		t.Errorf("Join without ..: %s", got)
	}
}

// A file that is itself a link sits where the link leads: Dir resolves the
// file, not only the folder the link is in.
func TestDirOfALinkedFile(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"y", "p4/campaigns"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	real := filepath.Join(root, "p4/campaigns/abs.yaml")
	if err := os.WriteFile(real, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "y/abs.yaml")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Symlink("../p4/campaigns/abs.yaml", filepath.Join(root, "y/rel.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "p4/campaigns"), filepath.Join(root, "y/link")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	want := filepath.Join(root, "p4/campaigns")
	for _, p := range []string{"y/abs.yaml", "y/rel.yaml", filepath.Join(root, "y/abs.yaml"), "y/link/abs.yaml", "y/link/../campaigns/abs.yaml", "p4/campaigns/abs.yaml"} {
		if got, err := Dir(p); err != nil || got != want {
			t.Errorf("Dir(%s) = %s, %v; want %s", p, got, err, want)
		}
	}
	// A file that does not resolve gives the folder part, ".." kept.
	if got, err := Dir("y/link/../missing.yaml"); err != nil || got != filepath.Join(root, "y/link")+string(filepath.Separator)+".." {
		t.Errorf("Dir of a missing file = %s, %v", got, err)
	}
}
