package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// changelogFile is the one place a release's notes are written: each
// release's section of it becomes that release's notes (notesFile), word
// for word, so that the two never differ.
const (
	changelogFile = "CHANGELOG.md"
	notesFile     = "RELEASE_NOTES.md"
	unreleased    = "Unreleased"
)

// section is one "## " section of the changelog.
type section struct {
	name string // the heading's first word without brackets: "Unreleased", "0.4.0"
	line int    // the heading's line, from 1
	body string // what follows the heading, up to the next one, trimmed
}

// sections reads the changelog's "## " sections, in order. A heading is
// written as Keep a Changelog writes it: "## [0.4.0] - 2026-12-01", or
// "## [Unreleased]" (brackets optional).
func sections(changelog string) []section {
	var out []section
	var body []string
	flush := func() {
		if len(out) > 0 {
			out[len(out)-1].body = strings.TrimSpace(strings.Join(body, "\n"))
		}
		body = body[:0]
	}
	fenced := false
	for i, line := range strings.Split(changelog, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		heading, ok := strings.CutPrefix(line, "## ")
		if !ok || fenced {
			body = append(body, line)
			continue
		}
		flush()
		name, _, _ := strings.Cut(strings.TrimSpace(heading), " ")
		out = append(out, section{name: strings.Trim(name, "[]"), line: i + 1})
	}
	flush()
	return out
}

// notesFor is the release notes of version (v0.4.0): its section of the
// changelog, whose heading names it with or without its v. A pre-release
// (v0.4.0-rc.1) without a section of its own takes the Unreleased one:
// release candidates are cut before the section is named.
func notesFor(changelog, version string) (string, error) {
	secs := sections(changelog)
	find := func(name string) (section, bool) {
		for _, s := range secs {
			if strings.EqualFold(s.name, name) || "v"+s.name == name {
				return s, true
			}
		}
		return section{}, false
	}
	s, ok := find(version)
	if !ok && strings.Contains(version, "-") {
		s, ok = find(unreleased)
	}
	if !ok {
		bare := strings.TrimPrefix(version, "v")
		return "", hinted(fmt.Errorf("%s has no section for %s: its notes are the release's", changelogFile, version),
			fmt.Sprintf("rename its heading \"## Unreleased\" to \"## [%s] - YYYY-MM-DD\", start a new Unreleased section above it, commit, and tag that commit %s", bare, version))
	}
	if s.body == "" {
		return "", hinted(fmt.Errorf("%s:%d: the section for %s is empty", changelogFile, s.line, version),
			"say what the release changed, in its users' words (CONTRIBUTING.md says how)")
	}
	return s.body + "\n", nil
}

// readNotes reads the changelog of the work tree at repo and returns
// version's notes.
func readNotes(repo, version string) (string, error) {
	data, err := os.ReadFile(filepath.Join(repo, changelogFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", hinted(fmt.Errorf("%s is missing: a release's notes are its section of it", changelogFile),
			"a release is built from a clone of the smsform repository")
	}
	if err != nil {
		return "", err
	}
	return notesFor(string(data), version)
}
