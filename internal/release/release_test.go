package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The full check builds smsform and its SBOM, minutes on a cold cache:
// make release-check runs it, make test does not.
var check = flag.Bool("release.check", false, "build a release from two clones and compare them byte for byte")

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q")
	gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first")
	return dir
}

// A release is built from a clean tree whose HEAD carries the version's tag,
// and nothing is written otherwise.
func TestRunRefusesWhatNoTagNames(t *testing.T) {
	cases := []struct {
		name, version, want string
		prepare             func(t *testing.T, repo string)
	}{
		{"not a version", "0.3", "not a semantic version", nil},
		{"untagged", "v0.3.0", "is not tagged v0.3.0", nil},
		{"tag elsewhere", "v0.3.0", "is not tagged v0.3.0", func(t *testing.T, repo string) {
			gitT(t, repo, "tag", "v0.3.0")
			gitT(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "second")
		}},
		{"dirty", "v0.3.0", "the work tree has changes", func(t *testing.T, repo string) {
			gitT(t, repo, "tag", "v0.3.0")
			if err := os.WriteFile(filepath.Join(repo, "stray.txt"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"no changelog", "v0.3.0", "CHANGELOG.md is missing", func(t *testing.T, repo string) {
			gitT(t, repo, "tag", "v0.3.0")
		}},
		{"no section", "v0.3.0", "CHANGELOG.md has no section for v0.3.0", func(t *testing.T, repo string) {
			commitChangelog(t, repo, "# Changelog\n\n## Unreleased\n\n- Something.\n\n## [0.2.0] - 2026-11-01\n\n- Else.\n")
			gitT(t, repo, "tag", "v0.3.0")
		}},
		{"empty section", "v0.3.0", "CHANGELOG.md:3: the section for v0.3.0 is empty", func(t *testing.T, repo string) {
			commitChangelog(t, repo, "# Changelog\n\n## [0.3.0] - 2026-12-01\n\n## [0.2.0] - 2026-11-01\n\n- Else.\n")
			gitT(t, repo, "tag", "v0.3.0")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t)
			if c.prepare != nil {
				c.prepare(t, repo)
			}
			err := run(context.Background(), []string{"-version", c.version, "-repo", repo}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("run = %v, want an error saying %q", err, c.want)
			}
			var h interface{ Hint() string }
			if !errors.As(err, &h) {
				t.Errorf("error %q has no hint", err)
			}
			if _, err := os.Stat(filepath.Join(repo, "dist")); !os.IsNotExist(err) {
				t.Errorf("dist was created: %v", err)
			}
		})
	}
}

// commitChangelog commits text as the repository's CHANGELOG.md.
func commitChangelog(t *testing.T, repo, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, "CHANGELOG.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "add", "CHANGELOG.md")
	gitT(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "changelog")
}

// Two clones at different paths give byte-identical release files, and the
// binary says the release's version and commit; the archive holds the
// manual page, the licence and the changelog, and the notes are the
// changelog's section (a pre-release's: Unreleased).
func TestReproducibleRelease(t *testing.T) {
	if !*check {
		t.Skip("builds smsform twice: run with -release.check (make release-check)")
	}
	top := gitT(t, ".", "rev-parse", "--show-toplevel")
	p := platform{"linux", "amd64"}
	if slices.Contains(allPlatforms, platform{runtime.GOOS, runtime.GOARCH}) {
		p = platform{runtime.GOOS, runtime.GOARCH}
	}
	const version = "v0.0.0-check.1"
	var dists [2]string
	var commit string
	for i, parent := range []string{t.TempDir(), filepath.Join(t.TempDir(), "a", "much", "longer", "path")} {
		clone := filepath.Join(parent, "smsform")
		if err := os.MkdirAll(parent, 0o755); err != nil {
			t.Fatal(err)
		}
		gitT(t, parent, "clone", "-q", "--no-local", top, clone)
		gitT(t, clone, "tag", version)
		commit = gitT(t, clone, "rev-parse", "HEAD")
		if err := run(context.Background(), []string{"-version", version, "-repo", clone, "-platforms", p.String()}, &bytes.Buffer{}); err != nil {
			t.Fatalf("clone %d: %v", i+1, err)
		}
		dists[i] = filepath.Join(clone, "dist")
	}
	compareDirs(t, dists[0], dists[1])
	sums, err := os.ReadFile(filepath.Join(dists[0], sumsFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SHA256SUMS:\n%s", sums)
	if p.os == runtime.GOOS && p.arch == runtime.GOARCH && p.os != "windows" {
		secs, _ := strconv.ParseInt(gitT(t, top, "log", "-1", "--format=%ct", commit), 10, 64)
		date := time.Unix(secs, 0).UTC().Format(time.DateOnly)
		checkVersion(t, filepath.Join(dists[0], "smsform_"+version+"_"+p.String()+".tar.gz"), version, commit, date)
	}
	checkNotes(t, top, dists[0], version)
}

// checkNotes holds the release notes to the changelog's section.
func checkNotes(t *testing.T, top, dist, version string) {
	t.Helper()
	changelog, err := os.ReadFile(filepath.Join(top, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := notesFor(string(changelog), version)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dist, notesFile))
	if err != nil || string(got) != want {
		t.Errorf("%s = %q (%v), want the changelog's section %q", notesFile, got, err, want)
	}
}

func compareDirs(t *testing.T, a, b string) {
	t.Helper()
	names := func(dir string) []string {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, e := range es {
			ns = append(ns, e.Name())
		}
		return ns
	}
	na, nb := names(a), names(b)
	if !slices.Equal(na, nb) {
		t.Fatalf("the clones wrote different files: %v and %v", na, nb)
	}
	if !slices.Contains(na, sumsFile) || len(na) < 2 {
		t.Fatalf("release wrote %v: want an archive and %s at least", na, sumsFile)
	}
	for _, n := range na {
		x, _ := os.ReadFile(filepath.Join(a, n))
		y, _ := os.ReadFile(filepath.Join(b, n))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between the clones (%d and %d bytes)", n, len(x), len(y))
		}
	}
}

// checkVersion unpacks the archive, runs its smsform version --json, and
// checks the files beside it: the manual page of that version, the licence
// and the changelog.
func checkVersion(t *testing.T, archivePath, version, commit, date string) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", archivePath, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	unpacked := filepath.Join(dir, strings.TrimSuffix(filepath.Base(archivePath), ".tar.gz"))
	page, err := os.ReadFile(filepath.Join(unpacked, manPath))
	th := strings.ReplaceAll(`.TH "SMSFORM" "1" "`+date+`" "smsform `+version+`"`, "-", `\-`)
	if err != nil || !strings.HasPrefix(string(page), th) {
		t.Errorf("%s: %v: want smsform man's page of %s, dated as its commit (%s):\n%.200s", manPath, err, version, th, page)
	}
	for _, name := range docFiles {
		if _, err := os.Stat(filepath.Join(unpacked, name)); err != nil {
			t.Errorf("the archive lacks %s: %v", name, err)
		}
	}
	bin := filepath.Join(unpacked, "smsform")
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("smsform version: %v", err)
	}
	var v struct{ Version, Commit string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("smsform version --json: %v: %s", err, out)
	}
	if v.Version != version || v.Commit != commit {
		t.Errorf("smsform version says %s at %s, want %s at %s", v.Version, v.Commit, version, commit)
	}
}
