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
	exact       *regexp.Regexp // the template, each variable at most maxVariable characters
	loose       *regexp.Regexp // the template, variables of any length
}

// placeholder finds anything written {#…#}.
var placeholder = regexp.MustCompile(`\{#([^#{}]*)#\}`)

// maxRepeat is the longest variable a regular expression can bound.
const maxRepeat = 1000

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

// parse splits the template at its placeholders and compiles the matchers.
func (t *Template) parse() error {
	if strings.TrimSpace(t.text) == "" {
		return errors.New("the template is empty: copy it as registered on the DLT platform")
	}
	var exact, loose strings.Builder
	exact.WriteString(`(?s)^`)
	loose.WriteString(`(?s)^`)
	last := 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(t.text, -1) {
		if name := t.text[m[2]:m[3]]; name != "var" {
			return fmt.Errorf("placeholder {#%s#} is not one smsform knows: write each variable part as {#var#}", name)
		}
		t.addFixed(&exact, &loose, t.text[last:m[0]])
		fmt.Fprintf(&exact, `(.{0,%d})`, t.maxVariable)
		loose.WriteString(`(.*?)`)
		last = m[1]
	}
	t.addFixed(&exact, &loose, t.text[last:])
	for _, f := range t.fixed {
		if strings.Contains(f, "{#") || strings.Contains(f, "#}") {
			return fmt.Errorf("the template has an unfinished placeholder in %q: write each variable part as {#var#}", f)
		}
	}
	exact.WriteString(`$`)
	loose.WriteString(`$`)
	t.exact = regexp.MustCompile(exact.String()) // quoted text and bounded repeats: always compiles
	t.loose = regexp.MustCompile(loose.String())
	return nil
}

func (t *Template) addFixed(exact, loose *strings.Builder, s string) {
	t.fixed = append(t.fixed, s)
	exact.WriteString(regexp.QuoteMeta(s))
	loose.WriteString(regexp.QuoteMeta(s))
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
	if t.exact.MatchString(body) {
		return nil
	}
	if m := t.loose.FindStringSubmatchIndex(body); m != nil {
		for v := 1; 2*v < len(m); v++ {
			if n := utf8.RuneCountInString(body[m[2*v]:m[2*v+1]]); n > t.maxVariable {
				return &Violation{Rule: t.rule, Problem: fmt.Sprintf("variable %d of the template is %d characters, longer than %d", v, n, t.maxVariable)}
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
