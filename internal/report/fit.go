package report

import (
	"io"
	"strings"

	"github.com/clipperhouse/displaywidth"

	"github.com/smsform/smsform/internal/words"
)

// Every table fits the width it is given (Output.Width: the terminal's,
// else $COLUMNS, else 80; 0 for none): first its less useful columns are
// shortened or dropped, in the order the table gives (shrink), while its
// text columns could not keep their least width; then its widest text
// column is cut, again and again, until the table fits. A table is never
// wrapped.

// cutFrom says where a text column is cut: at its end (a body, a reason)
// or at its start (a path, whose end names the file and line).
type cutFrom int

const (
	cutNever cutFrom = iota
	cutEnd
	cutStart
)

// column is a table's column before it is fitted.
type column struct {
	header string
	cells  []string
	cut    cutFrom
	least  int // a text column is not cut below this while shrinking helps
}

// grid is a table to fit: its columns, and how to make it narrower, least
// useful first. A step shortens or drops columns; it reports false when
// it had nothing to do.
type grid struct {
	cols   []column
	shrink []func(g *grid) bool
}

// add appends a column.
func (g *grid) add(c column) { g.cols = append(g.cols, c) }

// drop removes the column headed header.
func (g *grid) drop(header string) bool {
	for i, c := range g.cols {
		if c.header == header {
			g.cols = append(g.cols[:i], g.cols[i+1:]...)
			return true
		}
	}
	return false
}

// col is the column headed header, or nil.
func (g *grid) col(header string) *column {
	for i := range g.cols {
		if g.cols[i].header == header {
			return &g.cols[i]
		}
	}
	return nil
}

// width is how wide a column is written: its widest cell or header.
func (c *column) width() int {
	w := displaywidth.String(c.header)
	for _, s := range c.cells {
		w = max(w, displaywidth.String(s))
	}
	return w
}

// frame is what a table takes besides its cells' text: a ruled one a
// border and three columns a cell; a plain one two spaces between cells.
func frame(n int, plain bool) int {
	if plain {
		return 2 * max(n-1, 0)
	}
	return 1 + 3*n
}

// fit makes g fit width (0: leave it as it is).
func (g *grid) fit(width int, plain bool) {
	if width <= 0 {
		return
	}
	for _, step := range g.shrink {
		if g.least(plain) <= width {
			break
		}
		step(g)
	}
	widths := make([]int, len(g.cols))
	total := frame(len(g.cols), plain)
	for i := range g.cols {
		widths[i] = g.cols[i].width()
		total += widths[i]
	}
	// The widest text column loses one column at a time: first down to
	// each column's least, then below it if the table still does not fit
	// (never below 3: "ab…").
	for _, floor := range []bool{true, false} {
		for total > width {
			k := -1
			for i, c := range g.cols {
				limit := 3
				if floor {
					limit = max(c.least, 3)
				}
				if c.cut != cutNever && widths[i] > limit && (k < 0 || widths[i] > widths[k]) {
					k = i
				}
			}
			if k < 0 {
				break
			}
			widths[k]--
			total--
		}
	}
	for i := range g.cols {
		c := &g.cols[i]
		if c.cut == cutNever || widths[i] >= c.width() {
			continue
		}
		for j, s := range c.cells {
			c.cells[j] = cutText(s, widths[i], c.cut)
		}
		c.header = cutText(c.header, widths[i], cutEnd)
	}
}

// least is how wide the table would be with its text columns cut to
// their least width.
func (g *grid) least(plain bool) int {
	total := frame(len(g.cols), plain)
	for i := range g.cols {
		w := g.cols[i].width()
		if g.cols[i].cut != cutNever {
			w = min(w, max(g.cols[i].least, displaywidth.String(g.cols[i].header)))
		}
		total += w
	}
	return total
}

// cutText shortens s to n columns, marking the cut with "…".
func cutText(s string, n int, from cutFrom) string {
	if displaywidth.String(s) <= n {
		return s
	}
	if from != cutStart {
		return displaywidth.TruncateString(s, n, "…")
	}
	r := []rune(s)
	for i := 1; i < len(r); i++ {
		if tail := string(r[i:]); displaywidth.String(tail) <= n-1 {
			return "…" + tail
		}
	}
	return "…"
}

// write renders the fitted table on w.
func (g *grid) write(w io.Writer, plain bool) error {
	t := newTable(w, plain)
	header := make([]string, len(g.cols))
	for i, c := range g.cols {
		header[i] = strings.ToUpper(c.header)
	}
	t.Header(header)
	rows := 0
	if len(g.cols) > 0 {
		rows = len(g.cols[0].cells)
	}
	for r := range rows {
		row := make([]string, len(g.cols))
		for i, c := range g.cols {
			row[i] = c.cells[r]
		}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	return t.Render()
}

// oneLine is text from outside (a name, a path, a variable, a reason, what
// a provider said) as every human output writes it: on one line, its
// control and bidirectional characters (a line break, a tab, ESC, BEL,
// U+202E) written as visible escapes by [words.Visible], the one door such
// text goes through, so that it can neither act on a terminal nor start a
// line that looks like smsform's own.
func oneLine(s string) string { return words.Visible(s) }

// preview is a body on one line, its runs of white space (line breaks
// included) made one space: a glance at it, not the message as sent.
func preview(body string) string {
	return oneLine(strings.Join(strings.Fields(body), " "))
}

// visibleLines is text shown on lines of its own exactly as it is sent (a
// body, a template): its line breaks kept, every other control and
// bidirectional character made visible on the line it is on.
func visibleLines(s string) string {
	if !strings.Contains(s, "\n") {
		return words.Visible(s)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = words.Visible(l)
	}
	return strings.Join(lines, "\n")
}

// cutLine shortens one line of text to width columns (0: no limit).
func cutLine(s string, width int) string {
	if width <= 0 {
		return s
	}
	return cutText(s, width, cutEnd)
}
