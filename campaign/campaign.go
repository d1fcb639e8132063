// Package campaign loads campaign files: strict YAML (version 1) that names a
// sender, recipient sources, exclusions and a templated body. [Load] checks
// everything a campaign says about itself before anything is planned; every
// error it returns is an [*Error] that names the file, the line and the key,
// or several of them joined with [errors.Join] in file order.
// Recipient lists are read by [Source.Read], which streams them.
//
// Secrets never live in a campaign file: a key that looks like one is an error
// that points to the environment.
package campaign

import (
	"context"
	"fmt"
	"path/filepath"
	"text/template"
	"time"

	"github.com/shopspring/decimal"
	"github.com/smsform/smsform/internal/window"
)

// Campaign is a loaded, checked campaign file.
type Campaign struct {
	Path string // the campaign file as given to Load
	Dir  string // the folder list paths are relative to

	Version       int
	Name          string
	Sender        string
	Provider      Provider
	DefaultRegion string // "" when every number must be E.164
	Recipients    []Source
	Exclude       []Source
	Body          string // as written, less trailing line breaks (a "|" block keeps one, which every message would pay for)
	BodyLine      int    // the line of body: in Path, for errors about the body everyone gets
	BatchSize     int    // 1..1000, default 100
	Rate          Rate   // zero means unlimited
	Concurrency   int    // default 1
	Strict        bool
	// Window says when messages may go: a send window in each recipient's
	// local time, and the campaign's not_before and not_after.
	Window window.Spec
	// WindowLine is the line of send_window: in Path, 0 when there is
	// none: for errors about the window a rule leaves no hours of.
	WindowLine int
	// Prices is the price table named by prices:, nil when there is none.
	Prices *Prices
	Budget Budget
	// EmptyVariables is what a message that prints an empty variable is:
	// "warn" (the default) or "error".
	EmptyVariables string
	// Project is the project file that governs the campaign's folder; nil
	// outside a project.
	Project *Project
	// FrequencyCap is the campaign's own cap, at least as strict as the
	// project's; nil: the project's alone.
	FrequencyCap *FrequencyCap
	// Compliance is the campaign's kind and the rule sets it is held to
	// (with its project's).
	Compliance Compliance

	tmpl    *template.Template
	printed []string // the variables the body prints as they are (see printedFields)
}

// Budget bounds what a campaign may send; a zero field is no bound. The
// bounds are the campaign's: they count what the state records as sent as
// well as what a plan would send.
type Budget struct {
	MaxTotal              *decimal.Decimal // in the price table's currency
	MaxSegmentsPerMessage int
	MaxRecipients         int
}

// Rate is a number of requests per Per.
type Rate struct {
	N   float64
	Per time.Duration
}

// PerSecond returns the rate in requests per second, 0 for unlimited.
func (r Rate) PerSecond() float64 {
	if r.N == 0 || r.Per == 0 {
		return 0
	}
	return r.N / r.Per.Seconds()
}

// Source is one entry of recipients or exclude.
type Source struct {
	Kind        SourceKind
	File        string   // as written in the campaign file (KindCSV, KindText)
	Path        string   // File resolved against the campaign's folder
	PhoneColumn string   // KindCSV: the column holding the number
	Numbers     []string // KindInline
	Line        int      // line of this source in the campaign file
	Escapes     bool     // Path leaves the campaign's folder (through .. or a symlink): allowed, but reported

	campaignFile string // KindInline: the file the numbers are written in
	numberLines  []int  // KindInline: the line of each of Numbers
}

// SourceKind tells how a source holds its numbers.
type SourceKind int

const (
	KindInline SourceKind = iota // numbers: [...]
	KindCSV                      // a CSV file with a header row
	KindText                     // a .txt file, one number per line
)

// Entry is one recipient as read from a source.
type Entry struct {
	Raw  string            // the number as written
	Vars map[string]string // the CSV row's other columns; nil for inline and text sources
	File string            // the list file, or the campaign file for inline numbers
	Line int               // 1-based line in File
}

