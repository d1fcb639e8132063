package campaign

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/smsform/smsform/compliance"
	"github.com/smsform/smsform/internal/words"
)

// This file reads what a campaign declares of the rules it is held to:
// kind, compliance (rule sets by name), opt_out_words and dlt, in the
// campaign file and, for all of a project's campaigns, in the project file
// (see the compliance package for what the rules are).

// Compliance is what a campaign declares of the rules it is held to.
type Compliance struct {
	// Kind is marketing (the default, the stricter) or transactional: the
	// campaign's own, else its project's.
	Kind compliance.Kind
	// Sets are the rule sets' names: the project's, then the campaign's
	// own (a campaign adds to its project's, never takes one away).
	Sets []string
	// Rules are the rule sets loaded; nil when Sets is empty.
	Rules *compliance.Rules
	// DLT is the campaign's DLT registration (the in rule set); nil when
	// it declares none. Template is its template, ready to match.
	DLT      *DLT
	Template *compliance.Template
}

// DLT is a campaign's registration on India's DLT platforms. Other keys of
// the registration (entity id, header…) may sit beside these in the file:
// they are kept for the reader and checked by nobody.
type DLT struct {
	TemplateID  string
	Template    string
	MaxVariable int // 0: the rule set's (30)
	maxWritten  bool
}

// rawCompliance is the compliance keys as written in a campaign or project
// file; the line of each key, 0 when it is absent.
type rawCompliance struct {
	kind     string
	sets     []string
	words    []string
	hasWords bool // opt_out_words is written
	dlt      *DLT
	// The line of each key, for errors that concern it; 0 when absent.
	setsLine, wordsLine, dltLine int
}

var dltKeys = []string{"template_id", "template", "max_variable"}

// complianceKey reads one of the compliance keys at the top of a campaign
// or project file; false for any other key.
func (l *loader) complianceKey(key, path string, v *yaml.Node, rc *rawCompliance) bool {
	switch key {
	case "kind":
		if l.str(v, path, &rc.kind) {
			if _, err := compliance.ParseKind(rc.kind); err != nil || rc.kind == "" {
				l.add(v.Line, path, "write kind: marketing (the default) or kind: transactional", "%s is not a kind of campaign", Quote(rc.kind))
			}
		}
	case "compliance":
		rc.setsLine = v.Line
		rc.sets = l.ruleSets(v, path)
	case "opt_out_words":
		rc.hasWords, rc.wordsLine = true, v.Line
		rc.words = l.wordList(v, path)
	case "dlt":
		rc.dltLine = v.Line
		rc.dlt = l.dlt(v, path)
	default:
		return false
	}
	return true
}

// ruleSets reads a list of rule set names.
func (l *loader) ruleSets(v *yaml.Node, path string) []string {
	known := compliance.Known()
	hint := fmt.Sprintf("write compliance: [%s], naming the rule sets the campaign is held to", strings.Join(known, ", "))
	if v.Kind != yaml.SequenceNode {
		l.add(v.Line, path, hint, "must be a list of rule sets, not %s", kindWords(v))
		return nil
	}
	var out []string
	for i, item := range v.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		var s string
		if !l.str(item, p, &s) {
			continue
		}
		switch {
		case !slices.Contains(known, s):
			l.add(item.Line, p, unknownHint(s, known), "unknown rule set %s: the rule sets are %s", Quote(s), strings.Join(known, ", "))
		case slices.Contains(out, s):
			l.add(item.Line, p, "remove one of them", "rule set %s is named twice", Quote(s))
		default:
			out = append(out, s)
		}
	}
	return out
}

// wordList reads opt_out_words: a list of non-empty words.
func (l *loader) wordList(v *yaml.Node, path string) []string {
	const hint = `write opt_out_words: ["STOP", "ARRET"]: a marketing body must hold one of them`
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		l.add(v.Line, path, hint, "must be a non-empty list of words, not %s", kindWords(v))
		return nil
	}
	var out []string
	for i, item := range v.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		var s string
		if !l.str(item, p, &s) {
			continue
		}
		if strings.TrimSpace(s) == "" {
			l.add(item.Line, p, hint, "an opt-out word must not be empty")
			continue
		}
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

