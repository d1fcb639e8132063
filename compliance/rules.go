package compliance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/window"
)

// Rules are the rule sets a campaign declares, ready to answer for its
// recipients and bodies. They are safe for concurrent use.
type Rules struct {
	sets   []*Set
	byKind [2]lawTable // by kindIndex
}

// lawTable finds a number's Law for one kind of campaign.
type lawTable struct {
	nanp    *[1000]*Law // by area code, for sets of +1 numbers; nil when there is none
	unknown *Law        // a +1 number whose area code the table lacks
	codes   []codeLaw   // the other calling codes
	body    []*Rule     // the body rules: opt_out, gsm7
}

type codeLaw struct {
	code, digits int
	law          *Law
}

// Law is what the rule sets ask of one class of recipients (the Florida
// numbers of a marketing campaign, say). Every recipient of the class gets
// the same *Law, so that a plan groups recipients by it.
type Law struct {
	// Hours are when the recipients may be messaged, in their local time:
	// what every rule of HoursRules allows; every hour when there is none.
	Hours      window.Week
	HoursRules []*Rule
	// Caps are the frequency caps on the recipients' numbers (CheckCap).
	Caps []*Rule
}

// HasHours reports whether a rule sets the recipients' hours.
func (l *Law) HasHours() bool { return l != nil && len(l.HoursRules) > 0 }

// Narrowing returns the hours rules that take time away from w (a
// campaign's send window): the ones a reviewer is told narrowed it.
func (l *Law) Narrowing(w window.Week) []*Rule {
	if l == nil {
		return nil
	}
	var out []*Rule
	for _, r := range l.HoursRules {
		if w.Narrower(r.Hours) {
			out = append(out, r)
		}
	}
	return out
}

func kindIndex(k Kind) int {
	if k == Transactional {
		return 1
	}
	return 0 // marketing, and anything else: the stricter
}

// ParseKind reads a campaign's kind; "" is Marketing.
func ParseKind(s string) (Kind, error) {
	switch Kind(s) {
	case "", Marketing:
		return Marketing, nil
	case Transactional:
		return Transactional, nil
	}
	return "", fmt.Errorf("%q is not a kind of campaign: write marketing or transactional", s)
}

// Sets returns the rule sets, in the order they were loaded.
func (r *Rules) Sets() []*Set { return r.sets }

// Names returns the rule sets' names, in the order they were loaded.
func (r *Rules) Names() []string {
	names := make([]string, len(r.sets))
	for i, s := range r.sets {
		names[i] = s.Name
	}
	return names
}

// All returns every rule of every set, set by set in file order.
func (r *Rules) All() []*Rule {
	var all []*Rule
	for _, s := range r.sets {
		all = append(all, s.Rules...)
	}
	return all
}

// For returns what the rules ask of the recipient whose number is k, in a
// campaign of kind; nil when no rule concerns the number. It reads an array
// or a short list: plan calls it for every recipient.
func (r *Rules) For(k e164.Packed, kind Kind) *Law {
	t := &r.byKind[kindIndex(kind)]
	if t.nanp != nil {
		if cc, _ := k.Prefix(1); cc == 1 {
			if p, ok := k.Prefix(4); ok {
				return t.nanp[p-1000]
			}
			return t.unknown
		}
	}
	for _, c := range t.codes {
		if p, ok := k.Prefix(c.digits); ok && p == c.code {
			return c.law
		}
	}
	return nil
}

// prepare builds the tables For and CheckBody read, once per kind.
func (r *Rules) prepare() error {
	var areas *areaTable
	for _, s := range r.sets {
		if s.CallingCode == 1 && areas == nil {
			var err error
			if areas, err = readAreas(); err != nil {
				return err
			}
		}
	}
	if areas != nil {
		known := areas.states()
		for _, rule := range r.All() {
			if rule.State != "" && !known[rule.State] {
				return fmt.Errorf("compliance/rules/%s.yaml: rule %s: state %q has no area code in rules/nanp.csv", rule.Set, rule.ID, rule.State)
			}
		}
	}
	for _, kind := range Kinds() {
		r.byKind[kindIndex(kind)] = r.table(kind, areas)
	}
	return nil
}

// table builds the lawTable of one kind of campaign.
func (r *Rules) table(kind Kind, areas *areaTable) lawTable {
	var t lawTable
	interned := map[string]*Law{}
	codes := map[int]bool{}
	for _, s := range r.sets {
		for _, rule := range s.Rules {
			if rule.Concerns(kind) && (rule.Check == CheckOptOut || rule.Check == CheckGSM7) {
				t.body = append(t.body, rule)
			}
		}
		if s.CallingCode > 1 && !codes[s.CallingCode] {
			codes[s.CallingCode] = true
			if law := r.law(kind, s.CallingCode, area{}, interned); law != nil {
				t.codes = append(t.codes, codeLaw{code: s.CallingCode, digits: len(fmt.Sprint(s.CallingCode)), law: law})
			}
		}
	}
	if areas == nil {
		return t
	}
	t.nanp = &[1000]*Law{}
	t.unknown = r.law(kind, 1, area{}, interned)
	for npa := range t.nanp {
		t.nanp[npa] = t.unknown
		if a := areas[npa]; a.region != "" {
			t.nanp[npa] = r.law(kind, 1, a, interned)
		}
	}
	return t
}

// law gathers the per-recipient rules that concern numbers of calling code
// cc (and, for +1, of area a: a.region "" is an area code the table lacks,
// which every set of +1 numbers concerns, with no state), one *Law per
// distinct list of rules.
func (r *Rules) law(kind Kind, cc int, a area, interned map[string]*Law) *Law {
	var rules []*Rule
	for _, s := range r.sets {
		if s.CallingCode != cc || a.region != "" && len(s.Regions) > 0 && !slices.Contains(s.Regions, a.region) {
			continue
		}
		for _, rule := range s.Rules {
			if (rule.Check == CheckHours || rule.Check == CheckCap) && rule.Concerns(kind) && (rule.State == "" || rule.State == a.state) {
				rules = append(rules, rule)
			}
		}
	}
	if len(rules) == 0 {
		return nil
	}
	ids := make([]string, len(rules))
	for i, rule := range rules {
		ids[i] = rule.ID
	}
	key := strings.Join(ids, ",")
	if l, ok := interned[key]; ok {
		return l
	}
	l := &Law{Hours: window.AllDay()}
	for _, rule := range rules {
		if rule.Check == CheckHours {
			l.Hours = l.Hours.Intersect(rule.Hours)
			l.HoursRules = append(l.HoursRules, rule)
		} else {
			l.Caps = append(l.Caps, rule)
		}
	}
	interned[key] = l
	return l
}
