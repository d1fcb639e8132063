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
// "nonstop").
func containsWord(body, word string) bool {
	n := len(word)
	for i := 0; i+n <= len(body); i++ {
		if !strings.EqualFold(body[i:i+n], word) {
			continue
		}
		before, _ := utf8.DecodeLastRuneInString(body[:i])
		after, _ := utf8.DecodeRuneInString(body[i+n:])
		if !wordRune(before) && !wordRune(after) {
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
