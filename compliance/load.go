package compliance

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
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
	// OptOutWords replace the opt-out words of every opt_out rule (a
	// campaign in another language, a provider's own keyword).
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
			if rule.Check == CheckOptOut && len(o.OptOutWords) > 0 {
				rule.Words = slices.Clone(o.OptOutWords)
			}
		}
		r.sets = append(r.sets, s)
	}
	if err := r.prepare(); err != nil {
		return nil, err
	}
	return r, nil
}

// rawSet and rawRule are a rule set file as written.
type rawSet struct {
	Set     string `yaml:"set"`
	Title   string `yaml:"title"`
	Numbers struct {
		CallingCode int      `yaml:"calling_code"`
		Regions     []string `yaml:"regions"`
	} `yaml:"numbers"`
	Rules []yaml.Node `yaml:"rules"`
}

type rawRule struct {
	ID          string   `yaml:"id"`
	Check       string   `yaml:"check"`
	Kinds       []string `yaml:"kinds"`
	State       string   `yaml:"state"`
	Hours       string   `yaml:"hours"`
	Max         int      `yaml:"max"`
	Per         string   `yaml:"per"`
	Words       []string `yaml:"words"`
	MaxVariable int      `yaml:"max_variable"`
	Says        string   `yaml:"says"`
	Source      string   `yaml:"source"`
	URL         string   `yaml:"url"`
	Effective   string   `yaml:"effective"`
	Note        string   `yaml:"note"`
	Fix         string   `yaml:"fix"`
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

// parseSet reads the rule set name from data, the contents of file.
func parseSet(name, file string, data []byte) (*Set, error) {
	var raw rawSet
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("compliance/%s: %w", file, err)
	}
	if raw.Set != name || raw.Title == "" {
		return nil, fmt.Errorf("compliance/%s: set must be %q and title must be given", file, name)
	}
	s := &Set{Name: name, Title: raw.Title, CallingCode: raw.Numbers.CallingCode, Regions: raw.Numbers.Regions}
	for i := range raw.Rules {
		node := &raw.Rules[i]
		var rr rawRule
		if err := decodeStrict(node, &rr); err != nil {
			return nil, fmt.Errorf("compliance/%s:%d: %w", file, node.Line, err)
		}
		rule, err := rr.rule(s)
		if err != nil {
			return nil, fmt.Errorf("compliance/%s:%d: rule %q: %w", file, node.Line, rr.ID, err)
		}
		s.Rules = append(s.Rules, rule)
	}
	if len(s.Rules) == 0 {
		return nil, fmt.Errorf("compliance/%s: no rules", file)
	}
	return s, nil
}

// decodeStrict decodes a node refusing unknown keys, which Node.Decode
// does not do by itself.
func decodeStrict(node *yaml.Node, v any) error {
	out, err := yaml.Marshal(node)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	dec.KnownFields(true)
	return dec.Decode(v)
}

var ruleID = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// rule checks a rule as written and makes it.
func (rr rawRule) rule(s *Set) (*Rule, error) {
	r := &Rule{ID: rr.ID, Set: s.Name, Check: Check(rr.Check), Says: rr.Says, Source: rr.Source, URL: rr.URL,
		Note: strings.TrimSpace(rr.Note), Fix: rr.Fix, State: rr.State, Max: rr.Max, Words: rr.Words, MaxVariable: rr.MaxVariable}
	var errs []error
	need := func(ok bool, msg string) {
		if !ok {
			errs = append(errs, errors.New(msg))
		}
	}
	need(ruleID.MatchString(rr.ID) && strings.HasPrefix(rr.ID, s.Name+"-"), "id must be lower-case words joined by '-', starting with the set's name")
	need(rr.Says != "" && rr.Source != "" && rr.Fix != "", "says, source and fix must be given")
	need(rr.URL == "" || strings.HasPrefix(rr.URL, "https://") || strings.HasPrefix(rr.URL, "http://"), "url must be an http(s) URL")
	eff, err := time.Parse(time.DateOnly, rr.Effective)
	need(err == nil, "effective must be the date the rule took effect, written YYYY-MM-DD")
	r.Effective = eff
	for _, k := range rr.Kinds {
		need(slices.Contains(Kinds(), Kind(k)), fmt.Sprintf("kinds: %q is not marketing or transactional", k))
		r.Kinds = append(r.Kinds, Kind(k))
	}
	errs = append(errs, r.checkParams(rr, s)...)
	return r, errors.Join(errs...)
}

// checkParams checks what the rule's check needs, and nothing else given.
func (r *Rule) checkParams(rr rawRule, s *Set) []error {
	var errs []error
	need := func(ok bool, msg string) {
		if !ok {
			errs = append(errs, errors.New(msg))
		}
	}
	perRecipient := r.Check == CheckHours || r.Check == CheckCap
	need(r.State == "" || perRecipient && s.CallingCode == 1, "state is for the hours and caps of a set of +1 numbers")
	need(!perRecipient || s.CallingCode > 0, "hours and caps need the set's numbers: calling_code")
	need((rr.Hours != "") == (r.Check == CheckHours), "hours is given with check: hours, and only then")
	need((rr.Max != 0 || rr.Per != "") == (r.Check == CheckCap), "max and per are given with check: cap, and only then")
	need((len(rr.Words) > 0) == (r.Check == CheckOptOut), "words are given with check: opt_out, and only then")
	need((rr.MaxVariable != 0) == (r.Check == CheckDLT), "max_variable is given with check: dlt, and only then")
	switch r.Check {
	case CheckHours:
		w, err := window.ParseWeek(rr.Hours)
		need(err == nil && !w.Closed(), fmt.Sprintf("hours: %v", err))
		r.Hours = w
	case CheckCap:
		per, err := time.ParseDuration(rr.Per)
		need(err == nil && per > 0 && rr.Max > 0, "max must be at least 1 and per a duration such as 24h")
		r.Per = per
	case CheckOptOut, CheckDLT, CheckGSM7:
		need(r.MaxVariable >= 0, "max_variable must be at least 1")
	default:
		errs = append(errs, fmt.Errorf("check must be hours, cap, opt_out, dlt or gsm7, not %q", r.Check))
	}
	return errs
}
