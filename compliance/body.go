package compliance

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/smsform/smsform/internal/sms"
)

// Violation is a rule a message breaks.
type Violation struct {
	Rule *Rule
	// Problem says what is wrong, in words that quote the template's
	// fixed text or a character, never a recipient's variables.
	Problem string
}

// Error words the violation with the rule, its source and date; the fix is
// Rule.Fix, for a hint.
func (v *Violation) Error() string {
	return fmt.Sprintf("%s: %s (rule %s: %s, in effect since %s)", v.Rule.Says, v.Problem, v.Rule.ID, v.Rule.Source, v.Rule.Date())
}

// CheckBody returns the rules the text of a message of a campaign of kind
// breaks (opt-out words, GSM-7), in the order of the rule sets; nil when it
// breaks none. It does not allocate when the body passes.
func (r *Rules) CheckBody(body string, kind Kind) []*Violation {
	var out []*Violation
	for _, rule := range r.byKind[kindIndex(kind)].body {
		var problem string
		switch rule.Check {
		case CheckOptOut:
			problem = optOutProblem(body, rule.Words)
		case CheckGSM7:
			problem = gsm7Problem(body)
		}
		if problem != "" {
			out = append(out, &Violation{Rule: rule, Problem: problem})
		}
	}
	return out
}

// optOutProblem says that body carries none of words, or "" when it does.
func optOutProblem(body string, words []string) string {
	for _, w := range words {
		if containsWord(body, w) {
			return ""
		}
	}
	return "the body has none of the opt-out words " + strings.Join(words, ", ")
}

// containsWord reports whether body holds word, case aside, with no letter
// or digit right before or after it ("STOP" is in "Reply stop." but not in
// "nonstop"). White space in word matches any run of white space in body:
// "OPT OUT" is in "opt\nout", "opt  out" and "opt\u00a0out".
func containsWord(body, word string) bool {
	if word == "" {
		return false
	}
	first := lower(word[0])
	fast := first < utf8.RuneSelf && !unicode.IsSpace(rune(first))
	for i := 0; i < len(body); {
		if c := body[i]; fast && c < utf8.RuneSelf && lower(c) != first {
			i++ // the common case, as fast as can be
			continue
		}
		if end, ok := matchAt(body, i, word); ok {
			before, _ := utf8.DecodeLastRuneInString(body[:i])
			after, _ := utf8.DecodeRuneInString(body[end:])
			if !wordRune(before) && !wordRune(after) {
				return true
			}
		}
		_, n := utf8.DecodeRuneInString(body[i:])
		i += n
	}
	return false
}

// matchAt reports whether body holds word from byte i, case aside, a run
// of white space in word matching any run (of one or more) in body; end is
// where the match ends in body.
func matchAt(body string, i int, word string) (end int, ok bool) {
	for j := 0; j < len(word); {
		if i < len(body) && body[i] < utf8.RuneSelf && word[j] < utf8.RuneSelf && !unicode.IsSpace(rune(word[j])) {
			// ASCII both: most places in a body fail here, and fast.
			if lower(body[i]) != lower(word[j]) {
				return 0, false
			}
			i, j = i+1, j+1
			continue
		}
		wr, wn := utf8.DecodeRuneInString(word[j:])
		if unicode.IsSpace(wr) {
			j = skipSpace(word, j)
			k := skipSpace(body, i)
			if k == i {
				return 0, false
			}
			i = k
			continue
		}
		if i >= len(body) {
			return 0, false
		}
		br, bn := utf8.DecodeRuneInString(body[i:])
		if !foldEqual(wr, br) {
			return 0, false
		}
		i, j = i+bn, j+wn
	}
	return i, true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// skipSpace returns where the run of white space of s from byte i ends.
func skipSpace(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += n
	}
	return i
}

// foldEqual reports whether a and b are the same letter, case aside, as
// strings.EqualFold compares them.
func foldEqual(a, b rune) bool {
	if a == b {
		return true
	}
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}

func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// gsm7Problem names the first character that sends body as UCS-2 and where
// it is (counted in characters from 1), or "" for a GSM-7 body.
func gsm7Problem(body string) string {
	a := sms.Analyze(body)
	if a.Encoding == sms.GSM7 {
		return ""
	}
	first := a.Forcing[0]
	pos := 0
	for _, r := range body {
		pos++
		if r == first {
			break
		}
	}
	more := ""
	switch n := len(a.Forcing) - 1; {
	case n == 1:
		more = " (and 1 other character)"
	case n > 1:
		more = fmt.Sprintf(" (and %d other characters)", n)
	}
	return fmt.Sprintf("character %q (U+%04X) at position %d is not in GSM-7%s: the message would go as UCS-2 in %d segment(s), %d in GSM-7",
		first, first, pos, more, a.Segments, a.SegmentsIfGSM7)
}
