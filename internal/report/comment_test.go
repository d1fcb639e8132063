package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clipperhouse/displaywidth"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"

	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
)

// The pull request's comment, as smsform's GitHub Action posts it (plan
// --format markdown of the changed campaigns) and as GitHub shows it:
// rendered to HTML with GitHub's extensions.

const commentPrices = "country,prefix,price_per_segment,currency\nDE,,0.0750,EUR\nFR,,0.0650,EUR\nGB,,0.0350,EUR\nGB,+447400,0.0420,EUR\nIN,,0.0036,EUR\nUS,,0.0079,EUR\n"

// commentNumber is the i-th number of a country.
func commentNumber(country string, i int) string {
	switch country {
	case "GB":
		return fmt.Sprintf("+447400%06d", 100000+i)
	case "US":
		return fmt.Sprintf("+1212555%04d", i)
	case "IN":
		return fmt.Sprintf("+9198%08d", 10000000+i)
	case "FR":
		return fmt.Sprintf("+336%08d", 12000000+i)
	}
	return fmt.Sprintf("+49151%08d", 20000000+i)
}

// commentPlans are three campaigns a pull request changes: one in five
// countries with a send window, prices, a budget, a template with
// branches and a UCS-2 name; one whose messages are each personal; one
// over its budget. They are planned as at Monday 07:30 UTC, against a
// state that records nothing, at a runner's path.
func commentPlans(t *testing.T) []CampaignPlan {
	t.Helper()
	at := time.Date(2026, 11, 23, 7, 30, 0, 0, time.UTC)
	var winter, loyalty, flash strings.Builder
	winter.WriteString("phone,name,tier\n")
	names := []string{"Ann", "Ben", "Cid", "Dora", "Eve", "Finn"}
	for ci, country := range []string{"GB", "US", "IN", "FR", "DE"} {
		for i := range 12 - 2*ci {
			name := names[i%len(names)]
			if country == "GB" && i == 7 {
				name = "Łukasz"
			}
			fmt.Fprintf(&winter, "%s,%s,%s\n", commentNumber(country, i), name, []string{"gold", "silver"}[i%2])
		}
	}
	loyalty.WriteString("phone,name,code\n")
	for i := range 30 {
		fmt.Fprintf(&loyalty, "%s,%s,L%05d\n", commentNumber("GB", 500+i), names[i%len(names)], i*7919%100000)
	}
	flash.WriteString("phone\n")
	for i := range 25 {
		fmt.Fprintf(&flash, "%s\n", commentNumber("FR", 900+i))
	}
	campaigns := []struct{ file, yaml, list string }{
		{"campaigns/winter.yaml", "version: 1\nname: winter-sale\nsender: ACME\nrecipients:\n  - file: list.csv\n" +
			"body: |-\n  Hi {{ .name }}, {{ if eq .tier \"gold\" }}as a gold member you get 30% off everything this weekend, plus free delivery on orders over 20 EUR.{{ else }}our winter sale starts Saturday: 20% off everything.{{ end }} Reply STOP to opt out.\n" +
			"prices: prices.csv\nbudget: {max_total: 10}\nsend_window: {days: [mon, tue, wed, thu, fri, sat], from: \"09:00\", to: \"20:00\"}\nbatch_size: 10\n", winter.String()},
		{"campaigns/loyalty.yaml", "version: 1\nname: loyalty-codes\nsender: ACME\nrecipients:\n  - file: list.csv\n" +
			"body: \"Hi {{ .name }}, here’s your personal code {{ .code }} – show it at the till for 10% off.\"\nprices: prices.csv\n", loyalty.String()},
		{"campaigns/flash.yaml", "version: 1\nname: flash-sale\nsender: ACME\nrecipients:\n  - file: list.csv\n" +
			"body: ACME flash sale today only, 50% off coats. Reply STOP to opt out.\nprices: prices.csv\nbudget: {max_total: 1}\n", flash.String()},
	}
	var cps []CampaignPlan
	for _, c := range campaigns {
		camp := testharness.LoadCampaign(t, c.yaml, map[string]string{"list.csv": c.list, "prices.csv": commentPrices})
		p, err := plan.Compute(context.Background(), camp, noState{"/home/runner/work/acme/acme/.smsform/smsform.smsstate"})
		var over *plan.BudgetError
		if err != nil && !errors.As(err, &over) {
			t.Fatal(err)
		}
		if serr := p.ScheduleAt(at); serr != nil {
			t.Fatal(serr)
		}
		cps = append(cps, CampaignPlan{File: c.file, Plan: p, Err: err, State: ".smsform/"})
	}
	return cps
}

