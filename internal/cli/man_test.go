package cli

import (
	"context"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/smsform/smsform/internal/exitcode"
)

// manPage runs smsform man and returns the page.
func manPage(t *testing.T, getenv func(string) string) string {
	t.Helper()
	var out strings.Builder
	if err := Run(context.Background(), []string{"man"}, Env{Stdout: &out, Stderr: io.Discard, Getenv: getenv}); err != nil {
		t.Fatalf("smsform man: %v", err)
	}
	return out.String()
}

// manSections splits a page at its .SS lines: each command's section by
// its name ("smsform state list").
func manSections(page string) map[string]string {
	sections := map[string]string{}
	parts := regexp.MustCompile(`(?m)^\.SS "([^"]*)"\n`).Split(page, -1)
	names := regexp.MustCompile(`(?m)^\.SS "([^"]*)"\n`).FindAllStringSubmatch(page, -1)
	for i, n := range names {
		sections[strings.ReplaceAll(n[1], `\-`, "-")] = parts[i+1]
	}
	return sections
}

// typedCommands is every command of the tree a person may type, as
// Execute completes it (help and completion included), walked apart from
// the page's own walk.
func typedCommands(t *testing.T) []*cobra.Command {
	t.Helper()
	root := newRootCmd(Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }})
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var all []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				all = append(all, sub)
				walk(sub)
			}
		}
	}
	walk(root)
	return all
}

// The page has a section for every command, each with its usage line as
// --help gives it, and every flag its --help lists.
func TestManHasEveryCommand(t *testing.T) {
	page := manPage(t, nil)
	sections := manSections(page)
	typed := typedCommands(t)
	if len(typed) < len(commands)+5 {
		t.Fatalf("only %d commands in the tree: the walk is broken", len(typed))
	}
	for _, cmd := range typed {
		section, ok := sections[cmd.CommandPath()]
		if !ok {
			t.Errorf("the page has no section for %s", cmd.CommandPath())
			continue
		}
		if want := `\fB` + (&roff{}).escape(cmd.UseLine()) + `\fR`; !strings.Contains(section, want) {
			t.Errorf("the section of %s lacks its usage line %q", cmd.CommandPath(), want)
		}
	}
	for cmd, help := range commandHelp(t) {
		section := sections["smsform "+cmd]
		for _, f := range flagsOf(help) {
			if !strings.Contains(section, `\fB\-\-`+strings.ReplaceAll(f, "-", `\-`)+`\fR`) {
				t.Errorf("the page's section of %s does not list --%s", cmd, f)
			}
		}
	}
}

// The page says every exit code and every variable --help knows, and the
// sections a manual page has.
func TestManSaysExitCodesAndEnvironment(t *testing.T) {
	page := manPage(t, nil)
	for _, s := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"} {
		if !strings.Contains(page, "\n.SH \""+s+"\"\n") {
			t.Errorf("the page has no %s section", s)
		}
	}
	_, exits, _ := strings.Cut(page, `.SH "EXIT STATUS"`)
	exits, env, _ := strings.Cut(exits, `.SH "ENVIRONMENT"`)
	for _, c := range exitcode.All() {
		code, meaning := strconv.Itoa(int(c)), c.Meaning()
		if !strings.Contains(exits, ".TP\n\\fB"+code+"\\fR\n"+(&roff{}).escape(meaning)+"\n") {
			t.Errorf("EXIT STATUS lacks %s (%s)", code, meaning)
		}
	}
	for name := range envHelp {
		if !strings.Contains(env, `\fB`+(&roff{}).escape(name)+`\fR`) {
			t.Errorf("ENVIRONMENT lacks %s", name)
		}
	}
}

// manRequests are the only requests the page may make: a help text that
// reaches the start of a line as a request ('.' or ') would be one more.
var manRequests = regexp.MustCompile(`^\.(TH|SH|SS|PP|TP|RS|RE|nf|fi|sp)( |$)`)

// The page is roff a formatter reads as intended: it starts with .TH, makes
// only the requests the generator writes, and holds nothing but ASCII.
func TestManIsRoff(t *testing.T) {
	page := manPage(t, func(name string) string {
		if name == "SOURCE_DATE_EPOCH" {
			return "1795867200" // 2026-11-28T12:00:00Z
		}
		return ""
	})
	if !strings.HasPrefix(page, `.TH "SMSFORM" "1" "2026\-11\-28" "smsform `) {
		t.Errorf("the page does not start with .TH and SOURCE_DATE_EPOCH's date: %.80q", page)
	}
	for i, line := range strings.Split(strings.TrimSuffix(page, "\n"), "\n") {
		if (strings.HasPrefix(line, ".") && !manRequests.MatchString(line)) || strings.HasPrefix(line, "'") {
			t.Errorf("line %d is a request the page does not make: %q", i+1, line)
		}
		for _, r := range line {
			if r > 127 {
				t.Errorf("line %d holds %q, not ASCII: %q", i+1, r, line)
				break
			}
		}
	}
	if groff, err := exec.LookPath("groff"); err == nil {
		cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
		cmd.Stdin = strings.NewReader(page)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("groff -man -ww warns of the page: %v\n%s", err, out)
		}
	} else {
		t.Log("groff is not installed: the page was not formatted")
	}
}

// Text from a help string never becomes a request or an escape: a line
// that starts with '.' or ' is guarded, a backslash is written as one.
func TestManEscapesText(t *testing.T) {
	m := &roff{}
	m.text(".SH EVIL\n'br\nplain \\fBbold\\fR -- café\n\n  .nf indented\n  'x")
	want := `\&.SH EVIL
\&'br
plain \efBbold\efR \-\- caf\[u00E9]
.PP
.RS 4
.nf
\&.nf indented
\&'x
.fi
.RE
`
	if got := m.String(); got != want {
		t.Errorf("text became\n%s\nwant\n%s", got, want)
	}
}
