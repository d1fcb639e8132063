package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// CampaignPlan is one campaign's part of a plan of several campaigns: its
// plan, or why it has none, or both (a plan shown with its error: over
// budget, invalid numbers).
type CampaignPlan struct {
	File  string     // the campaign file, as the command line named it
	Plan  *plan.Plan // nil when the campaign could not be planned
	Err   error      // nil when it planned cleanly
	Saved string     // the plan file written (--out), "" when none
	// State names the campaign's state for a pull request: the project's
	// state: as written, or a database without its credentials; "" for a
	// name made from the plan's (never a runner's absolute path).
	State string
}

// Campaigns sums up several campaigns' plans. Each campaign is counted in
// one of Pending, RefusedCampaigns, Unchanged and the campaigns with no
// plan (Errors less the refused ones with an error), so that they add up
// to Campaigns.
type Campaigns struct {
	Campaigns int `json:"campaigns"`
	ToSend    int `json:"to_send"` // messages apply will send, over every campaign
	Pending   int `json:"pending"` // campaigns apply will send something of
	// Refused counts the messages of the plans apply will refuse (over
	// budget, invalid numbers, paused), in RefusedCampaigns campaigns.
	Refused          int `json:"refused"`
	RefusedCampaigns int `json:"refused_campaigns"`
	Errors           int `json:"errors"`    // campaigns that failed to plan or whose plan is refused with an error
	Unchanged        int `json:"unchanged"` // campaigns with nothing to send and no error
}

// refusal is why apply will refuse a campaign's plan, "" when it will
// take it: what the states say (see plan.Refusal), its error (over
// budget, invalid numbers), or its pause.
func refusal(cp CampaignPlan) string {
	var budget *plan.BudgetError
	switch {
	case cp.Plan == nil:
		return ""
	case cp.Plan.Refusal != nil:
		return refusalWords[cp.Plan.Refusal.Kind]
	case errors.As(cp.Err, &budget):
		return "over budget"
	case cp.Err != nil:
		first, _, _ := strings.Cut(cp.Err.Error(), "\n")
		return first
	case cp.Plan.Paused != nil:
		return "paused"
	}
	return ""
}

// refusalWords say each kind of plan.Refusal in a few words.
var refusalWords = map[plan.RefusalKind]string{
	plan.RefusedSplitLedger:  "another state holds its ledger",
	plan.RefusedUnchecked:    "a state could not be checked",
	plan.RefusedEarlierState: "signs of an earlier state",
	plan.RefusedPaused:       "paused",
}

// SumCampaigns counts cps.
func SumCampaigns(cps []CampaignPlan) Campaigns {
	s := Campaigns{Campaigns: len(cps)}
	for _, cp := range cps {
		if cp.Err != nil {
			s.Errors++
		}
		switch {
		case cp.Plan == nil:
		case refusal(cp) != "":
			s.RefusedCampaigns++
			s.Refused += cp.Plan.Summary.ToSend
		case cp.Plan.Summary.ToSend == 0:
			s.Unchanged++
		default:
			s.Pending++
			s.ToSend += cp.Plan.Summary.ToSend
		}
	}
	return s
}

// campaignsLine is the several campaigns' summary as one sentence: what
// will be sent and what it costs, each currency on its own; what apply
// will refuse, and why; what is unchanged; what could not be planned.
// "3 campaigns: 4,308 messages to send in 2, costing EUR 174.612; 1,400
// messages in 1 that apply will refuse (flash-sale: over budget)."
func (o Output) campaignsLine(cps []CampaignPlan) string {
	s := SumCampaigns(cps)
	var parts []string
	if s.Pending > 0 {
		send := fmt.Sprintf("%s to send in %s", words.N(s.ToSend, "message", "messages"), words.Count(s.Pending))
		if cost := o.sendingCost(cps); cost != "" {
			send += ", costing " + cost
		}
		parts = append(parts, send)
	} else {
		parts = append(parts, "nothing to send")
	}
	if s.RefusedCampaigns > 0 {
		var why []string
		for _, cp := range cps {
			if r := refusal(cp); r != "" {
				why = append(why, cp.Plan.Campaign+": "+r)
			}
		}
		parts = append(parts, fmt.Sprintf("%s in %s that apply will refuse (%s)",
			words.N(s.Refused, "message", "messages"), words.Count(s.RefusedCampaigns), strings.Join(why, "; ")))
	}
	if s.Unchanged > 0 {
		parts = append(parts, fmt.Sprintf("%s with nothing to send", words.Count(s.Unchanged)))
	}
	var failed []string
	for _, cp := range cps {
		if cp.Plan == nil {
			failed = append(failed, cp.File)
		}
	}
	if len(failed) > 0 {
		parts = append(parts, fmt.Sprintf("%s that could not be planned (%s)", words.Count(len(failed)), strings.Join(failed, ", ")))
	}
	return oneLine(fmt.Sprintf("%s: %s.", words.N(s.Campaigns, "campaign", "campaigns"), strings.Join(parts, "; ")))
}

