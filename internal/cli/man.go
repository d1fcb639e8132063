package cli

import (
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/smsform/smsform/internal/exitcode"
)

// The manual page is written from the command tree itself, with the help
// texts, flags, environment and exit codes that --help prints, so that it
// cannot say something the program does not do. It is one page, smsform(1),
// with every command in it (as restic's and git's commands each get a
// section), written by hand rather than with cobra's doc package: that one
// writes a page per command through a Markdown converter (two more modules)
// and has no place for the exit codes, the environment or the files.

// manFiles are the files smsform reads and writes, for the page's FILES.
var manFiles = []struct{ name, what string }{
	{"CAMPAIGN.yaml", "a campaign: sender, recipient lists, template, send settings"},
	{"smsform.yaml", "the project file, found from the campaign's folder upwards (to the folder holding .git): the state every campaign of the project uses, shared provider settings, opt-out words, frequency caps"},
	{"CAMPAIGN.smsstate", "the state of a campaign outside a project, next to its file (SQLite); a project's file state is where smsform.yaml says (smsform init: .smsform/smsform.smsstate)"},
	{"STATE.smsstate.CAMPAIGN.lock", "the lock an apply holds on one campaign of a file state, next to the real file"},
	{"PLANFILE.plan", "a saved plan (plan --out): what a reviewer saw, with phone numbers; keep it private"},
	{"$SMSFORM_TOKEN_DIR", "stored tokens (default: the user's cache folder, smsform/tokens): a 0700 folder of 0600 files"},
}

// manSeeAlso are the pages of the documentation a reader goes to next.
var manSeeAlso = []string{"README.md", "docs/campaigns.md", "docs/project.md", "docs/commands.md", "docs/state.md",
	"docs/saved-plans.md", "docs/providers.md", "docs/ci.md"}

// manURL is where the documentation is read.
const manURL = "https://github.com/smsform/smsform"

func newManCmd(env Env, root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:  "man",
		Args: positional(0, 0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			return writeMan(env.Stdout, root, manDate(env.Getenv))
		},
	}
}

// manDate is the date the page carries: the commit's, as the binary was
// stamped with it (a release's), else SOURCE_DATE_EPOCH's, else none. Never
// the clock: the page a release ships must depend only on its commit.
func manDate(getenv func(string) string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key != "vcs.time" {
				continue
			}
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				return t.UTC().Format(time.DateOnly)
			}
		}
	}
	if secs, err := strconv.ParseInt(getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		return time.Unix(secs, 0).UTC().Format(time.DateOnly)
	}
	return ""
}

// writeMan writes smsform(1) in roff (the man macros) to w.
func writeMan(w io.Writer, root *cobra.Command, date string) error {
	m := &roff{}
	top := helps[""]
	m.macro("TH", "SMSFORM", "1", date, "smsform "+buildVersion().Version, "smsform manual")
	m.section("NAME")
	m.line(root.Name() + " - " + top.short)
	m.section("SYNOPSIS")
	m.raw(`\fBsmsform\fR \fICOMMAND\fR [\fIARGUMENTS\fR] [\fIFLAGS\fR]`)
	m.section("DESCRIPTION")
	m.text(top.long)
	m.paragraph()
	m.line("Examples:")
	m.example(top.example)
	m.paragraph()
	m.line("Every command takes these flags:")
	m.flags(root.PersistentFlags())
	m.flags(root.LocalNonPersistentFlags())
	m.section("COMMANDS")
	for _, cmd := range manCommands(root) {
		m.command(root, cmd)
	}
	m.exitStatus()
	m.environment()
	m.section("FILES")
	for _, f := range manFiles {
		m.tagged(`\fI`+m.escape(f.name)+`\fR`, f.what)
	}
	m.section("SEE ALSO")
	m.line("The documentation, in the repository at " + manURL + ": " + strings.Join(manSeeAlso, ", ") + ".")
	_, err := io.WriteString(w, m.String())
	return err
}

// manCommands is every command a person may type, parents before their
// subcommands, in the order --help lists them.
func manCommands(root *cobra.Command) []*cobra.Command {
	var all []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Deprecated != "" {
				continue
			}
			all = append(all, sub)
			walk(sub)
		}
	}
	walk(root)
	return all
}

