package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
}

// Campaigns sums up several campaigns' plans.
type Campaigns struct {
	Campaigns int `json:"campaigns"`
	ToSend    int `json:"to_send"`   // messages, over every campaign
	Pending   int `json:"pending"`   // campaigns with something to send
	Errors    int `json:"errors"`    // campaigns that failed to plan or whose plan is refused
	Unchanged int `json:"unchanged"` // campaigns with nothing to send and no error
}

// SumCampaigns counts cps.
func SumCampaigns(cps []CampaignPlan) Campaigns {
	s := Campaigns{Campaigns: len(cps)}
	for _, cp := range cps {
		switch {
		case cp.Err != nil:
			s.Errors++
		case cp.Plan.Summary.ToSend == 0:
			s.Unchanged++
		}
		if cp.Plan != nil && cp.Plan.Summary.ToSend > 0 {
			s.ToSend += cp.Plan.Summary.ToSend
			s.Pending++
		}
	}
	return s
}

// Line is the combined summary in one line: "3 campaigns: 1,204 messages
// to send in 2, 1 with nothing to send, 1 with errors."
func (s Campaigns) Line() string {
	parts := []string{fmt.Sprintf("%s to send in %s", words.N(s.ToSend, "message", "messages"), words.Count(s.Pending))}
	if s.Unchanged > 0 {
		parts = append(parts, fmt.Sprintf("%s with nothing to send", words.Count(s.Unchanged)))
	}
	if s.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%s with errors", words.Count(s.Errors)))
	}
	return fmt.Sprintf("%s: %s.", words.N(s.Campaigns, "campaign", "campaigns"), strings.Join(parts, ", "))
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

// WriteCampaignsTable writes each campaign's plan as [WriteTable] does,
// under a line naming its file, then the combined summary.
func WriteCampaignsTable(w io.Writer, cps []CampaignPlan, o Output) error {
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
			fmt.Fprintf(w, "Error: %s\n", oneLine(first))
		}
		if cp.Saved != "" {
			fmt.Fprintf(w, "Saved to %s.\n", oneLine(cp.Saved))
		}
		if cp.Plan == nil || cp.Saved != "" { // a table ends with a blank line
			fmt.Fprintln(w)
		}
	}
	_, err := fmt.Fprintln(w, o.paint(ansiBold, SumCampaigns(cps).Line()))
	return err
}

// WriteCampaignsJSON writes one JSON document: each campaign's file, its
// plan as [WriteJSON] writes it (streamed), its error, the plan file
// saved, and the combined counts.
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
	_, err = fmt.Fprintf(w, "\n  ],\n  \"summary\": %s\n}\n", sum)
	return err
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// WriteCampaignsMarkdown writes one pull-request comment for several
// campaigns: a table with each campaign's headline and the combined
// summary first, then each campaign's plan in a collapsed <details>, all
// within o.MarkdownLimit (by default GitHub's 65,536 less ciRoom). Each campaign gets
// an equal share of the room the table leaves, and what one leaves unused
// goes to the next; within its share its batches are cut from the middle,
// as [WriteMarkdown] does.
func WriteCampaignsMarkdown(w io.Writer, cps []CampaignPlan, o Output) error {
	limit := o.MarkdownLimit
	if limit <= 0 {
		limit = githubCommentLimit - ciRoom
	}
	head := campaignsHead(cps, o)
	if len(head) > limit/2 { // thousands of campaigns: the table alone is too long
		head = head[:strings.LastIndex(head[:limit/2], "\n")+1] + "\n**… the table is cut to fit GitHub's comment limit.**\n\n"
	}
	var out strings.Builder
	out.WriteString(head)
	left := limit - len(head)
	for i, cp := range cps {
		part, err := campaignDetails(cp, o, (left-(len(cps)-i)*detailsRoom)/(len(cps)-i))
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

// detailsRoom is what one campaign's <details> frame may take besides its
// plan: the summary line (a path and a headline) and the tags.
const detailsRoom = 600

// minPlanRoom is the least room worth rendering a plan in: its summary,
// budget and message take about this much.
const minPlanRoom = 2000

func campaignsHead(cps []CampaignPlan, o Output) string {
	var h strings.Builder
	sum := SumCampaigns(cps)
	fmt.Fprintf(&h, "### smsform plan: %s\n\n**%s**\n\n", words.N(sum.Campaigns, "campaign", "campaigns"), sum.Line())
	h.WriteString("| campaign | plan |\n|---|---|\n")
	for _, cp := range cps {
		fmt.Fprintf(&h, "| %s | %s |\n", mdCode(cp.File, true), cellText(campaignWords(cp, o)))
	}
	h.WriteString("\n")
	return h.String()
}

// campaignWords is a campaign's one line: its headline, or its error.
func campaignWords(cp CampaignPlan, o Output) string {
	s := ""
	if cp.Plan != nil {
		s = Headline(cp.Plan)
	}
	if cp.Err != nil {
		first, _, _ := strings.Cut(o.errText(cp.Err), "\n")
		s = strings.TrimSpace(s + " ❌ " + first)
	}
	return s
}

// cellText is text from outside in a table cell, on one line.
func cellText(s string) string { return mdText(strings.ReplaceAll(s, "\n", " ")) }

// campaignDetails is one campaign's collapsed section: its error in full
// and its plan, the plan within room bytes.
func campaignDetails(cp CampaignPlan, o Output, room int) (string, error) {
	var b strings.Builder
	b.WriteString(mdSummary(cp.File+": "+campaignWords(cp, o)) + "\n\n")
	if cp.Err != nil {
		b.WriteString(mdFence(errorLines(o.errText(cp.Err)), "") + "\n\n")
	}
	if cp.Plan != nil {
		po := o
		po.MarkdownLimit = room - b.Len()
		var plan strings.Builder
		if po.MarkdownLimit >= minPlanRoom {
			if err := WriteMarkdown(&plan, cp.Plan, po); err != nil {
				return "", err
			}
		}
		// A plan whose summary alone passes its share is cut hard, maybe
		// inside a code fence that would swallow the </details>: then
		// the section says where to see it instead.
		if plan.Len() == 0 || strings.HasSuffix(plan.String(), "\n…\n") {
			plan.Reset()
			fmt.Fprintf(&plan, "**The plan is left out to fit GitHub's comment limit; %s shows it.**\n", mdCode("smsform plan "+cp.File, false))
		}
		b.WriteString(plan.String())
	}
	b.WriteString("\n</details>\n\n")
	return b.String(), nil
}
