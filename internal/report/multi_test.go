package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
)

// Many campaigns with large plans, one of them broken: the comment stays
// within GitHub's limit, keeps the table and the summary at the top, gives
// every campaign its section, and its structure is whole (a <details>
// closed for each opened, nothing that is not ours).
func TestCampaignsMarkdownFitsGitHub(t *testing.T) {
	big := pairedPlan(t, 1000)
	var cps []CampaignPlan
	for i := range 8 {
		cps = append(cps, CampaignPlan{File: fmt.Sprintf("campaigns/c%d.yaml", i), Plan: big})
	}
	cps = append(cps, CampaignPlan{File: "campaigns/broken.yaml", Err: errors.New("campaigns/broken.yaml:3: sender: required key is missing")})
	var b bytes.Buffer
	if err := WriteCampaignsMarkdown(&b, cps, Output{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if len(out) > githubCommentLimit {
		t.Fatalf("the comment is %d bytes, over GitHub's %d", len(out), githubCommentLimit)
	}
	if len(out) < githubCommentLimit/2 {
		t.Errorf("the comment is %d bytes: the room was not used", len(out))
	}
	if !strings.HasPrefix(out, "### smsform plan: 9 campaigns\n\n**9 campaigns: 16,000 messages to send in 8; 1 that could not be planned (campaigns/broken.yaml).**") {
		t.Errorf("the comment starts %q", out[:160])
	}
	for _, cp := range cps {
		if !strings.Contains(out, "\n### `"+cp.File+"`\n") {
			t.Errorf("no section for %s", cp.File)
		}
	}
	if open, closed := strings.Count(out, "<details>"), strings.Count(out, "</details>"); open != closed || open < 16 {
		t.Errorf("%d <details> opened, %d closed", open, closed)
	}
	if _, problems := structure(t, b.Bytes()); len(problems) > 0 {
		t.Errorf("problems: %v", problems)
	}
	// A smaller limit leaves plans out rather than cutting one inside a fence.
	b.Reset()
	if err := WriteCampaignsMarkdown(&b, cps, Output{MarkdownLimit: 6000}); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 6000 || !strings.Contains(b.String(), "left out to fit GitHub's comment limit") {
		t.Errorf("with a 6,000-byte limit: %d bytes:\n%s", b.Len(), b.String())
	}
	if open, closed := strings.Count(b.String(), "<details>"), strings.Count(b.String(), "</details>"); open != closed {
		t.Errorf("with a 6,000-byte limit, %d <details> opened, %d closed", open, closed)
	}
}

// A hostile file name or error renders as text, in the table, the summary
// and the code block alike.
func TestCampaignsMarkdownCannotBeBrokenOutOf(t *testing.T) {
	render := func(s string) []byte {
		var b bytes.Buffer
		cps := []CampaignPlan{
			{File: "campaigns/" + s + ".yaml", Plan: hostilePlan(s)},
			{File: "campaigns/b" + s + ".yaml", Err: errors.New("campaigns/b.yaml:1: " + s + "\nsecond line " + s)},
		}
		if err := WriteCampaignsMarkdown(&b, cps, Output{MarkdownLimit: 1 << 30}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	want, problems := structure(t, render("x"))
	if len(problems) > 0 || want["Table"] < 1 {
		t.Fatalf("the clean comment: %v, %v", want, problems)
	}
	for _, s := range hostile {
		md := render(s)
		got, problems := structure(t, md)
		if !maps.Equal(got, want) || len(problems) > 0 {
			t.Errorf("with %q: structure %v, clean %v; problems %v\n%s", s, got, want, problems, md)
		}
	}
}

func TestCampaignsJSONIsOneDocument(t *testing.T) {
	cps := []CampaignPlan{
		{File: "a.yaml", Plan: personalisedPlan(t, 3), Saved: "plans/t.plan"},
		{File: "b.yaml", Err: errors.New("b.yaml:1: bad, call +447400123459")},
	}
	var b bytes.Buffer
	if err := WriteCampaignsJSON(&b, cps, Output{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		FormatVersion string `json:"format_version"`
		Campaigns     []struct {
			File, Error, Saved string
			Plan               *struct{ Campaign string }
		}
		Summary Campaigns
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	if len(doc.Campaigns) != 2 || doc.Campaigns[0].Plan == nil || doc.Campaigns[0].Saved != "plans/t.plan" || doc.Campaigns[1].Error == "" {
		t.Errorf("campaigns: %+v", doc.Campaigns)
	}
	if strings.Contains(doc.Campaigns[1].Error, "+447400123459") {
		t.Errorf("the error shows a number whole: %s", doc.Campaigns[1].Error)
	}
	if want := (Campaigns{Campaigns: 2, ToSend: 3, Pending: 1, Errors: 1}); doc.Summary != want {
		t.Errorf("summary = %+v, want %+v", doc.Summary, want)
	}
}
