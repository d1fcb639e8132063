package report

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/smsform/smsform/plan"
)

// hostile are strings from outside that would break a comment written
// raw: close a <details>, open an HTML comment, mention a team, leave a
// code fence, start a table cell, a link, emphasis, math, a heading.
var hostile = []string{
	"evil</details><!--",
	"```",
	"````\n</details>\n````",
	"@acme/security please look",
	"a | b | c",
	"<script>alert(1)</script>",
	"[click](http://evil.example/login) ![x](http://evil.example/x.png)",
	"www.evil.example and https://evil.example",
	"someone@evil.example",
	"**bold** _it_ ~~gone~~ $x^2$",
	"\r</details>\r<!--",
	"\n\n# Heading\n\n---\n",
	"~~~\n</details>",
	"&lt;/details&gt; &#60;!--",
	"fixes #12",
	"\\",
	"`",
	" ` ",
	"\x1b[2J\x00",
	"<!-- -->",
	"    indented code",
	"> quote",
	"1. item",
	"|---|---|",
}

// hostilePlan is a plan with s in every place text from outside reaches
// the comment: names, paths, list headers and values, bodies and the
// template, samples, warnings, budget lines, provider reasons.
func hostilePlan(s string) *plan.Plan {
	max, total := decimal.RequireFromString("0.05"), decimal.RequireFromString("0.1")
	return &plan.Plan{
		Campaign: "c" + s, Sender: "ACME" + s,
		Summary: plan.Summary{Recipients: 2, ToSend: 2, Batches: 2, Segments: 2, Invalid: 1, Duplicates: 1},
		Batches: []plan.Batch{
			{ID: "b-1", Body: "Hi " + s, Encoding: "GSM-7", Segments: 1, Recipients: []string{"+447400123459"}},
			{ID: "b-2", Body: s + "\n" + s, Encoding: "GSM-7", Segments: 1, Recipients: []string{"+447400123458"}},
		},
		Invalid:   []plan.Invalid{{Source: s + "/l.csv:2", Value: "07400 " + s, Reason: "not a phone number: " + s}},
		Warnings:  []string{"lists/" + s + ".csv:3: " + s},
		InDoubt:   []plan.Held{{Phone: "+447400123450", BatchID: "b-0", Reason: s}},
		State:     plan.StateStamp{Location: s + ".smsstate", FirstSend: true},
		Template:  "Hi {{ ." + s + " }}",
		Samples:   []plan.Sample{{Why: []string{"longest " + s}, Phone: "+447400123459", Body: "Hi " + s, Encoding: "GSM-7", Segments: 1, Characters: 3}},
		Countries: []plan.CountryCount{{Country: "GB", Recipients: 2, Segments: 2}},
		Cost: &plan.Cost{Currency: "EUR", Total: total,
			ByCountry: []plan.CountryCost{{Country: "GB", Recipients: 2, Segments: 2, Cost: total}}},
		Budget:        &plan.BudgetCheck{MaxTotal: &max, Exceeded: []string{"cost over: " + s}},
		DuplicateRows: []plan.Duplicate{{Row: s + "/l.csv:3", Kept: s + "/l.csv:2", Phone: "+447400123459"}},
	}
}

// structure is what a comment is made of once rendered: how many nodes of
// each kind, text aside. Alongside, the problems: raw HTML that is not
// ours, a mention or an issue reference in text.
func structure(t *testing.T, md []byte) (kinds map[string]int, problems []string) {
	t.Helper()
	// The note under a code block that was wrapped is ours, and comes
	// with long text only: it is left out of the comparison.
	md = regexp.MustCompile(`(?m)^ *`+regexp.QuoteMeta(wrapNote)+`\n`).ReplaceAll(md, nil)
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM))
	doc := gm.Parser().Parse(text.NewReader(md))
	kinds = map[string]int{}
	mention := regexp.MustCompile(`(^|[^\w])[@#]\w`)
	ours := regexp.MustCompile(`^(<details><summary>[^<>]*</summary>|</details>)$`)
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Text:
			if s := string(n.Segment.Value(md)); mention.MatchString(s) {
				problems = append(problems, "a mention or reference in text: "+s)
			}
			return ast.WalkContinue, nil
		case *ast.String:
			return ast.WalkContinue, nil
		case *ast.HTMLBlock:
			for i := 0; i < n.Lines().Len(); i++ {
				line := n.Lines().At(i)
				if l := strings.TrimRight(string(line.Value(md)), "\n"); l != "" && !ours.MatchString(l) {
					problems = append(problems, "raw HTML that is not ours: "+l)
				}
			}
		case *ast.RawHTML:
			problems = append(problems, "inline raw HTML")
		case *ast.CodeSpan:
			// GitHub reads nothing in code: no mention, no reference.
			kinds[n.Kind().String()]++
			return ast.WalkSkipChildren, nil
		}
		kinds[n.Kind().String()]++
		return ast.WalkContinue, nil
	})
	return kinds, problems
}

// checkSafe holds the comment of the plan made with s to the structure
// of the plan made with a plain word.
func checkSafe(t *testing.T, s string) {
	t.Helper()
	render := func(p *plan.Plan) []byte {
		var b bytes.Buffer
		// No cut: a comment cut to fit GitHub's limit is held to its
		// shape by TestMarkdownCutsTheMiddle.
		if err := WriteMarkdown(&b, p, Output{MarkdownLimit: 1 << 30}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	want, _ := structure(t, render(hostilePlan("x")))
	md := render(hostilePlan(s))
	got, problems := structure(t, md)
	if !maps.Equal(got, want) {
		var diff []string
		for _, k := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, int) bool) {
			for k, v := range got {
				yield(k, v)
			}
			for k, v := range want {
				yield(k, v)
			}
		}))) {
			if got[k] != want[k] {
				diff = append(diff, fmt.Sprintf("%s: %d, clean %d", k, got[k], want[k]))
			}
		}
		problems = append(problems, "structure differs: "+strings.Join(diff, "; "))
	}
	if len(problems) > 0 {
		t.Errorf("with %q:\n%s\n--- markdown:\n%s", s, strings.Join(problems, "\n"), md)
	}
}

// TestMarkdownCannotBeBrokenOutOf: the comment of a plan whose every user
// string is hostile parses to the same structure as a clean one's, and
// user text only ever becomes text.
func TestMarkdownCannotBeBrokenOutOf(t *testing.T) {
	clean, problems := structure(t, func() []byte {
		var b bytes.Buffer
		WriteMarkdown(&b, hostilePlan("x"), Output{})
		return b.Bytes()
	}())
	if len(problems) > 0 {
		t.Fatalf("the clean comment has problems: %v", problems)
	}
	// The check checks something: the clean comment has our details,
	// fences and table rows.
	if clean["FencedCodeBlock"] < 4 || clean["HTMLBlock"] < 4 || clean["TableRow"] < 4 {
		t.Fatalf("clean structure lacks what it should have: %v", clean)
	}
	for _, s := range hostile {
		checkSafe(t, s)
	}
	checkSafe(t, strings.Join(hostile, " "))
}

func FuzzMarkdown(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		checkSafe(t, s)
	})
}
