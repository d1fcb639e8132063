package compliance

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/smsform/smsform/internal/window"
)

//go:embed rules/*.yaml rules/nanp.csv
var files embed.FS

// Known returns the names of the rule sets, sorted.
func Known() []string {
	entries, _ := fs.ReadDir(files, "rules") // embedded: cannot fail
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	return names
}

// UnknownSetError is a rule set name that is none of [Known].
type UnknownSetError struct{ Name string }

func (e *UnknownSetError) Error() string {
	return fmt.Sprintf("unknown rule set %q: the rule sets are %s", e.Name, strings.Join(Known(), ", "))
}

// Options change what the rule sets check.
type Options struct {
	// OptOutWords add to the opt-out words of every opt_out rule (a
	// campaign in another language, a provider's own keyword): a body may
	// carry one of them or one of the rule's own (Rule.Extra).
	OptOutWords []string
}

// Load reads the rule sets named, in that order. A name given twice is
// read once; an unknown name is an *UnknownSetError.
func Load(names []string, o Options) (*Rules, error) {
	r := &Rules{}
	seen := map[string]bool{}
	ids := map[string]string{} // rule id -> set
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		if !slices.Contains(Known(), name) {
			return nil, &UnknownSetError{Name: name}
		}
		s, err := readSet(name)
		if err != nil {
			return nil, err
		}
		for _, rule := range s.Rules {
			if other, dup := ids[rule.ID]; dup {
				return nil, fmt.Errorf("rule sets %s and %s both have a rule %s", other, name, rule.ID)
			}
			ids[rule.ID] = name
			if rule.Check == CheckOptOut {
				rule.Extra = extraWords(rule.Words, o.OptOutWords)
			}
		}
		r.sets = append(r.sets, s)
	}
	if err := r.prepare(); err != nil {
		return nil, err
	}
	return r, nil
}

// extraWords are the words of configured that words lacks, case aside,
// each once: a configured STOP adds nothing to a rule that has it.
func extraWords(words, configured []string) []string {
	var out []string
	for _, w := range configured {
		known := func(x string) bool { return strings.EqualFold(x, w) }
		if !slices.ContainsFunc(words, known) && !slices.ContainsFunc(out, known) {
			out = append(out, w)
		}
	}
	return out
}

// rawSet and rawRule are a rule set file as written.
type rawSet struct {
	Set         string
	Title       string
	CallingCode int
	Regions     []string
	Rules       []*yaml.Node
}

type rawRule struct {
	ID          string
	Check       string
	Kinds       []string
	State       string
	Hours       string
	Max         int
	Per         string
	Words       []string
	MaxVariable int
	Says        string
	Source      string
	URL         string
	Effective   string
	Note        string
	Fix         string
}

// fields are the keys of a mapping of a rule set file and where each is
// decoded to.
type fields []struct {
	key string
	to  any // *string, *int, *[]string, *[]*yaml.Node or fields (a mapping)
}

func (s *rawSet) fields() fields {
	return fields{{"set", &s.Set}, {"title", &s.Title},
		{"numbers", fields{{"calling_code", &s.CallingCode}, {"regions", &s.Regions}}}, {"rules", &s.Rules}}
}

func (r *rawRule) fields() fields {
	return fields{{"id", &r.ID}, {"check", &r.Check}, {"kinds", &r.Kinds}, {"state", &r.State}, {"hours", &r.Hours},
		{"max", &r.Max}, {"per", &r.Per}, {"words", &r.Words}, {"max_variable", &r.MaxVariable}, {"says", &r.Says},
		{"source", &r.Source}, {"url", &r.URL}, {"effective", &r.Effective}, {"note", &r.Note}, {"fix", &r.Fix}}
}

// fileError is a mistake at a line of a rule set file: the key it
// concerns (dotted: "numbers.calling_code", "rules[2].hours") and what is
// wrong, with what to write.
type fileError struct {
	line int
	key  string
	msg  string
}

// keyLines are the lines of a mapping's keys, by key.
type keyLines map[string]int