// dlt reads dlt: {template_id, template, max_variable}; other keys of the
// registration are allowed beside them, as long as they hold text or a
// number.
func (l *loader) dlt(v *yaml.Node, path string) *DLT {
	const hint = `write dlt: {template_id: "1107161234567890123", template: "Dear {#var#}, your code is {#var#}"}`
	if v.Kind != yaml.MappingNode {
		l.add(v.Line, path, hint, "must be a mapping, not %s", kindWords(v))
		return nil
	}
	d := &DLT{}
	before := len(l.errs)
	first := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		p := join(path, k.Value)
		if line, dup := first[k.Value]; dup {
			l.add(k.Line, p, "remove one of them", "key is repeated (first on line %d)", line)
			continue
		}
		first[k.Value] = k.Line
		l.lines[p] = k.Line
		if val.ShortTag() == "!!null" {
			continue // absent, as everywhere in a campaign file
		}
		switch k.Value {
		case "template_id":
			if val.Kind == yaml.ScalarNode && (val.ShortTag() == "!!int" || val.ShortTag() == "!!float") {
				l.add(val.Line, p, fmt.Sprintf("quote it: template_id: %q (a long number loses digits)", val.Value), "the template id is written as a YAML number")
				d.TemplateID = val.Value // given, if misspelt: not "needs template_id" too
				continue
			}
			l.str(val, p, &d.TemplateID)
		case "template":
			l.str(val, p, &d.Template)
		case "max_variable":
			d.maxWritten = l.int(val, p, &d.MaxVariable) // its bounds are the rule set's: see checkDLT
		default:
			if tag := val.ShortTag(); val.Kind != yaml.ScalarNode || tag != "!!str" && tag != "!!int" && tag != "!!float" {
				l.add(val.Line, p, "keep the registration's other keys as text, e.g. entity_id: \"1101…\"", "must be text or a number, not %s", kindWords(val))
			}
		}
	}
	if strings.TrimSpace(d.TemplateID) == "" || strings.TrimSpace(d.Template) == "" {
		l.add(v.Line, path, hint, "needs template_id and template, as registered")
	}
	if len(l.errs) > before {
		return nil
	}
	return d
}

// buildCompliance settles what the campaign declares with its project's
// defaults, and loads the rule sets.
func (l *loader) buildCompliance(rc *rawCompliance) Compliance {
	var proj rawCompliance
	if l.project != nil {
		proj = l.project.compliance
	}
	c := Compliance{Kind: compliance.Marketing, DLT: rc.dlt}
	for _, k := range []string{proj.kind, rc.kind} {
		if k != "" {
			c.Kind, _ = compliance.ParseKind(k) // checked as read
		}
	}
	c.Sets = slices.Clone(proj.sets)
	for _, s := range rc.sets {
		if !slices.Contains(c.Sets, s) {
			c.Sets = append(c.Sets, s)
		}
	}
	words := proj.words
	if rc.hasWords {
		words = rc.words
	}
	if len(c.Sets) == 0 {
		l.noRuleSets(rc)
		l.projectWordsUnchecked(rc, &proj, c.Sets)
		return c
	}
	rules, err := compliance.Load(c.Sets, compliance.Options{OptOutWords: words})
	if err != nil { // the names were checked as read: the embedded tables are broken
		l.add(rc.setsLine, "compliance", "", "%v", err)
		return c
	}
	c.Rules = rules
	l.checkDLT(rc, &c)
	if rc.hasWords && l.project != nil {
		l.wordsReceived(rc.words, rc.wordsLine, l.project.Receive, l.project.Path)
	}
	if !hasCheck(rules, compliance.CheckOptOut) {
		if rc.hasWords {
			l.add(rc.wordsLine, "opt_out_words", "add us or uk to compliance, or remove opt_out_words", "no rule set of compliance checks opt-out words")
		}
		l.projectWordsUnchecked(rc, &proj, c.Sets)
	}
	return c
}

// wordsReceived refuses each word of list (opt_out_words, at line) that
// the receive block r of the project (in projectFile) would not take as a
// stop word: the message would tell people to reply ARRET, smsform receive
// would count their ARRET as any other reply, and they would be messaged
// on. Without receive the provider handles the replies, by words of its
// own.
func (l *loader) wordsReceived(list []string, line int, r *Receive, projectFile string) {
	if r == nil {
		return
	}
	stop := r.StopWords
	if stop == nil {
		stop = words.DefaultStopWords
	}
	for _, w := range list {
		if !slices.ContainsFunc(stop, func(s string) bool { return words.ReplyWord(s) == words.ReplyWord(w) }) {
			l.add(line, "opt_out_words", fmt.Sprintf("add %s to receive.stop_words (%s:%d), or leave it out", Quote(w), projectFile, r.Line),
				"%s is no stop word of the project's receive: a reply of it would not opt the number out", Quote(w))
		}
	}
}