// sendingCost is what the plans apply will send cost together, each
// currency on its own ("EUR 174.612 and USD 3.00"), "" without prices.
func (o Output) sendingCost(cps []CampaignPlan) string {
	var out []string
	for _, t := range sendingCosts(cps) {
		a, ok := o.money[t.Currency]
		if !ok {
			a = words.NewAmounts(t.Currency, t.Total)
		}
		out = append(out, a.Money(t.Total))
	}
	s := strings.Join(out, " and ")
	if s != "" && slices.ContainsFunc(cps, func(cp CampaignPlan) bool {
		return cp.Plan != nil && cp.Plan.Cost != nil && len(cp.Plan.Cost.Unpriced) > 0 && refusal(cp) == ""
	}) {
		s += " + no price for some"
	}
	return s
}

// errText is a campaign's error as outputs show it: numbers masked unless
// asked for.
func (o Output) errText(err error) string {
	if o.ShowNumbers {
		return err.Error()
	}
	return e164.MaskAny(err.Error())
}

// errorLines writes an error as stderr does, each of its lines (a joined
// error has several) after "error: ", so that none starts with the words
// it quotes.
func errorLines(err string) string {
	lines := strings.Split(err, "\n")
	for i, l := range lines {
		lines[i] = "error: " + l
	}
	return strings.Join(lines, "\n")
}

// plansOf are the plans of cps, nil for a campaign with none.
func plansOf(cps []CampaignPlan) []*plan.Plan {
	ps := make([]*plan.Plan, len(cps))
	for i, cp := range cps {
		ps[i] = cp.Plan
	}
	return ps
}

// WriteCampaignsTable writes each campaign's plan as [WriteTable] does,
// under a line naming its file, then the combined summary. It is one
// output: each currency is written with one precision throughout.
func WriteCampaignsTable(w io.Writer, cps []CampaignPlan, o Output) error {
	o = o.withMoney(plansOf(cps)...).forPeople(false)
	for _, cp := range cps {
		if _, err := fmt.Fprintf(w, "==> %s\n", oneLine(cp.File)); err != nil {
			return err
		}
		if cp.Plan != nil {
			if err := WriteTable(w, cp.Plan, o); err != nil {
				return err
			}
		}
		if cp.Err != nil {
			first, _, _ := strings.Cut(o.errText(cp.Err), "\n")
			fmt.Fprintln(w, wrapProse("Error: "+oneLine(first), o.Width, "  "))
		}
		if cp.Saved != "" {
			fmt.Fprintf(w, "Saved to %s.\n", oneLine(cp.Saved))
		}
		if cp.Plan == nil || cp.Saved != "" { // a table ends with a blank line
			fmt.Fprintln(w)
		}
	}
	_, err := fmt.Fprintln(w, o.paint(ansiBold, wrapProse(o.campaignsLine(cps), o.Width, "  ")))
	return err
}

// WriteCampaignsJSON writes one JSON document: each campaign's file, its
// plan as [WriteJSON] writes it (streamed), its error, the plan file
// saved, and the combined counts; "cost" is what the plans apply will
// send cost, by currency, as exact decimal strings.
func WriteCampaignsJSON(w io.Writer, cps []CampaignPlan, o Output) error {
	fmt.Fprintf(w, "{\n  \"format_version\": %q,\n  \"campaigns\": [", plan.FormatVersion)
	for i, cp := range cps {
		if i > 0 {
			io.WriteString(w, ",")
		}
		fmt.Fprintf(w, "\n    {\"file\": %s", jsonString(cp.File))
		if cp.Err != nil {
			fmt.Fprintf(w, ", \"error\": %s", jsonString(o.errText(cp.Err)))
		}
		if cp.Saved != "" {
			fmt.Fprintf(w, ", \"saved\": %s", jsonString(cp.Saved))
		}
		if cp.Plan != nil {
			io.WriteString(w, ", \"plan\": ")
			if err := WriteJSON(w, cp.Plan, o); err != nil {
				return err
			}
		}
		io.WriteString(w, "}")
	}
	sum, err := json.MarshalIndent(SumCampaigns(cps), "  ", "  ")
	if err != nil {
		return err
	}
	cost, err := json.Marshal(sendingCosts(cps))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "\n  ],\n  \"summary\": %s,\n  \"cost\": %s\n}\n", sum, cost)
	return err
}

// currencyTotal is one currency's total in the JSON of several campaigns.
type currencyTotal struct {
	Currency string          `json:"currency"`
	Total    decimal.Decimal `json:"total"`
}

