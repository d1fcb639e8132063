package compliance

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/smsform/smsform/internal/words"
)

// Template is a DLT content template as registered in India: fixed text
// and {#var#} placeholders, each standing for a variable of at most
// MaxVariable characters. A rendered message must be the template with its
// variables filled in.
type Template struct {
	rule        *Rule
	text        string
	fixed       []string // the fixed text around the placeholders: one more than there are variables
	maxVariable int
}

// A body is matched by walking the template's fixed texts (fits, split),
// not by a regular expression: one that bounds each variable, .{0,30},
// grows with the variables times their limit (at 1,000 characters, a
// hundred variables took most of a second to compile and 1,700 did not
// compile at all), and one with a group per variable takes minutes on a
// template of thousands.

// placeholder finds anything written {#…#}.
var placeholder = regexp.MustCompile(`\{#([^#{}]*)#\}`)

// maxRepeat is the longest variable a campaign may allow.
const maxRepeat = 1000

// MaxVariableLimit is the longest a campaign's dlt.max_variable may make a
// variable, in characters.
const MaxVariableLimit = maxRepeat

// DLTMaxVariable is the longest a variable may be under the rule that
// checks DLT templates, when a campaign sets no limit of its own; 0 when
// no rule checks them.
func (r *Rules) DLTMaxVariable() int {
	for _, x := range r.All() {
		if x.Check == CheckDLT {
			return x.MaxVariable
		}
	}
	return 0
}

// Template reads a campaign's DLT template for the rule set's dlt rule;
// maxVariable 0 takes the rule's limit. It returns nil and no error when no
// loaded rule set checks templates.
func (r *Rules) Template(text string, maxVariable int) (*Template, error) {
	var rule *Rule
	for _, x := range r.All() {
		if x.Check == CheckDLT {
			rule = x
			break
		}
	}
	if rule == nil {
		return nil, nil
	}
	if maxVariable == 0 {
		maxVariable = rule.MaxVariable
	}
	if maxVariable < 1 || maxVariable > maxRepeat {
		return nil, fmt.Errorf("the longest variable must be 1 to %d characters, not %d", maxRepeat, maxVariable)
	}
	t := &Template{rule: rule, text: text, maxVariable: maxVariable}
	if err := t.parse(); err != nil {
		return nil, err
	}
	return t, nil
}

// parse splits the template at its placeholders.
func (t *Template) parse() error {
	if strings.TrimSpace(t.text) == "" {
		return errors.New("the template is empty: copy it as registered on the DLT platform")
	}
	last := 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(t.text, -1) {
		if name := t.text[m[2]:m[3]]; name != "var" {
			return fmt.Errorf("placeholder {#%s#} is not one smsform knows: write each variable part as {#var#}", name)
		}
		t.fixed = append(t.fixed, t.text[last:m[0]])
		last = m[1]
	}
	t.fixed = append(t.fixed, t.text[last:])
	for _, f := range t.fixed {
		if strings.Contains(f, "{#") || strings.Contains(f, "#}") {
			return fmt.Errorf("the template has an unfinished placeholder in %q: write each variable part as {#var#}", f)
		}
	}
	return nil
}

// fits reports whether body is the template filled in, each variable at
// most maxVariable characters: whether some choice of where each fixed
// text of the template stands in body, in order, leaves every variable
// within the limit (as a regular expression of .{0,max} would, without
// its size). It keeps, fixed text after fixed text, the positions where
// the next variable may start, ascending; an occurrence of the next fixed
// text is reachable when the latest start before it is close enough, the
// variable's length only shrinking as its start moves right.
func (t *Template) fits(body string) bool {
	first, last := t.fixed[0], t.fixed[len(t.fixed)-1]
	if len(t.fixed) == 1 {
		return body == first
	}
	if len(body) < len(first)+len(last) || !strings.HasPrefix(body, first) || !strings.HasSuffix(body, last) {
		return false
	}
	end := len(body) - len(last) // where the last variable ends
	starts := []int{len(first)}
	for _, f := range t.fixed[1 : len(t.fixed)-1] {
		var next []int
		j := 0 // starts[j] is the latest start at or before p
		for p := starts[0]; p+len(f) <= end; {
			i := strings.Index(body[p:end], f)
			if i < 0 {
				break
			}
			p += i
			if p-starts[len(starts)-1] > utf8.UTFMax*t.maxVariable {
				break // too far from every start: so is every later occurrence
			}
			for j+1 < len(starts) && starts[j+1] <= p {
				j++
			}
			if t.within(body[starts[j]:p]) {
				next = append(next, p+len(f))
			}
			if p == end {
				break
			}
			_, size := utf8.DecodeRuneInString(body[p:end]) // the next character: a variable holds whole ones
			p += size
		}
		if len(next) == 0 {
			return false
		}
		starts = next
	}
	j := len(starts) - 1
	for j > 0 && starts[j] > end {
		j--
	}
	return starts[j] <= end && t.within(body[starts[j]:end])
}