// decodeFields decodes the mapping node into fs, the keys' paths under
// path, and returns the line of each key. It refuses a key fs lacks, a key
// given twice, and a value of the wrong kind, each at its line.
func decodeFields(node *yaml.Node, path string, fs fields, errs *[]fileError) keyLines {
	lines := keyLines{}
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.key
	}
	if node.Kind != yaml.MappingNode {
		*errs = append(*errs, fileError{node.Line, path, fmt.Sprintf("must be a mapping of keys (%s), not %s", strings.Join(names, ", "), valueWords(node))})
		return lines
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		key := joinKey(path, k.Value)
		j := slices.Index(names, k.Value)
		switch {
		case j < 0:
			*errs = append(*errs, fileError{k.Line, key, fmt.Sprintf("is not a key here: the keys are %s", strings.Join(names, ", "))})
			continue
		case lines[k.Value] != 0:
			*errs = append(*errs, fileError{k.Line, key, fmt.Sprintf("is given twice (first on line %d): remove one", lines[k.Value])})
			continue
		}
		lines[k.Value] = k.Line
		if v.ShortTag() == "!!null" {
			continue // absent
		}
		switch to := fs[j].to.(type) {
		case fields:
			for sub, line := range decodeFields(v, key, to, errs) {
				lines[k.Value+"."+sub] = line
			}
		case *string:
			if v.Kind != yaml.ScalarNode {
				*errs = append(*errs, fileError{v.Line, key, "must be text, not " + valueWords(v)})
				continue
			}
			*to = v.Value
		case *int:
			n, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || err != nil {
				*errs = append(*errs, fileError{v.Line, key, "must be a whole number, not " + valueWords(v)})
				continue
			}
			*to = n
		case *[]string:
			if v.Kind != yaml.SequenceNode {
				*errs = append(*errs, fileError{v.Line, key, "must be a list, e.g. [a, b], not " + valueWords(v)})
				continue
			}
			for n, item := range v.Content {
				if item.Kind != yaml.ScalarNode || item.ShortTag() == "!!null" {
					*errs = append(*errs, fileError{item.Line, fmt.Sprintf("%s[%d]", key, n), "must be text, not " + valueWords(item)})
					continue
				}
				*to = append(*to, item.Value)
			}
		case *[]*yaml.Node:
			if v.Kind != yaml.SequenceNode {
				*errs = append(*errs, fileError{v.Line, key, "must be a list of rules, each starting with - id: …, not " + valueWords(v)})
				continue
			}
			*to = v.Content
		}
	}
	return lines
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// valueWords names what a YAML value is, for an error.
func valueWords(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.ShortTag() == "!!null":
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

// readSet reads and checks rules/NAME.yaml. Its errors name the file, the
// line and the key: the file is data a person edits.
func readSet(name string) (*Set, error) {
	file := path.Join("rules", name+".yaml")
	data, err := files.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return parseSet(name, file, data)
}

// parseSet reads the rule set name from data, the contents of file. Every
// mistake is reported, each as compliance/FILE:LINE: KEY: what is wrong
// and what to write.
func parseSet(name, file string, data []byte) (*Set, error) {
	var errs []fileError
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("compliance/%s: %w", file, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("compliance/%s: the file is empty: write set: %s, title, numbers and rules (see rules/us.yaml)", file, name)
	}
	if top := doc.Content[0]; top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("compliance/%s:%d: the file must be a mapping of set, title, numbers and rules (see rules/us.yaml), not %s", file, top.Line, valueWords(top))
	}
	var raw rawSet
	lines := decodeFields(doc.Content[0], "", raw.fields(), &errs)
	at := func(key string) int {
		if l := lines[key]; l != 0 {
			return l
		}
		return doc.Content[0].Line
	}
	if raw.Set != name {
		errs = append(errs, fileError{at("set"), "set", fmt.Sprintf("must be %q, the file's name", name)})
	}
	if strings.TrimSpace(raw.Title) == "" {
		errs = append(errs, fileError{at("title"), "title", "must be given: the set's name as a reviewer reads it, e.g. United States"})
	}
	s := &Set{Name: name, Title: raw.Title, CallingCode: raw.CallingCode, Regions: raw.Regions}
	if s.CallingCode < 0 || s.CallingCode > 999 {
		errs = append(errs, fileError{at("numbers.calling_code"), "numbers.calling_code", "must be a country calling code, 1 to 999 (1 for the +1 plan, 44 for the United Kingdom)"})
	}
	var areas *areaTable
	if s.CallingCode == 1 {
		var err error
		if areas, err = readAreas(); err != nil {
			return nil, err
		}
	}
	if len(s.Regions) > 0 {
		known := map[string]bool{}
		if areas != nil {
			for _, a := range areas {
				known[a.region] = a.region != ""
			}
		}
		for _, r := range s.Regions {
			if !known[r] {
				errs = append(errs, fileError{at("numbers.regions"), "numbers.regions",
					fmt.Sprintf("%q is not a country of the +1 plan in rules/nanp.csv: regions narrow calling_code 1 to countries it lists (US, PR, CA…)", r)})
			}
		}
	}
	ids := map[string]int{} // rule id -> line
	for i, node := range raw.Rules {
		key := fmt.Sprintf("rules[%d]", i)
		var rr rawRule
		n := len(errs)
		rl := decodeFields(node, key, rr.fields(), &errs)
		if node.Kind != yaml.MappingNode {
			continue // said: not a rule at all
		}
		// A key decoded wrongly (max: x) is named once, not again as
		// missing; every other mistake of the rule is named too, so an
		// unknown key does not hide them.
		bad := map[string]bool{}
		for _, e := range errs[n:] {
			k, _, _ := strings.Cut(strings.TrimPrefix(e.key, key+"."), "[")
			bad[k] = true
		}
		ruleAt := func(k string) int {
			if l := rl[k]; l != 0 {
				return l
			}
			return node.Line
		}
		if line, dup := ids[rr.ID]; dup && rr.ID != "" {
			errs = append(errs, fileError{ruleAt("id"), key + ".id", fmt.Sprintf("rule %s is given twice (first on line %d): give each rule an id of its own", rr.ID, line)})
		}
		ids[rr.ID] = ruleAt("id")
		rule, kerrs := rr.rule(s, rl, areas)
		for _, e := range kerrs {
			if !bad[e.key] {
				errs = append(errs, fileError{ruleAt(e.key), key + "." + e.key, e.msg})
			}
		}
		s.Rules = append(s.Rules, rule)
	}
	if len(raw.Rules) == 0 {
		errs = append(errs, fileError{at("rules"), "rules", "the set has no rules: give at least one, each starting with - id: …"})
	}
	if len(errs) > 0 {
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = fmt.Errorf("compliance/%s:%d: %s: %s", file, e.line, e.key, e.msg)
		}
		return nil, errors.Join(out...)
	}
	return s, nil
}

