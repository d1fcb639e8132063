package campaign

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

const (
	// maxRecord bounds one CSV record or text line, so that a 10 MB file
	// without line breaks is a clear error rather than 10 MB in memory.
	maxRecord = 64 << 10
	// ctxEvery is how many entries Read handles between looks at ctx.
	ctxEvery = 1000
)

// buildSources resolves each source's file against the campaign's folder and
// checks that it can be read.
func (l *loader) buildSources(c *Campaign, list string, raw []rawSource, pos []sourcePos) []Source {
	out := make([]Source, 0, len(raw))
	for i, r := range raw {
		path := fmt.Sprintf("%s[%d]", list, i)
		s := Source{Line: pos[i].line}
		if pos[i].hasNumbers {
			s.Kind = KindInline
			s.Numbers = r.Numbers
			s.numberLines = pos[i].numberLines
			s.campaignFile = c.Path
			out = append(out, s)
			continue
		}
		s.File = r.File
		s.Path = r.File
		if !filepath.IsAbs(s.Path) {
			s.Path = filepath.Join(c.Dir, r.File)
		}
		fileLine := l.lines[path+".file"]
		switch ext := strings.ToLower(filepath.Ext(r.File)); ext {
		case ".csv":
			s.Kind = KindCSV
			s.PhoneColumn = r.PhoneColumn
			if s.PhoneColumn == "" {
				s.PhoneColumn = "phone"
			}
		case ".txt":
			s.Kind = KindText
			if pos[i].hasColumn {
				l.add(l.lines[path+".phone_column"], path+".phone_column", "remove it, or use a .csv file with a header row", "phone_column applies only to CSV files, and %s is a text file", Plain(r.File))
				continue
			}
		default:
			l.add(fileLine, path+".file", "save the list as .csv (with a header row) or .txt (one number per line)", "%s is neither a .csv nor a .txt file", Quote(r.File))
			continue
		}
		if err := checkReadable(s.Path); err != "" {
			l.add(fileLine, path+".file", "paths are relative to the campaign file's folder, "+Plain(c.Dir), "list %s: %s", Plain(s.Path), err)
			continue
		}
		if real, leaves := linkLeaves(c, s.Path); leaves {
			l.add(fileLine, path+".file", linkHint(c, real), "list %s: is a symbolic link to %s, %s", Plain(s.Path), Plain(real), outsideWords(c))
			continue
		}
		s.Escapes = escapes(c.Dir, s.Path)
		out = append(out, s)
	}
	return out
}

// checkReadable returns why path cannot be read as a list, or "".
func checkReadable(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return fileProblem(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileProblem(err)
	}
	if !fi.Mode().IsRegular() {
		return "not a regular file"
	}
	return ""
}

// escapes reports whether path lies outside dir, either as written (..) or
// once symbolic links are followed. Such lists are allowed — shared opt-out
// lists often live elsewhere — but a reviewer should know.
func escapes(dir, path string) bool {
	if outside(dir, path) {
		return true
	}
	realDir, err1 := filepath.EvalSymlinks(dir)
	realPath, err2 := filepath.EvalSymlinks(path)
	if err1 != nil || err2 != nil {
		return true
	}
	return outside(realDir, realPath)
}

// outside reports whether path, as written, lies outside dir.
func outside(dir, path string) bool {
	absDir, err1 := filepath.Abs(dir)
	absPath, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return true
	}
	rel, err := filepath.Rel(absDir, absPath)
	return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// linkLeaves reports whether a symbolic link takes the list at path where
// its campaign file does not say: out of the campaign's folder (or, in a
// project, the project's) when the path is written inside it, or out of
// the list's own folder when the path is written outside (../common/x.csv,
// which the reviewer sees and plan reports). A link in a pull request is
// easy to miss, and would let a list read any file the runner can, such as
// /etc/passwd. It returns the file the link leads to.
func linkLeaves(c *Campaign, path string) (real string, leaves bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false // checkReadable said why it cannot be read
	}
	roots := []string{c.Dir}
	if c.Project != nil {
		roots = append(roots, c.Project.Dir)
	}
	written := false // inside one of roots, as written
	for _, root := range roots {
		if outside(root, path) {
			continue
		}
		written = true
		if realRoot, err := filepath.EvalSymlinks(root); err == nil && !outside(realRoot, real) {
			return real, false
		}
	}
	if written {
		return real, true
	}
	realDir, err := filepath.EvalSymlinks(filepath.Dir(path))
	return real, err != nil || outside(realDir, real)
}

func outsideWords(c *Campaign) string {
	if c.Project != nil {
		return "outside the campaign's folder and its project's"
	}
	return "outside the campaign's folder"
}

