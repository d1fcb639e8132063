package campaign

import (
	"strconv"
	"strings"
	"unicode"
)

// Quote returns s as a double-quoted Go string literal, as strconv.Quote
// does, with every backtick written \x60. An error that echoes text from a
// campaign, a list or a header through Quote stays on its line, and inside
// the Markdown code fence that CI pastes stderr into: a header holding
// "```" cannot close the fence. The result reads back with strconv.Unquote.
func Quote(s string) string {
	return strings.ReplaceAll(strconv.Quote(s), "`", `\x60`)
}

// Plain returns s as it is when every character of it prints as itself
// and none is a backtick, and [Quote](s) otherwise. It is for the places
// where text is shown unquoted when it is ordinary, such as a path before
// ":line" or a column name before a message. Plain of its own result
// returns it unchanged.
func Plain(s string) string {
	for _, r := range s {
		if r == '`' || r == '\uFFFD' || !unicode.IsPrint(r) {
			return Quote(s)
		}
	}
	return s
}

// plainAll is [Plain] of each of names, joined with ", ".
func plainAll(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Plain(n)
	}
	return strings.Join(out, ", ")
}