// within reports whether a variable's text v is at most maxVariable
// characters (an invalid byte counts as one, as it is sent).
func (t *Template) within(v string) bool {
	switch {
	case len(v) <= t.maxVariable:
		return true
	case len(v) > utf8.UTFMax*t.maxVariable:
		return false
	}
	return utf8.RuneCountInString(v) <= t.maxVariable
}

// split returns where each variable of body starts and ends when body is
// the template filled in with variables of any length, each as short as
// the rest allows (the first occurrence of each fixed text); false when
// the body lacks the template's fixed texts. The first occurrence leaves
// the most room for the fixed texts after it, so when it fails, every
// later one does.
func (t *Template) split(body string) (bounds [][2]int, ok bool) {
	first, last := t.fixed[0], t.fixed[len(t.fixed)-1]
	if len(t.fixed) == 1 || len(body) < len(first)+len(last) || !strings.HasPrefix(body, first) || !strings.HasSuffix(body, last) {
		return nil, false
	}
	end := len(body) - len(last)
	p := len(first)
	for _, f := range t.fixed[1 : len(t.fixed)-1] {
		i := strings.Index(body[p:end], f)
		if i < 0 {
			return nil, false
		}
		bounds = append(bounds, [2]int{p, p + i})
		p += i + len(f)
	}
	return append(bounds, [2]int{p, end}), true
}

// Variables is how many {#var#} the template has.
func (t *Template) Variables() int { return len(t.fixed) - 1 }

// MaxVariable is the longest a variable may be, in characters.
func (t *Template) MaxVariable() int { return t.maxVariable }

// Rule is the dlt rule the template is checked for.
func (t *Template) Rule() *Rule { return t.rule }

// Check returns why body is not the template filled in, or nil. Its words
// quote the template's fixed text, never the body's variables.
func (t *Template) Check(body string) *Violation {
	if t.fits(body) {
		return nil
	}
	if bounds, ok := t.split(body); ok {
		for v, b := range bounds {
			if n := utf8.RuneCountInString(body[b[0]:b[1]]); n > t.maxVariable {
				return &Violation{Rule: t.rule, Problem: fmt.Sprintf("variable %d of the template is %d characters, longer than %d", v+1, n, t.maxVariable)}
			}
		}
	}
	return &Violation{Rule: t.rule, Problem: t.mismatch(body)}
}

// mismatch says which fixed text of the template the body lacks.
func (t *Template) mismatch(body string) string {
	first, last := t.fixed[0], t.fixed[len(t.fixed)-1]
	if !strings.HasPrefix(body, first) {
		return fmt.Sprintf("the message does not start with the template's text %q", words.Clip(first, 39))
	}
	if len(t.fixed) == 1 {
		return "the message is not the template's text (the template has no {#var#})"
	}
	rest := body[len(first):]
	for _, f := range t.fixed[1 : len(t.fixed)-1] {
		i := strings.Index(rest, f)
		if i < 0 {
			return fmt.Sprintf("the template's text %q is not in the message where the template has it", words.Clip(f, 39))
		}
		rest = rest[i+len(f):]
	}
	if !strings.HasSuffix(rest, last) {
		return fmt.Sprintf("the message does not end with the template's text %q", words.Clip(last, 39))
	}
	return "the message is not the template filled in"
}