// renderGitHub renders a comment as GitHub does: CommonMark with its
// table, strikethrough, autolink and task list extensions, and the HTML
// GitHub lets through (<details>, <summary>) kept.
func renderGitHub(t *testing.T, md []byte) string {
	t.Helper()
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	if err := gm.Convert(md, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

var (
	preBlock   = regexp.MustCompile(`(?s)<pre><code[^>]*>(.*?)</code></pre>`)
	absPath    = regexp.MustCompile("(^|[\\s(`'\"])/(home|tmp|var|usr|Users|runner|work)/")
	firstFolds = regexp.MustCompile(`(?s)^(.*?)<details>`)
)

// TestCommentFirstScreen: the Action's comment for a pull request that
// changes one campaign, and one that changes three, rendered as GitHub
// renders it. Before anything is unfolded a reviewer sees, for each
// campaign, the budget's verdict, the cost, when the first and the last
// messages go, and the template; no line of a code block is wider than
// the comment; no runner's path shows; the one-line summary adds up. The
// comments are held to goldens.
func TestCommentFirstScreen(t *testing.T) {
	cps := commentPlans(t)
	for _, tt := range []struct {
		name string
		cps  []CampaignPlan
		want []string // in the HTML before the first <details>
	}{
		{"comment-1", cps[:1], []string{
			"<strong>1 campaign: 40 messages to send in 1, costing EUR 1.3438.</strong>",
			"within budget: cost EUR 1.3438 of EUR 10.0000",
			"the first messages go now (Asia/Kolkata); the last go from 2026-11-23 14:00 UTC (America/New_York)",
			"{{ if eq .tier &quot;gold&quot; }}", "<strong>EUR 1.3438</strong></td>"}},
		{"comment-3", cps, []string{
			"<strong>3 campaigns: 70 messages to send in 2, costing EUR 3.8638; 25 messages in 1 that apply will refuse (flash-sale: over budget).</strong>",
			"within budget: cost EUR 1.3438 of EUR 10.0000", "over budget</strong>, apply will refuse this plan",
			"cost EUR 1.6250 exceeds max_total EUR 1.0000 by EUR 0.6250",
			"the first messages go now (Asia/Kolkata); the last go from 2026-11-23 14:00 UTC (America/New_York)",
			"{{ if eq .tier &quot;gold&quot; }}", "here’s your personal code {{ .code }}"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteCampaignsMarkdown(&b, tt.cps, Output{}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "golden", tt.name+".md"), b.Bytes())
			page := renderGitHub(t, b.Bytes())
			// Each campaign's first screen is before its section's first
			// <details>.
			for i, section := range strings.Split(page, "<hr>")[1:] {
				m := firstFolds.FindStringSubmatch(section)
				if m == nil {
					t.Fatalf("a section with nothing folded:\n%s", section)
				}
				wants := []string{"<strong>When:</strong>", "Template:", "EUR "}
				if tt.cps[i].Plan.Budget != nil {
					wants = append(wants, "<strong>Budget:</strong>")
				}
				for _, want := range wants {
					if !strings.Contains(m[1], want) {
						t.Errorf("a campaign's first screen lacks %q:\n%s", want, m[1])
					}
				}
			}
			for _, want := range tt.want {
				if !strings.Contains(page, want) {
					t.Errorf("the comment lacks %q", want)
				}
			}
			for _, pre := range preBlock.FindAllStringSubmatch(page, -1) {
				for _, line := range strings.Split(pre[1], "\n") {
					line = strings.NewReplacer("&quot;", `"`, "&amp;", "&", "&lt;", "<", "&gt;", ">", "&#39;", "'").Replace(line)
					if w := displaywidth.String(line); w > fenceWidth {
						t.Errorf("a code block's line is %d columns, over %d: %q", w, fenceWidth, line)
					}
				}
			}
			if loc := absPath.FindStringIndex(b.String()); loc != nil {
				t.Errorf("a local path in the comment: %q", b.String()[max(loc[0]-40, 0):loc[1]+20])
			}
			for _, cp := range tt.cps {
				if n := strings.Count(b.String(), "**"+Output{}.withMoney(plansOf(tt.cps)...).headline(cp.Plan)+"**"); n != 1 {
					t.Errorf("%s: the headline is written %d times, want once", cp.File, n)
				}
			}
		})
	}
}
