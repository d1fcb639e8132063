package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/internal/exitcode"
)

// pendingPages are docs pages that other branches are writing while pages
// here already link to them. A link to one is not checked until the page
// exists; once it does, it is checked like any other (and its entry can go).
var pendingPages = map[string]bool{}

// TestDocsLinks checks every relative link of docPages: the
// file it names exists inside the repository, and its #anchor is a heading
// of that file, as GitHub makes anchors. A page moved or a heading renamed
// breaks a link nobody clicks until a reader does.
func TestDocsLinks(t *testing.T) {
	pages := docPages(t)
	headings := map[string]map[string]bool{} // by repository path
	anchorsOf := func(path string) map[string]bool {
		if a, ok := headings[path]; ok {
			return a
		}
		a := anchors(t, path)
		headings[path] = a
		return a
	}
	checked := 0
	for _, page := range pages {
		for _, l := range links(t, page) {
			checked++
			target, anchor, _ := strings.Cut(l.target, "#")
			path := page
			if target != "" {
				path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), target)))
				if path == ".." || strings.HasPrefix(path, "../") || filepath.IsAbs(target) {
					t.Errorf("%s:%d: link %q leaves the repository", page, l.line, l.target)
					continue
				}
				if _, err := os.Stat(path); err != nil {
					if pendingPages[path] {
						t.Logf("%s:%d: %s is not here yet (another branch writes it)", page, l.line, path)
						continue
					}
					t.Errorf("%s:%d: link %q: %s does not exist", page, l.line, l.target, path)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", page, l.line, l.target)
				continue
			}
			if !anchorsOf(path)[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", page, l.line, l.target, path, anchor)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d links found in %d pages: the link parser is broken", checked, len(pages))
	}
}

// TestREADMEIsALandingPage holds the README to what it is for: a page read
// in a few minutes that shows the two commands and leads to every page of
// the documentation.
func TestREADMEIsALandingPage(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	if n := strings.Count(readme, "\n"); n > 300 {
		t.Errorf("README.md has %d lines: at most 300 (the reference goes in docs/)", n)
	}
	for _, cmd := range []string{"make demo", "make test"} {
		if !regexp.MustCompile(`(?m)^` + cmd + `\b`).MatchString(readme) {
			t.Errorf("README.md does not show %q on a line of its own", cmd)
		}
	}
	linked := map[string]bool{}
	for _, l := range links(t, "README.md") {
		target, _, _ := strings.Cut(l.target, "#")
		linked[filepath.ToSlash(filepath.Clean(target))] = true
	}
	for _, page := range docPages(t)[1:] {
		if !linked[page] {
			t.Errorf("README.md's documentation index does not link %s", page)
		}
	}
}

// docPages is the pages at the top of the repository (README.md,
// CONTRIBUTING.md, CHANGELOG.md) then every docs/*.md, as repository paths.
func docPages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return append([]string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md"}, docs...)
}

