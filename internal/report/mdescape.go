package report

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The markdown comment is posted where a pull request's readers see it
// rendered, so text from outside (paths, list headers and values, bodies,
// the provider's reasons, warnings that quote them) is written for the
// place it lands in, so that it only ever renders as the text it is:
// nothing in it closes a <details>, opens an HTML comment, starts a link,
// a table cell or emphasis, mentions a user or a team (@), refers to an
// issue (#12), or leaves its code fence. GitHub's own markup is the
// reference: CommonMark with its table, strikethrough, autolink and math
// extensions.

// mdSpecial are the characters that markdown, GitHub's included, may read
// as markup inside a line; each is escaped with a backslash.
const mdSpecial = "\\`*_[]<>|~&$!"

// zwsp, a zero-width space, breaks what GitHub links after rendering
// (mentions, issue references, www. and scheme:// links) without
// changing what a reader sees: "@\u200bteam" mentions nobody.
const zwsp = "\u200b"

// mdText writes text from outside inside a line of the comment: a
// paragraph, a list item or a table cell, never at a line's start.
func mdText(s string) string {
	// Spaces at either end are dropped: before a closing ** they would
	// undo the emphasis the text is set in.
	s = strings.TrimSpace(oneLine(s))
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	prev := ' '
	for i, r := range s {
		switch {
		case r == '_' && isWordRune(prev) && isWordRune(nextRune(s, i)):
			b.WriteRune(r) // max_total: inside a word, _ is never emphasis
		case strings.ContainsRune(mdSpecial, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '@' || r == '#':
			b.WriteRune(r)
			b.WriteString(zwsp)
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	return breakLinks(b.String())
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// nextRune is the rune after the one at byte i of s, or a space.
func nextRune(s string, i int) rune {
	_, size := utf8.DecodeRuneInString(s[i:])
	if i+size >= len(s) {
		return ' '
	}
	r, _ := utf8.DecodeRuneInString(s[i+size:])
	return r
}

// breakLinks stops GitHub from making links of www. and scheme:// text.
func breakLinks(s string) string {
	if !strings.Contains(s, "://") && !strings.Contains(strings.ToLower(s), "www.") {
		return s
	}
	s = strings.ReplaceAll(s, "://", ":"+zwsp+"//")
	var b strings.Builder
	for {
		i := strings.Index(strings.ToLower(s), "www.")
		if i < 0 {
			break
		}
		b.WriteString(s[:i+3] + zwsp)
		s = s[i+3:]
	}
	b.WriteString(s)
	return b.String()
}

// mdCode writes s as a code span on one line. In a table cell (cell), a
// | ends the cell even inside a code span, so it is escaped there too.
func mdCode(s string, cell bool) string {
	s = oneLine(s)
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ") && strings.Trim(s, " ") != "") {
		s = " " + s + " " // CommonMark takes one space off each side
	}
	if cell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	return fence + s + fence
}

// mdFence writes text as a fenced code block, every line after the first
// indented by indent (inside a list item): the fence is longer than any
// run of backticks in it, and every line break in it is one the fence's
// indentation follows. Other controls, a carriage return among them, are
// written as visible escapes on their line (see [visibleLines]), and a
// line wider than the comment is wrapped, exactly, with a note under the
// block that says how (see [wrapExact]).
func mdFence(text, indent string) string {
	text, wrapped := wrapExact(visibleLines(text), fenceWidth-len(indent))
	fence := codeFence(text)
	block := fence + "\n" + indent + strings.ReplaceAll(text, "\n", "\n"+indent) + "\n" + indent + fence
	if wrapped {
		block += "\n\n" + indent + wrapNote
	}
	return block
}

// codeFence returns a fence longer than any run of backticks in body.
func codeFence(body string) string {
	return strings.Repeat("`", max(3, longestRun(body, '`')+1))
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// mdSummary writes text inside a <details>' <summary>: HTML, in which
// markdown is not read, escaped as HTML.
func mdSummary(text string) string {
	s := html.EscapeString(oneLine(text))
	s = strings.ReplaceAll(s, "@", "@"+zwsp)
	return "<details><summary>" + breakLinks(s) + "</summary>"
}
