package plan

import (
	"errors"
	"fmt"
	"strings"
	"text/template/parse"
	"unicode"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/internal/words"
)

// maxListed caps how many of one kind of warning a plan spells out.
const maxListed = 20

// noteEmpty warns of the messages that print an empty variable, or fails
// the plan with the first rows when the campaign says empty_variables: error.
func (b *builder) noteEmpty() error {
	ev := &b.p.EmptyVariables
	if ev.Recipients == 0 {
		return nil
	}
	if b.c.EmptyVariables == "error" {
		errs := make([]error, 0, len(b.emptyAt)+1)
		for _, e := range b.emptyAt {
			errs = append(errs, e)
		}
		if n := ev.Recipients - len(b.emptyAt); n > 0 {
			errs = append(errs, fmt.Errorf("and %s more %s with an empty variable", words.Count(n), words.Plural(n, "row", "rows")))
		}
		return errors.Join(errs...)
	}
	shown := ev.Rows[:min(len(ev.Rows), maxNamed)]
	more := ""
	if n := ev.Recipients - len(shown); n > 0 {
		more = fmt.Sprintf(" and %s more", words.Count(n))
	}
	b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
		"%s %s a message with an empty variable (\"Hi , …\"): %s%s; fill the lists in, give it a default ({{ default \"friend\" %s }}), or set empty_variables: error to refuse them",
		words.Count(ev.Recipients), words.Plural(ev.Recipients, "recipient gets", "recipients get"), strings.Join(shown, ", "), more, b.emptyRef))
	return nil
}

// noteBlank counts a recipient whose message prints blank variables, and
// keeps the first maxListed rows for the warning or the error.
func (b *builder) noteBlank(it *item) {
	ev := &b.p.EmptyVariables
	ev.Recipients++
	if b.emptyRef == "" {
		b.emptyRef = fieldRef(it.empty[0])
	}
	if len(ev.Rows) >= maxListed {
		return
	}
	names := make([]string, len(it.empty))
	for i, name := range it.empty {
		names[i] = campaign.Plain(name)
	}
	field := strings.Join(names, ", ")
	ev.Rows = append(ev.Rows, fmt.Sprintf("%s:%d: %s", campaign.Plain(it.entry.File), it.entry.Line, field))
	msg := "variable is empty, and the body prints it (empty_variables: error)"
	if len(names) > 1 {
		msg = "variables are empty, and the body prints them (empty_variables: error)"
	}
	b.emptyAt = append(b.emptyAt, &campaign.Error{File: campaign.Plain(it.entry.File), Line: it.entry.Line, Field: field, Msg: msg,
		Hint: "fill the list in, give the variable a default: {{ default \"friend\" " + fieldRef(it.empty[0]) + " }}, or set empty_variables: warn"})
}

// fieldRef is how a body reads the variable name: .name, or index when
// the name is not an identifier.
func fieldRef(name string) string {
	ident := name != ""
	for i, r := range name {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			ident = false
		}
	}
	if ident {
		return "." + name
	}
	return "(index . " + campaign.Quote(name) + ")"
}

// maxNamed is how many rows a one-line warning names.
const maxNamed = 5

// warnUCS2 says which characters push a body out of GSM-7 and what they
// cost, once per distinct set of characters so that a personalised campaign
// does not repeat itself a million times. It analyses again only the UCS-2
// bodies.
func (b *builder) warnUCS2() error {
	if forcing := templateForcing(b.c.Body); forcing != "" {
		return b.warnTemplateUCS2(forcing)
	}
	type cost struct{ bodies, extra int }
	costs := map[string]*cost{}
	var order []string
	bodies := b.bodies.spool.reader()
	for gi, id := range b.groups.bodies {
		if b.bodies.meta.at(int(id)).encoding() != sms.UCS2 {
			continue
		}
		start, end := b.groups.members(gi)
		repeat := gi > 0 && id == b.groups.bodies[gi-1] // one body split by zones
		body, err := bodies.at(int(id))
		if err != nil {
			return err
		}
		a := sms.Analyze(body)
		key := string(a.Forcing)
		c, ok := costs[key]
		if !ok {
			c = &cost{}
			costs[key] = c
			order = append(order, key)
		}
		if !repeat {
			c.bodies++
		}
		c.extra += (a.Segments - a.SegmentsIfGSM7) * (end - start)
	}
	for _, key := range order {
		c := costs[key]
		quoted := make([]string, 0, len(key))
		for _, r := range key {
			quoted = append(quoted, fmt.Sprintf("%q", r))
		}
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
			"%s %s, not in GSM-7: sent as UCS-2, costing %s more %s in all",
			words.N(c.bodies, "distinct body", "distinct bodies"), words.Plural(c.bodies, "uses", "use")+" "+strings.Join(quoted, " "),
			words.Count(c.extra), words.Plural(c.extra, "segment", "segments")))
	}
	if len(order) > 0 {
		b.warnUCS2Cost()
	}
	return nil
}

