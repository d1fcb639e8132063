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
//
// An opt-out word counts where it stands as a word of its own (not joined
// to letters or digits, nor by _ # / @ \ or by - . ' to a word: "non-stop",
// "x.co/stop", "#STOP" and "stop_here" hold none) and reads as an
// instruction: right after reply, text, txt, send, sms or to, or right
// before to, at, = or : ("reply stop", "stop to end"; not "don't stop
// shopping"), or written in capitals as the rule gives it ("STOP") among
// words that are not (not "NON STOP DEALS", "BUS STOP 5").
func (r *Rules) CheckBody(body string, kind Kind) []*Violation {
	var out []*Violation
	for _, rule := range r.byKind[kindIndex(kind)].body {
		var problem string
		switch rule.Check {
		case CheckOptOut:
			if !hasOptOut(body, rule) {
				problem = "the body has none of " + rule.WordsChecked() + " as an opt-out instruction"
			}
		case CheckGSM7:
			problem = gsm7Problem(body)
		}
		if problem != "" {
			out = append(out, &Violation{Rule: rule, Problem: problem})
		}
	}
	return out
}

// CheckFixedText returns the opt-out rules that text, a template's own
// text with each action (a recipient's variable, say) replaced by a
// separator, breaks. A word that reaches a message only through a
// variable's value is not relied on: the campaign's text must carry it for
// every recipient, whatever their row holds.
func (r *Rules) CheckFixedText(text string, kind Kind) []*Violation {
	var out []*Violation
	for _, rule := range r.byKind[kindIndex(kind)].body {
		if rule.Check == CheckOptOut && !hasOptOut(text, rule) {
			out = append(out, &Violation{Rule: rule, Problem: "the body's own text has none of " + rule.WordsChecked() +
				" as an opt-out instruction (one that comes only from a recipient's variable is not relied on)"})
		}
	}
	return out
}

// WordsChecked names the words an opt_out rule looks for, its own and
// those opt_out_words add: "the opt-out words STOP, UNSUBSCRIBE (and ARRET,
// from opt_out_words)".
func (r *Rule) WordsChecked() string {
	s := "the opt-out words " + strings.Join(r.Words, ", ")
	if len(r.Extra) > 0 {
		s += " (and " + strings.Join(r.Extra, ", ") + ", from opt_out_words)"
	}
	return s
}

func hasOptOut(body string, rule *Rule) bool {
	for _, w := range rule.Words {
		if containsWord(body, w) {
			return true
		}
	}
	for _, w := range rule.Extra {
		if containsWord(body, w) {
			return true
		}
	}
	return false
}

// containsWord reports whether body holds word, case aside, standing as a
// word of its own and read as an instruction (see CheckBody). White space
// in word matches any run of white space in body: "OPT OUT" is in
// "opt\nout", "opt  out" and "opt\u00a0out".
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
		if end, ok := matchAt(body, i, word); ok && !joined(body, i, end) && instruction(body, i, end) {
			return true
		}
		_, n := utf8.DecodeRuneInString(body[i:])
		i += n
	}
	return false
}

// joined reports whether body[start:end] is joined to something else: a
// letter, digit, mark or invisible format character beside it; _ # / @ \
// beside it (a name, a hashtag, a link); or - . ' beside it with a letter
// or digit beyond ("non-stop", "stop.com", "STOP's").
func joined(body string, start, end int) bool {
	before, bn := utf8.DecodeLastRuneInString(body[:start])
	after, an := utf8.DecodeRuneInString(body[end:])
	if start == 0 {
		before, bn = utf8.RuneError, 0
	}
	if end == len(body) {
		after, an = utf8.RuneError, 0
	}
	if wordRune(before) || wordRune(after) || hardJoin(before) || hardJoin(after) {
		return true
	}
	if softJoin(before) {
		if r, _ := utf8.DecodeLastRuneInString(body[:start-bn]); start-bn > 0 && wordRune(r) {
			return true
		}
	}
	if softJoin(after) {
		if r, _ := utf8.DecodeRuneInString(body[end+an:]); end+an < len(body) && wordRune(r) {
			return true
		}
	}
	return false
}

func hardJoin(r rune) bool {
	return r == '_' || r == '#' || r == '/' || r == '@' || r == '\\' || r != utf8.RuneError && unicode.Is(unicode.Cf, r)
}

func softJoin(r rune) bool { return r == '-' || r == '.' || r == '\'' || r == '’' }

// instruction reports whether body[start:end], an opt-out word, reads as
// an instruction (see CheckBody).
func instruction(body string, start, end int) bool {
	prev := lastWord(body[:start])
	rest := strings.TrimLeftFunc(body[end:], quoteOrSpace)
	// In capitals among words that are not ("Soldes ! STOP SMS au 36000",
	// "Sale! ARRET"): an instruction in any language. Among capitals it is
	// a headline's word ("NON STOP DEALS", "BUS STOP 5").
	if capitals(body[start:end]) && !capitals(prev) && !capitals(firstWord(rest)) {
		return true
	}
	for _, w := range [...]string{"reply", "text", "txt", "send", "sms", "to"} {
		if strings.EqualFold(prev, w) {
			return true
		}
	}
	if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ":") {
		return true
	}
	next := firstWord(rest)
	return strings.EqualFold(next, "to") || strings.EqualFold(next, "at")
}

// capitals reports whether every letter of s is a capital, and s has one.
func capitals(s string) bool {
	letters := false
	for _, r := range s {
		if unicode.IsLetter(r) {
			if !unicode.IsUpper(r) {
				return false
			}
			letters = true
		}
	}
	return letters
}

func quoteOrSpace(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune("\"'“”‘’«»()", r)
}

// lastWord is the run of letters that ends s, quotes and space aside.
func lastWord(s string) string {
	s = strings.TrimRightFunc(s, quoteOrSpace)
	i := len(s)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsLetter(r) {
			break
		}
		i -= n
	}
	return s[i:]
}

// firstWord is the run of letters that starts s.
func firstWord(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) {
			break
		}
		i += n
	}
	return s[:i]
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
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r))
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