func linkHint(c *Campaign, real string) string {
	return "write the list's own path in " + Plain(filepath.Base(c.Path)) + " (file: " + Plain(real) +
		"), so that reviewers see where it comes from, or copy the list into the campaign's folder"
}

// listErr is a problem in the list at line. Its path and field (a column
// name) are shown with [Plain], so that a name holding backticks or line
// breaks cannot break out of the line or the code fence the error is shown in.
func (s Source) listErr(line int, field, hint, format string, args ...any) *Error {
	return &Error{File: Plain(s.path()), Line: line, Field: Plain(field), Msg: fmt.Sprintf(format, args...), Hint: hint}
}

func (s Source) path() string {
	if s.Path != "" {
		return s.Path
	}
	return s.File
}

func (s Source) readInline(ctx context.Context, fn func(Row) error) error {
	for i, raw := range s.Numbers {
		if i%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line := s.Line
		if i < len(s.numberLines) {
			line = s.numberLines[i]
		}
		if err := fn(Row{Raw: strings.TrimSpace(raw), File: s.campaignFile, Line: line}); err != nil {
			return err
		}
	}
	return nil
}

func (s Source) readText(ctx context.Context, fn func(Row) error) error {
	f, err := os.Open(s.path())
	if err != nil {
		return s.listErr(0, "", "", "%s", fileProblem(err))
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), maxRecord)
	line, n := 0, 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return s.listErr(line, "", "a list is a text file with one number per line", "file holds binary data (a NUL byte)")
		}
		if !utf8.Valid(b) {
			return s.listErr(line, "", "save the file as UTF-8", "line is not valid UTF-8 text")
		}
		text := strings.TrimSpace(string(b))
		if text == "" || text[0] == '#' {
			continue
		}
		if n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n++
		if err := fn(Row{Raw: text, File: s.path(), Line: line}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return s.listErr(line+1, "", "a list holds one phone number per line", "line is longer than %d bytes", maxRecord)
		}
		return s.listErr(line, "", "", "read: %s", Plain(err.Error()))
	}
	return nil
}

var utf8BOM = []byte("\uFEFF")

func (s Source) readCSV(ctx context.Context, fn func(Row) error) error {
	f, err := os.Open(s.path())
	if err != nil {
		return s.listErr(0, "", "", "%s", fileProblem(err))
	}
	defer f.Close()
	guard := &recordGuard{r: f}
	r := csv.NewReader(guard)
	r.ReuseRecord = true // the strings are new each time; only the slice is reused
	guard.csv = r

	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return s.listErr(0, "", "the first line names the columns, e.g. \"phone,name\"", "file is empty: a CSV list needs a header row")
	}
	if err != nil {
		return s.csvErr(err, guard)
	}
	guard.recordDone(header)
	headerLine, _ := r.FieldPos(0)
	header = slices.Clone(header)
	phoneCol, err := s.checkHeader(header, headerLine)
	if err != nil {
		return err
	}
	r.FieldsPerRecord = len(header)
	var columns []string // the header without the phone column
	for i, h := range header {
		if i != phoneCol {
			columns = append(columns, h)
		}
	}

	n := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return s.csvErr(err, guard)
		}
		guard.recordDone(rec)
		line, _ := r.FieldPos(0)
		if blank(rec) {
			continue
		}
		for i, f := range rec {
			if !utf8.ValidString(f) {
				return s.listErr(line, s.column(header, i), "save the file as UTF-8", "field is not valid UTF-8 text")
			}
		}
		if n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n++
		row := Row{Raw: strings.TrimSpace(rec[phoneCol]), File: s.path(), Line: line}
		if len(columns) > 0 {
			row.Columns = columns
			row.Values = make([]string, 0, len(columns))
			row.Values = append(row.Values, rec[:phoneCol]...)
			row.Values = append(row.Values, rec[phoneCol+1:]...)
		}
		if err := fn(row); err != nil {
			return err
		}
	}
}

// checkHeader cleans the header row in place and returns the phone column's
// index. A list outside the campaign's folder may be a file that is no list
// at all: its errors never show what it holds (see column).
func (s Source) checkHeader(header []string, line int) (int, error) {
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\uFEFF") // Excel writes one
	}
	col := s.PhoneColumn
	if col == "" {
		col = "phone"
	}
	phone := -1
	seen := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		header[i] = h
		switch {
		case !utf8.ValidString(h):
			return 0, s.listErr(line, "", "save the file as UTF-8", "header row is not valid UTF-8 text")
		case strings.ContainsFunc(h, binaryRune):
			return 0, s.listErr(line, "", "export the list as CSV (UTF-8)", "file holds binary data (a control character in the header row), not CSV text")
		case h == "":
			return 0, s.listErr(line, "", "the first line names the columns, e.g. \"phone,name\"", "column %d has no name in the header row", i+1)
		}
		if j, dup := seen[h]; dup {
			return 0, s.listErr(line, s.column(header, i), "rename one of them: column names become template variables", "column name is used twice (columns %d and %d)", j+1, i+1)
		}
		seen[h] = i
		if h == col {
			phone = i
		}
	}
	if phone < 0 {
		return 0, s.noPhoneColumn(header, col, line)
	}
	if col != "phone" {
		if _, clash := seen["phone"]; clash {
			return 0, s.listErr(line, "phone", "rename the column: .phone in the body is always the recipient's number",
				"column \"phone\" is not the phone column (%s is), and would be hidden by the recipient's number", Quote(col))
		}
	}
	return phone, nil
}