// templateForcing is the characters of the template's fixed text (what
// every message prints, outside {{ }} and outside its branches) that are
// not in GSM-7, "" when there are none or the template does not parse.
func templateForcing(body string) string {
	t := parse.New("body")
	t.Mode = parse.SkipFuncCheck
	trees := map[string]*parse.Tree{}
	if _, err := t.Parse(body, "", "", trees); err != nil || t.Root == nil {
		return ""
	}
	var fixed strings.Builder
	for _, n := range t.Root.Nodes {
		if text, ok := n.(*parse.TextNode); ok {
			fixed.Write(text.Text)
		}
	}
	return string(sms.Analyze(fixed.String()).Forcing)
}

// warnTemplateUCS2 says once that the template's own text sends every
// message as UCS-2, and what that costs: whatever a variable holds, no
// message could go as GSM-7.
func (b *builder) warnTemplateUCS2(forcing string) error {
	messages, extra := 0, 0
	for gi, id := range b.groups.bodies {
		start, end := b.groups.members(gi)
		m := b.bodies.meta.at(int(id))
		messages += end - start
		if m.encoding() == sms.UCS2 {
			extra += (int(m.segs) - int(m.gsm)) * (end - start)
		}
	}
	quoted := make([]string, 0, len(forcing))
	for _, r := range forcing {
		quoted = append(quoted, fmt.Sprintf("%q", r))
	}
	b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("the template forces UCS-2 (%s in its own text) for all %s: %s",
		strings.Join(quoted, " "), words.N(messages, "message", "messages"), words.N(extra, "more segment", "more segments")))
	b.warnUCS2Cost()
	return nil
}

// warnUCS2Cost says what UCS-2 costs more than GSM-7 would, with prices.
func (b *builder) warnUCS2Cost() {
	if b.c.Prices == nil {
		return
	}
	if cost, ok := b.ucs2Cost(); cost.IsPositive() {
		more := ""
		if !ok {
			more = ", and more for the recipients without a price"
		}
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
			"UCS-2 costs %s more than the same messages in GSM-7 would%s", words.Money(b.c.Prices.Currency, cost), more))
	}
}

func (b *builder) warnEscape(field string, src campaign.Source) {
	if src.Escapes {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
			"%s:%d: %s: %s is outside the campaign's folder", campaign.Plain(b.c.Path), src.Line, field, campaign.Plain(src.File)))
	}
}

// rowsRead is how many recipient rows add was handed: each one is a
// recipient, an invalid number or a duplicate.
func (b *builder) rowsRead() int {
	s := &b.p.Summary
	return s.Recipients + s.Invalid + s.Duplicates
}

// warnEmptyList warns of a list of recipients that holds none: a CSV file
// with a header row only, a text file of comments and blank lines. It is
// likely a mistake (an export before the list was filled, the wrong file),
// though not an error: the other lists may be the campaign.
func (b *builder) warnEmptyList(src campaign.Source) {
	what := "holds no numbers, only comments or blank lines"
	switch {
	case src.Kind == campaign.KindInline:
		return // numbers: [] is refused when the campaign loads
	case src.Kind == campaign.KindCSV:
		what = "has a header row and no rows"
	}
	b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
		"%s: the list %s, so nobody in it gets a message: check that it was exported whole, and that the campaign names the right file",
		campaign.Plain(src.Path), what))
}

// noteSkipped adds the first maxListed lines of one kind of warning and a
// count of the rest.
func (b *builder) noteSkipped(kind string, lines []string) {
	for i, l := range lines {
		if i == maxListed {
			b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("... and %s more %s %s", words.Count(len(lines)-maxListed), kind, words.Plural(len(lines)-maxListed, "warning", "warnings")))
			break
		}
		b.p.Warnings = append(b.p.Warnings, l)
	}
}

// warnResults warns, once, of a provider.results that reads statuses and
// names no failed ones: a refusal is then a status no list names, which
// leaves its recipients in doubt (never failed, never sent again until
// resolved). Lists whose outcome is fixed read no status.
func (b *builder) warnResults() {
	r := b.c.Provider.Results
	if r == nil {
		return
	}
	read := false // some list reads a status: one could be unrecognised
	for _, l := range r.Lists {
		if l.Status == nil && l.Outcome == mapping.Failed || len(l.Failed) > 0 {
			return
		}
		read = read || l.Status != nil
	}
	if !read {
		return // every element's outcome is fixed: no status to misread
	}
	b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
		"provider.results (%s) lists no failed: statuses: a status that no list names leaves its recipients in doubt, never failed; list the provider's refusal statuses under failed:",
		r.Lists[0].Where))
}