// Load reads and checks the campaign file at path, with the project file
// that governs its folder, if any ([FindProject]): its provider block lies
// under the campaign's. It does not read the list files (that is
// [Source.Read]'s job) but checks that they exist and are readable.
func Load(path string) (*Campaign, error) {
	if filepath.Base(path) == ProjectFile {
		return nil, &Error{File: path, Msg: "this is the project file, not a campaign",
			Hint: "give a campaign file; " + ProjectFile + " holds what every campaign of the project shares"}
	}
	proj, err := ProjectOfFile(path)
	if err != nil {
		return nil, err
	}
	l := &loader{file: path, project: proj}
	c := l.load()
	if err := l.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// Read streams the source's entries to fn in file order. It stops at the
// first error fn returns, and returns it. A malformed list (bad CSV, missing
// phone column, binary data) is an *Error with file and line.
//
// Each CSV entry gets a map of its own, so fn may keep entries. Rows whose
// fields are all empty, blank text lines and text lines starting with "#"
// are skipped. Read checks ctx every thousand entries.
func (s Source) Read(ctx context.Context, fn func(Entry) error) error {
	return s.ReadRows(ctx, func(r Row) error {
		e := Entry{Raw: r.Raw, File: r.File, Line: r.Line}
		if len(r.Columns) > 0 {
			e.Vars = make(map[string]string, len(r.Columns))
			for i, name := range r.Columns {
				e.Vars[name] = r.Values[i]
			}
		}
		return fn(e)
	})
}

// Row is an [Entry] whose other columns are kept as read rather than in a
// map: Values[i] is the column Columns[i]. A million rows cost a million
// maps less, for callers that read each row's variables once.
type Row struct {
	Raw     string   // the number as written
	Columns []string // the CSV header without the phone column, shared by every row: do not change it
	Values  []string // this row's fields in the order of Columns, its own; nil for inline and text sources
	File    string   // the list file, or the campaign file for inline numbers
	Line    int      // 1-based line in File
}

// ReadRows is [Source.Read] with rows rather than entries.
func (s Source) ReadRows(ctx context.Context, fn func(Row) error) error {
	switch s.Kind {
	case KindInline:
		return s.readInline(ctx, fn)
	case KindCSV:
		return s.readCSV(ctx, fn)
	case KindText:
		return s.readText(ctx, fn)
	}
	return fmt.Errorf("read source: unknown kind %d", s.Kind)
}

// Render renders the body for one recipient: vars plus "phone" (the E.164
// number). A missing variable is an error that names it. Render neither keeps
// nor changes vars, and is safe for concurrent use.
func (c *Campaign) Render(vars map[string]string, phone string) (string, error) {
	return c.render(vars, phone)
}

// RenderRow is [Campaign.Render] for a row: its columns plus "phone".
func (c *Campaign) RenderRow(r Row, phone string) (string, error) {
	return c.renderFields(r.Columns, r.Values, phone)
}

// Personalised reports whether the body uses any per-recipient variable; when
// it does not, one rendering serves every recipient.
func (c *Campaign) Personalised() bool {
	return c.personalised()
}

// Files returns the campaign file, its project file, its price table and
// every list file it reads, in the order they appear, without repeats (for
// the saved plan's checksums).
func (c *Campaign) Files() []string {
	files := []string{c.Path}
	seen := map[string]bool{c.Path: true}
	if c.Project != nil {
		files = append(files, c.Project.Path)
		seen[c.Project.Path] = true
	}
	if c.Prices != nil {
		files = append(files, c.Prices.Path)
		seen[c.Prices.Path] = true
	}
	for _, sources := range [][]Source{c.Recipients, c.Exclude} {
		for _, s := range sources {
			if s.Kind == KindInline || seen[s.Path] {
				continue
			}
			seen[s.Path] = true
			files = append(files, s.Path)
		}
	}
	return files
}

// Error is a problem in a campaign or list file.
type Error struct {
	File  string
	Line  int    // 0 when the problem has no line (a missing file)
	Field string // the key or column, "" when none applies
	Msg   string
	Hint  string // what to do, "" when obvious
}

// Error formats the problem as "file:line: field: msg", leaving out the parts
// that are empty. The hint is not part of it: the CLI prints it on its own line.
// The file and the field come from outside (a folder's name, a key as
// written) and are shown with [Plain]: a line break in them is escaped
// and quoted, so that it cannot start a line of its own, one that would
// read as smsform's (a hint).
func (e *Error) Error() string {
	loc := Plain(e.File)
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, e.Line)
	}
	if e.Field != "" {
		return loc + ": " + Plain(e.Field) + ": " + e.Msg
	}
	return loc + ": " + e.Msg
}
