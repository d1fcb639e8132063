package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template/parse"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/compliance"
	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
)

// This file applies the rule sets a campaign declares (see package
// compliance): the law's hours narrow each recipient's window (splitByZone
// groups recipients by them, and each batch carries its hours for apply),
// the body rules fail the plan naming the row, and every rule gets a
// verdict for the outputs and for a team's own policies over plan --json.

// Compliance is what the campaign's rule sets said of its plan. A saved
// plan carries it: its kind and rule sets are part of what it commits to.
type Compliance struct {
	Kind compliance.Kind `json:"kind"`
	Sets []string        `json:"sets"`
	// Hours says that batches carry the hours of rules (Batch.Hours),
	// which apply holds to at send time as it does a send window.
	Hours bool          `json:"hours,omitempty"`
	Rules []RuleVerdict `json:"rules"`
}

// Verdict is what a rule said of a plan.
type Verdict string

const (
	VerdictPass          Verdict = "pass"            // nothing broke it, nothing needed narrowing
	VerdictFail          Verdict = "fail"            // messages break it: the plan fails
	VerdictNarrowed      Verdict = "narrowed"        // its hours narrowed the window of recipients
	VerdictAtSend        Verdict = "checked_at_send" // a cap: apply checks it as each batch goes
	VerdictNotApplicable Verdict = "not_applicable"  // it does not concern the campaign's kind
)

// RuleVerdict is one rule, where it comes from and what it said.
type RuleVerdict struct {
	ID      string  `json:"id"`
	Set     string  `json:"set"`
	Says    string  `json:"says"`
	Source  string  `json:"source"`
	URL     string  `json:"url,omitempty"`
	Date    string  `json:"date"` // when it took effect, YYYY-MM-DD
	Verdict Verdict `json:"verdict"`
	// Recipients counts the recipients to send that an hours rule or a cap
	// concerns, or the messages a body rule checked.
	Recipients int `json:"recipients"`
	// Narrowed counts the recipients whose window an hours rule narrowed;
	// Failed the messages that break a body rule.
	Narrowed int    `json:"narrowed,omitempty"`
	Failed   int    `json:"failed,omitempty"`
	Hours    string `json:"hours,omitempty"` // an hours rule's hours: "mon-sun 08:00-20:00"
	// NarrowedTo is, for an hours rule that narrowed the campaign's send
	// window, what it left of the window: the rule's hours met with it
	// ("mon-fri 09:00-20:00" of a window mon-fri 09:00-21:00), the hours
	// that apply to those recipients as far as this rule goes.
	NarrowedTo string `json:"narrowed_to,omitempty"`
	Fix        string `json:"fix,omitempty"`
	// Words are an opt-out rule's own words (the law's or the carriers',
	// which opt_out_words cannot replace); AddedWords those the campaign's
	// or its project's opt_out_words add. A reviewer sees what was looked
	// for, not only that the rule passed.
	Words      []string `json:"words,omitempty"`
	AddedWords []string `json:"added_words,omitempty"`
}

// HoursSets names the rule sets whose hours rules concern the campaign's
// kind: those that decide, with the send window, when its batches go.
func (c *Compliance) HoursSets() []string {
	var sets []string
	for _, v := range c.Rules {
		if v.Hours != "" && v.Verdict != VerdictNotApplicable && !slices.Contains(sets, v.Set) {
			sets = append(sets, v.Set)
		}
	}
	return sets
}

// HasLawHours reports whether the plan's batches carry hours of rules.
func (p *Plan) HasLawHours() bool { return p.Compliance != nil && p.Compliance.Hours }

// Timed reports whether anything bounds when the plan's batches may go: a
// send window, not_before, not_after, or the hours of rules.
func (p *Plan) Timed() bool { return p.Window.Active() || p.HasLawHours() }

// ComplianceError fails a plan whose messages break rules. It unwraps to
// one *campaign.Error per row named (the first ones), each with the rule,
// its source and date; the hint of the first of each rule is its fix.
type ComplianceError struct {
	Failed int // messages that break a rule, all of them
	errs   []error
}

func (e *ComplianceError) Error() string { return errors.Join(e.errs...).Error() }

// Unwrap returns the errors of the rows named.
func (e *ComplianceError) Unwrap() []error { return e.errs }