// sendingCosts is what the plans apply will send cost, by currency, in
// the order the campaigns name them.
func sendingCosts(cps []CampaignPlan) []currencyTotal {
	out := []currencyTotal{}
	for _, cp := range cps {
		if cp.Plan == nil || cp.Plan.Cost == nil || refusal(cp) != "" || cp.Plan.Summary.ToSend == 0 {
			continue
		}
		c := cp.Plan.Cost
		i := slices.IndexFunc(out, func(t currencyTotal) bool { return t.Currency == c.Currency })
		if i < 0 {
			out = append(out, currencyTotal{Currency: c.Currency})
			i = len(out) - 1
		}
		out[i].Total = out[i].Total.Add(c.Total)
	}
	return out
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// WriteCampaignsMarkdown writes one pull-request comment for several
// campaigns (the comment smsform's GitHub Action keeps): the summary
// sentence first, an index of the campaigns when there are several, then
// each campaign's section, unfolded: its heading, its error and its plan
// as [WriteMarkdown] writes it (whose first screen holds every decision).
// All of it fits o.MarkdownLimit (by default GitHub's 65,536 less
// ciRoom): each campaign gets an equal share of the room the head
// leaves, and what one leaves unused goes to the next; within its share
// its batches are cut from the middle. It is one output: each currency is
// written with one precision throughout.
func WriteCampaignsMarkdown(w io.Writer, cps []CampaignPlan, o Output) error {
	limit := o.MarkdownLimit
	if limit <= 0 {
		limit = githubCommentLimit - ciRoom
	}
	o = o.withMoney(plansOf(cps)...).forPeople(false)
	head := o.campaignsHead(cps)
	if len(head) > limit/2 { // thousands of campaigns: the index alone is too long
		head = head[:strings.LastIndex(head[:limit/2], "\n")+1] + "\n**… the index is cut to fit GitHub's comment limit.**\n\n"
	}
	var out strings.Builder
	out.WriteString(head)
	left := limit - len(head)
	for i, cp := range cps {
		part, err := o.campaignSection(cp, (left-(len(cps)-i)*sectionRoom)/(len(cps)-i))
		if err != nil {
			return err
		}
		if len(part) > left {
			fmt.Fprintf(&out, "**… %s left out to fit GitHub's comment limit; `smsform plan` shows them.**\n", words.N(len(cps)-i, "campaign", "campaigns"))
			break
		}
		out.WriteString(part)
		left -= len(part)
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// ciRoom is left for what a CI job adds to the comment: the marker that
// finds it again, a link to the run.
const ciRoom = 1024

// sectionRoom is what one campaign's section may take besides its plan:
// its heading and its error.
const sectionRoom = 600

// minPlanRoom is the least room worth rendering a plan in: its first
// screen takes about this much.
const minPlanRoom = 2000

// campaignsHead is the comment's head: a title, the summary sentence and,
// for several campaigns, an index: each campaign's file, what apply will
// do with it, its messages and cost (its headline is in its section).
func (o Output) campaignsHead(cps []CampaignPlan) string {
	var h strings.Builder
	fmt.Fprintf(&h, "### smsform plan: %s\n\n**%s**\n\n", words.N(len(cps), "campaign", "campaigns"), mdText(o.campaignsLine(cps)))
	if len(cps) < 2 {
		return h.String()
	}
	h.WriteString("| Campaign | Apply | Messages | Cost |\n|---|---|---:|---:|\n")
	for _, cp := range cps {
		verdict, messages, cost := "❌ could not be planned", "", ""
		if p := cp.Plan; p != nil {
			messages = words.Count(p.Summary.ToSend)
			if c := p.Cost; c != nil {
				cost = o.amounts(p).Money(c.Total)
			}
			switch r := refusal(cp); {
			case r != "":
				verdict = "❌ refuses: " + r
			case p.Summary.ToSend == 0:
				verdict = "nothing to send"
			default:
				verdict = "✅ sends"
			}
		}
		fmt.Fprintf(&h, "| %s | %s | %s | %s |\n", mdCode(cp.File, true), cellText(verdict), messages, cost)
	}
	h.WriteString("\n")
	return h.String()
}

// cellText is text from outside in a table cell, on one line.
func cellText(s string) string { return mdText(s) }

// campaignSection is one campaign's section: a heading naming its file,
// its error, and its plan within room bytes.
func (o Output) campaignSection(cp CampaignPlan, room int) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "---\n\n### %s\n\n", mdCode(cp.File, false))
	var budget *plan.BudgetError
	if cp.Err != nil && !(cp.Plan != nil && errors.As(cp.Err, &budget)) { // the plan's budget verdict says it
		fmt.Fprintf(&b, "❌ **%s**\n\n", mdText(firstLine(o.errText(cp.Err))))
		if strings.Contains(cp.Err.Error(), "\n") {
			b.WriteString(mdFence(errorLines(o.errText(cp.Err)), "") + "\n\n")
		}
	}
	if cp.Plan == nil {
		return b.String(), nil
	}
	po := o
	po.MarkdownLimit = room - b.Len()
	text := ""
	if po.MarkdownLimit >= minPlanRoom {
		var err error
		if text, err = po.markdown(cp.Plan, cp.State); err != nil {
			return "", err
		}
	}
	// A plan whose first screen alone passes its share is cut hard, maybe
	// inside a code fence that would swallow what follows: then the
	// section says where to see it instead.
	if text == "" || strings.HasSuffix(text, "\n…\n") {
		text = fmt.Sprintf("**The plan is left out to fit GitHub's comment limit; %s shows it.**\n\n", mdCode("smsform plan "+cp.File, false))
	}
	b.WriteString(text)
	return b.String(), nil
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