type link struct {
	line   int
	target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// links lists the relative links of a Markdown file: inline and reference
// definitions, outside code blocks and code spans; URLs with a scheme
// (https:, mailto:) are left out.
func links(t *testing.T, path string) []link {
	t.Helper()
	var out []link
	eachLine(t, path, func(n int, line string) {
		var targets []string
		if m := refLink.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, m := range inlineLink.FindAllStringSubmatch(withoutCodeSpans(line), -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if !scheme.MatchString(target) && !strings.HasPrefix(target, "//") {
				out = append(out, link{line: n, target: target})
			}
		}
	})
	return out
}

// anchors lists the anchors GitHub gives the headings of a Markdown file.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	seen := map[string]int{}
	out := map[string]bool{}
	eachLine(t, path, func(_ int, line string) {
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			return
		}
		a := anchor(line[level:])
		if k := seen[a]; k > 0 {
			out[a+"-"+strconv.Itoa(k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	})
	return out
}

var linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// anchor is GitHub's anchor of a heading: its text as rendered (code spans
// and links give their text, emphasis marks go), lower-cased, everything
// but letters, digits, marks, '_', '-' and spaces dropped, spaces to '-'.
func anchor(heading string) string {
	text := linkText.ReplaceAllString(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(heading), "#")), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// withoutCodeSpans blanks the code spans of a line, where brackets and
// parentheses are text, not links.
func withoutCodeSpans(line string) string {
	b := []byte(line)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := 1
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		fence := strings.Repeat("`", n)
		end := strings.Index(string(b[i+n:]), fence)
		for end >= 0 && i+n+end+n < len(b) && b[i+n+end+n] == '`' { // a longer run does not close it
			next := strings.Index(string(b[i+n+end+n:]), fence)
			if next < 0 {
				end = -1
				break
			}
			end += n + next
		}
		if end < 0 {
			i += n
			continue
		}
		for j := i; j < i+n+end+n; j++ {
			b[j] = ' '
		}
		i += n + end + n
	}
	return string(b)
}

// eachLine calls fn with every line of a Markdown file outside fenced code
// blocks, numbered from 1. (Indented code blocks are read as text: told
// apart from a list item's paragraphs only by a full parser, and a link
// checked in one does no harm.)
func eachLine(t *testing.T, path string, fn func(n int, line string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			for len(fence) < len(trimmed) && trimmed[len(fence)] == fence[0] {
				fence += fence[:1]
			}
		default:
			fn(n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestAnchor holds anchor to anchors GitHub gave these headings.
func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		" Ten million recipients (`make bench-scale`)":      "ten-million-recipients-make-bench-scale",
		" The `provider:` block":                            "the-provider-block",
		" 413: too large":                                   "413-too-large",
		" Scheduled campaigns: send windows and not_before": "scheduled-campaigns-send-windows-and-not_before",
		" What a saved plan proves, and what it does not":   "what-a-saved-plan-proves-and-what-it-does-not",
		" Using [the state](state.md) ##":                   "using-the-state",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestDocsExitCodes holds README.md's and docs/commands.md's "Exit codes"
// tables, and `smsform --help`, to the one table in internal/exitcode:
// the same codes, in the same order, each with the same name and meaning
// (code spans aside). The codes were listed in five places once, and code
// 0 already read differently in two of them.
func TestDocsExitCodes(t *testing.T) {
	var want []string
	for _, c := range exitcode.All() {
		want = append(want, fmt.Sprintf("%d | %s | %s", c, c.Name(), c.Meaning()))
	}
	for _, page := range []string{"README.md", "docs/commands.md"} {
		got := exitCodeRows(t, page)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the exit codes table (code | name | meaning, code spans aside) differs from internal/exitcode's:\n got %q\nwant %q",
				page, got, want)
		}
	}
	var stdout, stderr bytes.Buffer
	err := cli.Run(context.Background(), []string{"--help"}, cli.Env{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" },
	})
	if err != nil {
		t.Fatalf("smsform --help: %v\n%s", err, stderr.String())
	}
	_, help, ok := strings.Cut(stdout.String(), "\nExit codes:\n")
	if !ok {
		t.Fatalf("smsform --help has no \"Exit codes:\" section:\n%s", stdout.String())
	}
	help, _, _ = strings.Cut(help, "\n\n")
	help = strings.Join(strings.Fields(help), " ") // the help folds long meanings
	var line []string
	for _, c := range exitcode.All() {
		line = append(line, fmt.Sprintf("%d %s", c, c.Meaning()))
	}
	if joined := strings.Join(line, " "); help != joined {
		t.Errorf("smsform --help's exit codes (folding aside):\n got %q\nwant %q", help, joined)
	}
}

// exitCodeRows is the rows of the table under the page's "## Exit codes"
// heading, as "code | name | meaning" without code spans' backticks.
func exitCodeRows(t *testing.T, page string) []string {
	t.Helper()
	var rows []string
	in, header := false, 0
	eachLine(t, page, func(_ int, line string) {
		switch {
		case strings.HasPrefix(line, "#"):
			in = line == "## Exit codes"
		case !in:
		case !strings.HasPrefix(line, "|"):
			in = header == 0 // the first table only: the notes under it are free
		case header < 2: // the column names and the rule under them
			header++
		default:
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			for i := range cells {
				cells[i] = strings.ReplaceAll(strings.TrimSpace(cells[i]), "`", "")
			}
			rows = append(rows, strings.Join(cells, " | "))
		}
	})
	if len(rows) == 0 {
		t.Errorf("%s: no table under \"## Exit codes\"", page)
	}
	return rows
}
