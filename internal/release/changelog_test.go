package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const sampleChangelog = "# Changelog\n\nIntro.\n\n## [Unreleased]\n\n### Added\n\n- Next.\n\n" +
	"## [0.4.0] - 2026-12-01\n\n### Added\n\n- Four.\n\n```\n## not a heading\n```\n\n" +
	"## v0.3.0 - 2026-11-27\n\n- Three.\n"

// A release's notes are its section, word for word, whether its heading
// writes the v or not; a pre-release without one takes Unreleased.
func TestNotesFor(t *testing.T) {
	cases := []struct{ version, want string }{
		{"v0.4.0", "### Added\n\n- Four.\n\n```\n## not a heading\n```\n"},
		{"v0.3.0", "- Three.\n"},
		{"v0.4.0-rc.1", "### Added\n\n- Next.\n"}, // a section of its own it has not: Unreleased
	}
	for _, c := range cases {
		got, err := notesFor(sampleChangelog, c.version)
		if err != nil || got != c.want {
			t.Errorf("notesFor(%s) = %q, %v; want %q", c.version, got, err, c.want)
		}
	}
}

// A release the changelog does not name, or names with nothing under it,
// is refused with what to write.
func TestNotesForRefuses(t *testing.T) {
	for _, c := range []struct{ changelog, version, want string }{
		{sampleChangelog, "v0.5.0", "has no section for v0.5.0"},
		{"# Changelog\n\n## [0.5.0] - 2026-12-02\n\n## [0.4.0]\n\n- Four.\n", "v0.5.0", "CHANGELOG.md:3: the section for v0.5.0 is empty"},
		{"# Changelog\n", "v0.1.0-rc.1", "has no section for v0.1.0-rc.1"},
	} {
		_, err := notesFor(c.changelog, c.version)
		var h interface{ Hint() string }
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &h) {
			t.Errorf("notesFor(%s) = %v, want an error with a hint saying %q", c.version, err, c.want)
		}
	}
}

// headingRE is the form of every section of smsform's changelog: the next
// release, a tagged one, or a round of work from before the first tag,
// dated and named by the commit it ended at.
var headingRE = regexp.MustCompile(`^## (Unreleased|\[\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?\] - \d{4}-\d{2}-\d{2}|\d{4}-\d{2}-\d{2} \(untagged: main at [0-9a-f]{7,}\))$`)

// The repository's changelog reads as the release tool reads it: the
// Unreleased section first and not empty, every heading in one of the
// forms above, and every tag of the repository with its section.
func TestRepositoryChangelog(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", changelogFile))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	secs := sections(text)
	if len(secs) < 2 || secs[0].name != unreleased {
		t.Fatalf("%s: the first section must be %s, then the releases: %+v", changelogFile, unreleased, secs)
	}
	if _, err := notesFor(text, "v0.0.0-next.1"); err != nil {
		t.Errorf("a pre-release's notes: %v", err)
	}
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "## ") && !headingRE.MatchString(strings.TrimSuffix(line, "\n")) {
			t.Errorf("%s: heading %q is not one of the forms the release tool reads", changelogFile, line)
		}
	}
	tags, err := exec.Command("git", "-C", filepath.Join("..", ".."), "tag", "--list", "v*").Output()
	if err != nil {
		t.Logf("no git here (%v): tags not checked", err)
		return
	}
	for _, tag := range strings.Fields(string(tags)) {
		if versionRE.MatchString(tag) {
			if _, err := notesFor(text, tag); err != nil {
				t.Errorf("tag %s: %v", tag, err)
			}
		}
	}
}