// checker is what the builder keeps of the campaign's rule sets.
type checker struct {
	rules *compliance.Rules
	kind  compliance.Kind
	tpl   *compliance.Template
	hours bool // an hours rule concerns the kind

	checked, failed int
	failedBy        map[string]int // by rule id
	shown           []error        // the first maxListed rows
	hinted          map[string]bool
	shared          []*compliance.Violation // the violations of a body shared by everyone
	laws            map[*compliance.Law]int // recipients to send, by what the rules ask of them
	// fixed are the opt-out rules the body's own text breaks (its text
	// with every action taken out): a row's message that carries the word
	// only through a variable breaks them all the same.
	fixed []*compliance.Violation
}

// newChecker returns nil for a campaign that declares no rule set.
func newChecker(c *campaign.Campaign) *checker {
	cc := c.Compliance
	if cc.Rules == nil {
		return nil
	}
	k := &checker{rules: cc.Rules, kind: cc.Kind, tpl: cc.Template, hours: cc.SetsHours(),
		failedBy: map[string]int{}, hinted: map[string]bool{}, laws: map[*compliance.Law]int{}}
	if text, ok := fixedText(c.Body); ok {
		k.fixed = cc.Rules.CheckFixedText(text, cc.Kind)
	}
	return k
}

// fixedText is a body's own text, each action ({{ .name }}, {{ if }}…)
// replaced by a NUL, which no opt-out word spans; false for a body that
// does not parse (Load has refused it).
func fixedText(body string) (string, bool) {
	t := parse.New("body")
	t.Mode = parse.SkipFuncCheck
	if _, err := t.Parse(body, "", "", map[string]*parse.Tree{}); err != nil || t.Root == nil {
		return "", false
	}
	var b strings.Builder
	var walk func(n parse.Node)
	branch := func(n *parse.BranchNode) {
		b.WriteByte(0)
		walk(n.List)
		walk(n.ElseList)
		b.WriteByte(0)
	}
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c)
				}
			}
		case *parse.TextNode:
			b.Write(n.Text)
		case *parse.IfNode:
			branch(&n.BranchNode)
		case *parse.RangeNode:
			branch(&n.BranchNode)
		case *parse.WithNode:
			branch(&n.BranchNode)
		default:
			b.WriteByte(0)
		}
	}
	walk(t.Root)
	return b.String(), true
}

// check returns the rules body breaks; nil when it breaks none. It runs on
// scan's workers.
func (k *checker) check(body string) []*compliance.Violation {
	v := k.rules.CheckBody(body, k.kind)
	for _, f := range k.fixed { // the body's own text is what must change: say so
		if i := slices.IndexFunc(v, func(x *compliance.Violation) bool { return x.Rule == f.Rule }); i >= 0 {
			v[i] = f
		} else {
			v = append(v, f)
		}
	}
	if k.tpl != nil {
		if x := k.tpl.Check(body); x != nil {
			v = append(v, x)
		}
	}
	return v
}

// note counts the message of a recipient checked, and names its row if it
// breaks rules and fewer than maxListed rows are named.
func (k *checker) note(file string, line int, v []*compliance.Violation) {
	k.checked++
	if len(v) == 0 {
		return
	}
	k.failed++
	for _, x := range v {
		k.failedBy[x.Rule.ID]++
		if len(k.shown) < maxListed {
			k.shown = append(k.shown, k.rowError(file, line, x))
		}
	}
}

// rowError words a violation at a row (or at the campaign's body): the
// first time a rule is named, in full with its source and date and its fix
// as the hint; after that, the rule's id and the problem alone.
func (k *checker) rowError(file string, line int, x *compliance.Violation) *campaign.Error {
	e := &campaign.Error{File: campaign.Plain(file), Line: line, Field: "body", Msg: "breaks rule " + x.Rule.ID + " too: " + x.Problem}
	if !k.hinted[x.Rule.ID] {
		k.hinted[x.Rule.ID] = true
		e.Msg, e.Hint = x.Error(), x.Rule.Fix
	}
	return e
}

// err is the plan's *ComplianceError, nil when every message passes.
func (k *checker) err() error {
	if k == nil || k.failed == 0 {
		return nil
	}
	errs := append([]error{}, k.shown...)
	if n := k.failed - min(k.failed, len(k.shown)); n > 0 && len(k.shared) == 0 {
		errs = append(errs, fmt.Errorf("and %s more %s that break a rule (plan --json counts them by rule)", words.Count(n), words.Plural(n, "message", "messages")))
	}
	return &ComplianceError{Failed: k.failed, errs: errs}
}

// useShared checks a body that everyone gets, once; count says how many
// recipients get it, known once the lists are read (see finishShared).
func (k *checker) useShared(body string) {
	k.shared = k.check(body)
}