// command writes one command's section: its synopsis as --help's Usage
// line, what it does, its flags, the environment it reads, its exit codes
// and its examples.
func (m *roff) command(root, cmd *cobra.Command) {
	key := strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), root.Name()), " ")
	m.macro("SS", cmd.CommandPath())
	m.raw(`\fB` + m.escape(cmd.UseLine()) + `\fR`)
	m.paragraph()
	h, ok := helps[key]
	switch {
	case ok:
		m.text(h.short + ".\n\n" + h.long)
	case cmd.Long != "":
		m.text(cmd.Long)
	default:
		m.text(cmd.Short + ".")
	}
	if m.hasFlags(cmd.LocalFlags()) {
		m.paragraph()
		m.line("Flags:")
		m.flags(cmd.LocalFlags())
	}
	if len(h.env) > 0 {
		m.paragraph()
		m.line("Environment: " + strings.Join(h.env, "; ") + ".")
	}
	if len(h.exits) > 0 {
		codes := make([]string, len(h.exits))
		for i, c := range h.exits {
			codes[i] = strconv.Itoa(int(c))
		}
		m.paragraph()
		m.line("Exit codes: " + strings.Join(codes, ", ") + ".")
	}
	if cmd.Example != "" {
		m.paragraph()
		m.line("Examples:")
		m.example(cmd.Example)
	}
}

// shown reports whether the page lists f: --help is every command's.
func shown(f *pflag.Flag) bool { return !f.Hidden && f.Name != "help" }

// hasFlags reports whether fs has a flag the page lists.
func (m *roff) hasFlags(fs *pflag.FlagSet) bool {
	found := false
	fs.VisitAll(func(f *pflag.Flag) { found = found || shown(f) })
	return found
}

// flags writes each flag but --help as --help shows it: its name, its
// value's name, what it does and its default.
func (m *roff) flags(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if !shown(f) {
			return
		}
		tag := `\fB\-\-` + m.escape(f.Name) + `\fR`
		if f.Shorthand != "" {
			tag = `\fB\-` + m.escape(f.Shorthand) + `\fR, ` + tag
		}
		value, usage := pflag.UnquoteUsage(f)
		if value != "" {
			tag += ` \fI` + m.escape(value) + `\fR`
		}
		if d := flagDefault(f); d != "" {
			usage += " (default " + d + ")"
		}
		m.tagged(tag, usage)
	})
}

// flagDefault is a flag's default as --help shows it, "" when --help shows
// none (false, 0, an empty value).
func flagDefault(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]", "<nil>":
		return ""
	}
	if f.Value.Type() == "string" {
		return strconv.Quote(f.DefValue)
	}
	return f.DefValue
}

// exitStatus writes every exit code with what it means.
func (m *roff) exitStatus() {
	m.section("EXIT STATUS")
	for _, c := range exitcode.All() {
		m.tagged(`\fB`+strconv.Itoa(int(c))+`\fR`, c.Meaning())
	}
}

// environment writes every variable smsform reads, by name.
func (m *roff) environment() {
	m.section("ENVIRONMENT")
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range envHelp {
			if !yield(name) {
				return
			}
		}
	}) {
		m.tagged(`\fB`+m.escape(name)+`\fR`, envHelp[name])
	}
}

// roff builds a page in the man macros. Text is escaped on its way in:
// a backslash is written \e, a hyphen \- (so that a flag copied from the
// page is still a flag), and a line that would start with a control
// character ('.' or ') is guarded with \&, so that no help text can be read
// as a request.
type roff struct{ strings.Builder }

func (m *roff) escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r > unicode.MaxASCII:
			// Every formatter reads \[uXXXX]; not every one is given
			// UTF-8 (groff without preconv is not).
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// raw writes a line that is already roff.
func (m *roff) raw(line string) {
	if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
		line = `\&` + line
	}
	m.WriteString(line + "\n")
}

// line writes a line of text.
func (m *roff) line(s string) { m.raw(m.escape(s)) }

func (m *roff) macro(name string, args ...string) {
	m.WriteString("." + name)
	for _, a := range args {
		m.WriteString(` "` + strings.ReplaceAll(m.escape(a), `"`, `\(dq`) + `"`)
	}
	m.WriteString("\n")
}

func (m *roff) section(name string) { m.macro("SH", name) }
func (m *roff) paragraph()          { m.WriteString(".PP\n") }

// tagged writes a term (already roff) and its description, indented.
func (m *roff) tagged(term, text string) {
	m.WriteString(".TP\n")
	m.raw(term)
	m.text(text)
}

// text writes paragraphs separated by blank lines: filled, but for a
// paragraph whose lines are all indented (a command to type, a list),
// which keeps its lines.
func (m *roff) text(s string) {
	for i, para := range strings.Split(strings.TrimSpace(s), "\n\n") {
		if i > 0 {
			m.paragraph()
		}
		lines := strings.Split(para, "\n")
		if slices.IndexFunc(lines, func(l string) bool { return l == strings.TrimLeft(l, " \t") }) < 0 {
			m.example(para)
			continue
		}
		for _, l := range lines {
			if l = strings.TrimSpace(l); l != "" {
				m.line(l)
			}
		}
	}
}

// example writes lines as they are, indented and unfilled.
func (m *roff) example(s string) {
	m.WriteString(".RS 4\n.nf\n")
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			m.WriteString(".sp\n")
			continue
		}
		m.line(strings.TrimPrefix(strings.TrimPrefix(l, "\t"), "  "))
	}
	m.WriteString(".fi\n.RE\n")
}