// projectWordsUnchecked refuses the project's opt_out_words for a campaign
// whose rule sets (sets, the project's and its own) check no opt-out words
// and which says no words of its own: they would be checked by nothing.
// The error is at the project's key, naming the campaign.
func (l *loader) projectWordsUnchecked(rc, proj *rawCompliance, sets []string) {
	if !proj.hasWords || rc.hasWords || l.project == nil {
		return
	}
	held := "no rule set: these opt-out words would be checked by nothing"
	if len(sets) > 0 {
		held = "the rule sets " + strings.Join(sets, ", ") + ", none of which checks opt-out words: these would be checked by nothing"
	}
	l.addErr(&Error{File: Plain(l.project.Path), Line: proj.wordsLine, Field: "opt_out_words",
		Msg:  fmt.Sprintf("campaign %s is held to %s", Quote(l.file), held),
		Hint: "add us or uk to compliance (here, for every campaign, or in the campaign), or remove opt_out_words"})
}

// noRuleSets refuses the keys that mean something only with rule sets.
func (l *loader) noRuleSets(rc *rawCompliance) {
	if rc.dlt != nil {
		l.add(rc.dltLine, "dlt", "add compliance: [in]", "a DLT template is checked by the in rule set, which the campaign does not name")
	}
	if rc.hasWords {
		l.add(rc.wordsLine, "opt_out_words", "add compliance: [us] or [uk], or remove opt_out_words", "opt-out words are checked by a rule set, and the campaign names none")
	}
}

// checkDLT ties dlt: to the in rule set and reads its template.
func (l *loader) checkDLT(rc *rawCompliance, c *Compliance) {
	checks := hasCheck(c.Rules, compliance.CheckDLT)
	switch {
	case checks && rc.dlt == nil:
		l.add(rc.setsLine, "compliance", `add dlt: {template_id: "…", template: "Dear {#var#}, …"} as registered on the DLT platform`,
			"the in rule set checks every message against the campaign's DLT template, and the campaign gives none")
	case !checks && rc.dlt != nil:
		l.add(rc.dltLine, "dlt", "add in to compliance", "a DLT template is checked by the in rule set, which compliance does not name")
	case checks:
		if d := rc.dlt; d.maxWritten && (d.MaxVariable < 1 || d.MaxVariable > compliance.MaxVariableLimit) {
			hint := fmt.Sprintf("write the longest a variable may be, 1 to %d characters, or leave max_variable out for the rule set's limit of %d",
				compliance.MaxVariableLimit, c.Rules.DLTMaxVariable())
			if d.MaxVariable < 1 {
				l.add(l.lines["dlt.max_variable"], "dlt.max_variable", hint, "%d is too small: the least allowed is 1", d.MaxVariable)
			} else {
				l.add(l.lines["dlt.max_variable"], "dlt.max_variable", hint, "%d is too large: the most allowed is %d", d.MaxVariable, compliance.MaxVariableLimit)
			}
			return
		}
		tpl, err := c.Rules.Template(rc.dlt.Template, rc.dlt.MaxVariable)
		if err != nil {
			l.add(l.lines["dlt.template"], "dlt.template", "copy the template as registered on the DLT platform", "%v", err)
			return
		}
		c.Template = tpl
	}
}

// SetsHours reports whether a rule set sets the hours of some of the
// campaign's recipients: the plan then looks up their time zones.
func (c Compliance) SetsHours() bool {
	if c.Rules == nil {
		return false
	}
	return slices.ContainsFunc(c.Rules.All(), func(r *compliance.Rule) bool {
		return r.Check == compliance.CheckHours && r.Concerns(c.Kind)
	})
}

func hasCheck(r *compliance.Rules, check compliance.Check) bool {
	return slices.ContainsFunc(r.All(), func(rule *compliance.Rule) bool { return rule.Check == check })
}