// finishShared counts a shared body for every recipient who gets it.
func (k *checker) finishShared(c *campaign.Campaign, recipients int) {
	k.checked = recipients
	if len(k.shared) == 0 || recipients == 0 {
		return
	}
	k.failed = recipients
	for _, x := range k.shared {
		k.failedBy[x.Rule.ID] = recipients
		k.shown = append(k.shown, k.rowError(c.Path, c.BodyLine, x))
	}
}

// verdicts sets p.Compliance from what the plan counted, the campaign's
// send window being w (windowed: the campaign has one).
func (k *checker) verdicts(p *Plan, w window.Week, windowed bool) {
	comp := &Compliance{Kind: k.kind, Sets: k.rules.Names(), Hours: k.hours}
	concerned, narrowed := map[string]int{}, map[string]int{}
	for law, n := range k.laws {
		for _, r := range law.HoursRules {
			concerned[r.ID] += n
		}
		for _, r := range law.Narrowing(w) {
			narrowed[r.ID] += n
		}
		for _, r := range law.Caps {
			concerned[r.ID] += n
		}
	}
	for _, r := range k.rules.All() {
		v := RuleVerdict{ID: r.ID, Set: r.Set, Says: r.Says, Source: r.Source, URL: r.URL, Date: r.Date(), Verdict: VerdictPass}
		switch {
		case !r.Concerns(k.kind):
			v.Verdict = VerdictNotApplicable
		case r.Check == compliance.CheckHours:
			v.Recipients, v.Narrowed, v.Hours = concerned[r.ID], narrowed[r.ID], r.Hours.String()
			if v.Narrowed > 0 {
				v.Verdict = VerdictNarrowed
				if windowed {
					v.NarrowedTo = w.Intersect(r.Hours).String()
				}
			}
		case r.Check == compliance.CheckCap:
			v.Recipients = concerned[r.ID]
			if v.Recipients > 0 {
				v.Verdict = VerdictAtSend
			}
		default:
			if r.Check == compliance.CheckOptOut {
				v.Words, v.AddedWords = r.Words, r.Extra
			}
			v.Recipients, v.Failed = k.checked, k.failedBy[r.ID]
			if v.Failed > 0 {
				v.Verdict, v.Fix = VerdictFail, r.Fix
			}
		}
		comp.Rules = append(comp.Rules, v)
	}
	p.Compliance = comp
}

// closedWindow refuses a send window that the hours of rules leave no time
// of for some recipients (a window of 20:30-21:30 for Florida numbers,
// whose law allows 08:00-20:00): they could never be sent, and apply would
// refuse the plan with words about zones. It names the rules and the hours
// the window must overlap.
func (k *checker) closedWindow(c *campaign.Campaign) error {
	if !c.Window.HasWindow() {
		return nil
	}
	w := c.Window.Week()
	n := 0
	var rules []*compliance.Rule
	for law, count := range k.laws {
		if count == 0 || !law.HasHours() || !w.Intersect(law.Hours).Closed() {
			continue
		}
		n += count
		// The rules that close the window alone; all that narrow it when
		// only together do they.
		closing := slices.DeleteFunc(law.Narrowing(w), func(r *compliance.Rule) bool { return !w.Intersect(r.Hours).Closed() })
		if len(closing) == 0 {
			closing = law.Narrowing(w)
		}
		for _, r := range closing {
			if !slices.Contains(rules, r) {
				rules = append(rules, r)
			}
		}
	}
	if n == 0 {
		return nil
	}
	slices.SortFunc(rules, func(a, b *compliance.Rule) int { return strings.Compare(a.ID, b.ID) })
	var named, hours []string
	for _, r := range rules {
		named = append(named, fmt.Sprintf("%s allows only %s (%s, in effect since %s)", r.ID, r.Hours, r.Source, r.Date()))
		if h := r.Hours.String(); !slices.Contains(hours, h) {
			hours = append(hours, h)
		}
	}
	return &campaign.Error{File: campaign.Plain(c.Path), Line: c.WindowLine, Field: "send_window",
		Msg: fmt.Sprintf("the send window %s leaves %s no hours at all in their local time: %s %s",
			w, words.N(n, "recipient", "recipients"), words.Plural(len(rules), "rule", "rules"), strings.Join(named, "; ")),
		Hint: fmt.Sprintf("make send_window overlap %s (the rule's hours), or remove send_window and let the rules decide each recipient's hours", strings.Join(hours, " and "))}
}