// keyError is what is wrong with one key of a rule.
type keyError struct{ key, msg string }

var ruleID = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// rule checks a rule as written and makes it. given are the lines of the
// keys written; areas is rules/nanp.csv for a set of +1 numbers.
func (rr rawRule) rule(s *Set, given keyLines, areas *areaTable) (*Rule, []keyError) {
	r := &Rule{ID: rr.ID, Set: s.Name, Check: Check(rr.Check), Says: rr.Says, Source: rr.Source, URL: rr.URL,
		Note: strings.TrimSpace(rr.Note), Fix: rr.Fix, State: rr.State, Max: rr.Max, Words: rr.Words, MaxVariable: rr.MaxVariable}
	var errs []keyError
	need := func(ok bool, key, msg string) {
		if !ok {
			errs = append(errs, keyError{key, msg})
		}
	}
	need(ruleID.MatchString(rr.ID) && strings.HasPrefix(rr.ID, s.Name+"-"), "id", fmt.Sprintf("must be lower-case words joined by '-', starting with the set's name: %s-…", s.Name))
	for _, k := range []struct{ key, value, what string }{
		{"says", rr.Says, "the rule in a line, as a reviewer reads it"},
		{"source", rr.Source, "the statute, the regulator's or carriers' rule, or the guide the rule is read from"},
		{"fix", rr.Fix, "what to do when the rule fails, shown as the hint"},
	} {
		need(strings.TrimSpace(k.value) != "", k.key, "must be given: "+k.what)
	}
	need(rr.URL == "" || strings.HasPrefix(rr.URL, "https://") || strings.HasPrefix(rr.URL, "http://"), "url", "must be an http(s) URL")
	eff, err := time.Parse(time.DateOnly, rr.Effective)
	need(err == nil, "effective", "must be the date the rule took effect, written YYYY-MM-DD")
	r.Effective = eff
	for _, k := range rr.Kinds {
		need(slices.Contains(Kinds(), Kind(k)), "kinds", fmt.Sprintf("%q is not marketing or transactional", k))
		r.Kinds = append(r.Kinds, Kind(k))
	}
	errs = append(errs, r.checkParams(rr, s, given, areas)...)
	return r, errs
}

