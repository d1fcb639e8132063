package report

import (
	"strings"

	"github.com/clipperhouse/displaywidth"
)

// Code blocks do not wrap: GitHub scrolls a long line sideways, and at a
// comment's width (about 90 monospace characters) a template is cut
// exactly where its branches start. So the comment wraps a body or a
// template itself, keeping it exact: a line too long is broken after a
// space where it can be (the space stays at the end of the line, before
// the mark) and the mark ↩ ends each piece that goes on below. Nothing is
// dropped or added but the marks and the breaks after them.

// fenceWidth is the widest line of a code block in the comment, indentation
// included.
const fenceWidth = 90

// softBreak marks where a line of a code block goes on below.
const softBreak = "↩"

// wrapExact breaks each line of text that is wider than width columns
// into pieces of at most width columns, each but the last ending with
// softBreak; wrapped reports whether it broke any.
func wrapExact(text string, width int) (out string, wrapped bool) {
	if width < 8 || displaywidth.String(text) <= width && !strings.Contains(text, "\n") {
		return text, false
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if displaywidth.String(l) > width {
			lines[i] = wrapLine(l, width)
			wrapped = true
		}
	}
	return strings.Join(lines, "\n"), wrapped
}

// wrapLine breaks one line into pieces of at most width columns, the
// mark included: after the last space that leaves the piece at least half
// full, else exactly at the width.
func wrapLine(line string, width int) string {
	var b strings.Builder
	for displaywidth.String(line) > width {
		cut, col, lastSpace := 0, 0, -1
		for i, r := range line {
			w := displaywidth.Rune(r)
			if col+w > width-1 { // room for the mark
				break
			}
			col += w
			cut = i + len(string(r))
			if r == ' ' && col >= width/2 {
				lastSpace = cut
			}
		}
		if lastSpace > 0 {
			cut = lastSpace
		}
		if cut == 0 { // a character wider than the room: take it anyway
			_, size := firstRune(line)
			cut = size
		}
		b.WriteString(line[:cut])
		b.WriteString(softBreak)
		b.WriteByte('\n')
		line = line[cut:]
	}
	b.WriteString(line)
	return b.String()
}

func firstRune(s string) (rune, int) {
	for _, r := range s {
		return r, len(string(r))
	}
	return 0, 0
}

// wrapNote is said under a code block that wrapped.
const wrapNote = "_" + softBreak + " ends a line too long for the comment, which goes on below: it is not part of the message._"

// wrapProse fits a paragraph of the table output to width columns (0:
// leaves it whole): it breaks at spaces, each line after the first
// starting with indent, and a word wider than the room (a path, a URL)
// stays whole on a line of its own rather than be broken where a reader
// could not tell. The paragraph is one line of text: what came from
// outside was made visible (oneLine) before.
func wrapProse(s string, width int, indent string) string {
	if width <= 0 || displaywidth.String(s) <= width {
		return s
	}
	var b strings.Builder
	col := 0
	for i, word := range strings.Split(s, " ") {
		w := displaywidth.String(word)
		switch {
		case i == 0:
		case col+1+w <= width:
			b.WriteByte(' ')
			col++
		default:
			b.WriteByte('\n')
			b.WriteString(indent)
			col = displaywidth.String(indent)
		}
		b.WriteString(word)
		col += w
	}
	return b.String()
}
