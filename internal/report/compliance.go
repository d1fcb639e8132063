package report

import (
	"fmt"
	"strings"

	"github.com/smsform/smsform/compliance"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// This file shows what a campaign's rule sets said of its plan (see
// plan.Compliance): a line per rule set when all its rules pass, and a line
// more for each rule that narrowed hours, is checked at send time or
// failed, with its source and date; in JSON, every rule.

// complianceHeading says what the campaign was checked as.
func complianceHeading(c *plan.Compliance) string {
	if c.Kind == compliance.Transactional {
		return "Compliance (transactional campaign: not held to the marketing rules)"
	}
	return fmt.Sprintf("Compliance (%s campaign)", c.Kind)
}

// setLine words one rule set's verdicts: "us: 9 rules pass; 2 below", and
// returns the rules that did not simply pass, to be listed below it.
func setLine(c *plan.Compliance, set string) (string, []plan.RuleVerdict) {
	pass, na := 0, 0
	var others []plan.RuleVerdict
	for _, v := range c.Rules {
		switch {
		case v.Set != set:
		case v.Verdict == plan.VerdictPass && len(v.AddedWords) == 0:
			pass++
		case v.Verdict == plan.VerdictNotApplicable:
			na++
		default:
			others = append(others, v)
		}
	}
	var parts []string
	if pass > 0 {
		parts = append(parts, words.N(pass, "rule passes", "rules pass"))
	}
	if len(others) > 0 {
		parts = append(parts, words.N(len(others), "rule", "rules")+" below")
	}
	if na > 0 {
		parts = append(parts, fmt.Sprintf("%s not apply to %s campaigns", words.N(na, "rule does", "rules do"), c.Kind))
	}
	return set + ": " + strings.Join(parts, "; "), others
}

// verdictWords words what one rule said: "sets the hours mon-sun
// 08:00-20:00 for 1,204 recipients" of a campaign without a send window;
// of one with a window, the hours it left of the window, not the rule's
// own (a window of weekdays stays one): "narrowed the send window to
// mon-fri 09:00-20:00 for 1,204 recipients". windowed says the campaign
// has a send window of its own.
func verdictWords(v plan.RuleVerdict, windowed bool) string {
	switch v.Verdict {
	case plan.VerdictNarrowed:
		n := words.N(v.Narrowed, "recipient", "recipients")
		switch {
		case !windowed:
			return fmt.Sprintf("sets the hours %s for %s", v.Hours, n)
		case v.NarrowedTo == "": // a plan saved before smsform said what was left
			return fmt.Sprintf("narrowed the send window with its hours %s for %s", v.Hours, n)
		}
		return fmt.Sprintf("narrowed the send window to %s for %s", v.NarrowedTo, n)
	case plan.VerdictAtSend:
		return fmt.Sprintf("checked as each batch goes, for %s", words.N(v.Recipients, "recipient", "recipients"))
	case plan.VerdictFail:
		return fmt.Sprintf("FAILS: %s of %s %s it%s", words.Count(v.Failed), words.N(v.Recipients, "message", "messages"), words.Plural(v.Failed, "breaks", "break"), wordsChecked(v))
	case plan.VerdictPass:
		return "passes" + wordsChecked(v)
	}
	return string(v.Verdict)
}

// wordsChecked names the words an opt-out rule looked for, those of
// opt_out_words apart (a pass with them is listed, so a reviewer sees that
// the campaign's words were accepted besides the rule's own): "; words
// looked for: STOP, UNSUBSCRIBE; from opt_out_words: ARRET"; "" for another
// rule.
func wordsChecked(v plan.RuleVerdict) string {
	if len(v.Words) == 0 {
		return ""
	}
	s := "; words looked for: " + strings.Join(v.Words, ", ")
	if len(v.AddedWords) > 0 {
		s += "; from opt_out_words: " + strings.Join(v.AddedWords, ", ")
	}
	return s
}

// writeComplianceText writes the compliance lines of plan's table.
func writeComplianceText(b *strings.Builder, p *plan.Plan) {
	c := p.Compliance
	if c == nil {
		return
	}
	fmt.Fprintf(b, "%s:\n", complianceHeading(c))
	for _, set := range c.Sets {
		line, others := setLine(c, set)
		fmt.Fprintf(b, "  %s\n", line)
		for _, v := range others {
			fmt.Fprintf(b, "    - %s: %s (%s, in effect since %s)\n", v.ID, verdictWords(v, p.Window.HasWindow()), oneLine(v.Source), v.Date)
		}
	}
}

// writeComplianceMarkdown writes the compliance section of the comment.
func writeComplianceMarkdown(h *strings.Builder, p *plan.Plan) {
	c := p.Compliance
	if c == nil {
		return
	}
	fmt.Fprintf(h, "#### %s\n\n", mdText(complianceHeading(c)))
	for _, set := range c.Sets {
		line, others := setLine(c, set)
		fmt.Fprintf(h, "- %s\n", mdText(line))
		for _, v := range others {
			source := mdText(v.Source)
			if v.URL != "" {
				source = "[" + source + "](" + v.URL + ")"
			}
			fmt.Fprintf(h, "  - %s: %s (%s, in effect since %s)\n", mdCode(v.ID, false), mdText(verdictWords(v, p.Window.HasWindow())), source, v.Date)
		}
	}
	h.WriteString("\n")
}

// complianceJSON is the top-level compliance list of plan's JSON: every
// rule, with its source, the date it took effect, its verdict and counts;
// and the campaign's kind. Both are left out for a campaign that declares
// no rule set.
func complianceJSON(p *plan.Plan) (compliance.Kind, []plan.RuleVerdict) {
	if p.Compliance == nil {
		return "", nil
	}
	return p.Compliance.Kind, append([]plan.RuleVerdict{}, p.Compliance.Rules...)
}