func (s Source) noPhoneColumn(header []string, col string, line int) error {
	hint := "set phone_column to the column that holds the numbers"
	if s.Escapes {
		return s.listErr(line, col, hint, "no column %s in the header row (a list outside the campaign's folder does not show its header)", Quote(col))
	}
	for _, h := range header {
		if strings.EqualFold(h, col) {
			hint = fmt.Sprintf("set phone_column: %s (names are case-sensitive)", Quote(h))
		}
	}
	return s.listErr(line, col, hint, "no column %s in the header row (columns: %s)", Quote(col), plainAll(header))
}

// column names column i of header in an error: by its name, or by its
// number in a list outside the campaign's folder, whose content an error
// never shows (it may be a file that is no list, such as /etc/passwd).
func (s Source) column(header []string, i int) string {
	if s.Escapes {
		return fmt.Sprintf("column %d", i+1)
	}
	return header[i]
}

// binaryRune reports the control characters that no text list holds.
func binaryRune(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f
}

func blank(rec []string) bool {
	for _, f := range rec {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

// csvErr turns a reading error into an *Error with the list's line.
func (s Source) csvErr(err error, g *recordGuard) error {
	var ge *guardError
	if errors.As(err, &ge) {
		return s.listErr(ge.line, "", ge.hint, "%s", ge.msg)
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		line := pe.StartLine
		switch {
		case errors.Is(pe.Err, csv.ErrFieldCount):
			return s.listErr(line, "", "every row needs as many fields as the header row; quote fields that hold commas",
				"row has a different number of fields than the header row (%d)", g.csv.FieldsPerRecord)
		case errors.Is(pe.Err, csv.ErrBareQuote):
			return s.listErr(pe.Line, "", "quote the whole field and double the quote inside: \"say \"\"hi\"\"\"", "a \" appears inside an unquoted field (column %d)", pe.Column)
		case errors.Is(pe.Err, csv.ErrQuote):
			return s.listErr(line, "", "check the quotes from this line on", "a quoted field is not closed properly")
		}
		return s.listErr(line, "", "", "invalid CSV: %v", pe.Err)
	}
	return s.listErr(0, "", "", "read: %s", Plain(err.Error()))
}

// recordGuard sits between the file and the csv.Reader. encoding/csv keeps
// reading until a record ends, however long, so the guard cuts off a record
// that grows past maxRecord; it also refuses binary data. Both errors carry
// the line they happened on.
type recordGuard struct {
	r        io.Reader
	csv      *csv.Reader
	read     int64 // bytes handed to the csv.Reader
	lines    int   // line breaks handed to the csv.Reader
	recDone  int64 // input offset where the last complete record ended
	nextLine int   // the line after the last complete record
}

type guardError struct {
	line      int
	msg, hint string
}

func (e *guardError) Error() string { return e.msg }

// recordDone notes where rec, just read, ended: the next record starts there.
func (g *recordGuard) recordDone(rec []string) {
	g.recDone = g.csv.InputOffset()
	last := len(rec) - 1
	line, _ := g.csv.FieldPos(last)
	// A quoted last field may span lines (encoding/csv turns its \r\n into \n).
	g.nextLine = line + strings.Count(rec[last], "\n") + 1
}

func (g *recordGuard) Read(p []byte) (int, error) {
	// The csv.Reader buffers ahead (4 KiB by default), so allow for that.
	if g.read-g.recDone > maxRecord+8192 {
		return 0, &guardError{line: max(g.nextLine, 1), msg: fmt.Sprintf("a record is longer than %d bytes", maxRecord),
			hint: "a list holds one recipient per line; check for a missing line break or an unclosed quote"}
	}
	n, err := g.r.Read(p)
	if i := bytes.IndexByte(p[:n], 0); i >= 0 {
		line := g.lines + bytes.Count(p[:i], []byte("\n")) + 1
		return 0, &guardError{line: line, msg: "file holds binary data (a NUL byte), not CSV text", hint: "export the list as CSV (UTF-8)"}
	}
	g.read += int64(n)
	g.lines += bytes.Count(p[:n], []byte("\n"))
	return n, err
}