// checkParams checks what the rule's check needs, and nothing else given.
func (r *Rule) checkParams(rr rawRule, s *Set, given keyLines, areas *areaTable) []keyError {
	var errs []keyError
	need := func(ok bool, key, msg string) {
		if !ok {
			errs = append(errs, keyError{key, msg})
		}
	}
	only := func(key string, check Check) {
		need(given[key] == 0 || r.Check == check, key, fmt.Sprintf("is given with check: %s, and only then", check))
	}
	perRecipient := r.Check == CheckHours || r.Check == CheckCap
	need(r.State == "" || perRecipient && s.CallingCode == 1, "state", "is for the hours and caps of a set of +1 numbers (numbers: {calling_code: 1})")
	need(!perRecipient || s.CallingCode > 0, "check", "hours and caps need the numbers they concern: give the set numbers: {calling_code: …}")
	only("hours", CheckHours)
	only("max", CheckCap)
	only("per", CheckCap)
	only("words", CheckOptOut)
	only("max_variable", CheckDLT)
	switch r.Check {
	case CheckHours:
		w, err := window.ParseWeek(rr.Hours)
		switch {
		case given["hours"] == 0:
			need(false, "hours", "must be given with check: hours, e.g. mon-sun 08:00-21:00")
		case err != nil:
			need(false, "hours", fmt.Sprintf("%v", err))
		case w.Closed():
			need(false, "hours", "are never open: write the hours the rule allows, e.g. mon-sat 09:00-21:00, sun 12:00-21:00")
		}
		r.Hours = w
	case CheckCap:
		per, err := time.ParseDuration(rr.Per)
		need(rr.Max > 0, "max", "must be at least 1: the most messages a number may get in per")
		need(err == nil && per > 0, "per", "must be a duration such as 24h")
		r.Per = per
	case CheckOptOut:
		need(len(rr.Words) > 0, "words", `must be given with check: opt_out: the words a body must hold one of, e.g. [STOP, UNSUBSCRIBE]`)
		for _, w := range rr.Words {
			need(strings.TrimSpace(w) != "" && strings.TrimSpace(w) == w, "words", fmt.Sprintf("%q: an opt-out word must not be empty nor begin or end with a space", w))
		}
	case CheckDLT:
		need(rr.MaxVariable >= 1 && rr.MaxVariable <= maxRepeat, "max_variable", fmt.Sprintf("must be 1 to %d: the longest a variable may be, in characters (the DLT platforms' default is 30)", maxRepeat))
	case CheckGSM7:
	default:
		need(false, "check", fmt.Sprintf("must be hours, cap, opt_out, dlt or gsm7, not %q", r.Check))
	}
	if r.State != "" && areas != nil && !areas.states()[r.State] {
		need(false, "state", fmt.Sprintf("%q has no area code in rules/nanp.csv: write a state's two-letter postal code, e.g. FL", r.State))
	}
	return errs
}
