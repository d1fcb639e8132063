package plan

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// githubCommentLimit is the largest comment GitHub accepts, in characters;
// counting bytes instead keeps us under it whatever the text.
const githubCommentLimit = 65536

// WriteMarkdown writes the plan as a pull-request comment: the headline
// first, then each distinct message with its full body and its batches
// (numbers masked unless o.ShowNumbers) inside <details>. When the comment
// would pass o.MarkdownLimit, batches are cut from the middle, never the
// top, and the comment says how much was left out.
func WriteMarkdown(w io.Writer, p *Plan, o Output) error {
	limit := o.MarkdownLimit
	if limit <= 0 {
		limit = githubCommentLimit
	}
	head, blocks, foot := markdownParts(p, o)
	_, err := io.WriteString(w, fitMarkdown(head, blocks, foot, limit))
	return err
}

// mdBlock is one batch in the markdown; header shows its message body and
// is written only where the body differs from the block before it, so a
// cut never leaves batches under another message's body.
type mdBlock struct {
	body, header, text string
}

func markdownParts(p *Plan, o Output) (head string, blocks []mdBlock, foot string) {
	var h strings.Builder
	fmt.Fprintf(&h, "**%s**\n\n", Headline(p))
	fmt.Fprintf(&h, "Campaign `%s`, sender `%s`.\n\n", p.Campaign, p.Sender)
	if len(p.Batches) > 0 {
		fmt.Fprintf(&h, "<details><summary>%s %s to send</summary>\n\n", count(len(p.Batches)), plural(len(p.Batches), "batch", "batches"))
	}
	head = h.String()

	for _, b := range p.Batches {
		fence := codeFence(b.Body)
		header := fmt.Sprintf("#### Message (%s, %d %s each)\n\n%s\n%s\n%s\n\n",
			b.Encoding, b.Segments, plural(b.Segments, "segment", "segments"), fence, b.Body, fence)
		nums := make([]string, len(b.Recipients))
		for j, r := range b.Recipients {
			nums[j] = o.number(r)
		}
		text := fmt.Sprintf("- `%s`: %s %s, %s %s: %s\n\n", b.ID,
			count(len(b.Recipients)), plural(len(b.Recipients), "recipient", "recipients"),
			count(b.TotalSegments()), plural(b.TotalSegments(), "segment", "segments"),
			strings.Join(nums, ", "))
		blocks = append(blocks, mdBlock{body: b.Body, header: header, text: text})
	}

	var f strings.Builder
	if len(p.Batches) > 0 {
		f.WriteString("</details>\n\n")
	}
	if len(p.Invalid) > 0 {
		fmt.Fprintf(&f, "<details><summary>%s invalid %s, skipped</summary>\n\n| Source | Number | Reason |\n|---|---|---|\n",
			count(len(p.Invalid)), plural(len(p.Invalid), "number", "numbers"))
		for i, inv := range p.Invalid {
			if i == maxListed {
				fmt.Fprintf(&f, "\n… and %s more\n", count(len(p.Invalid)-maxListed))
				break
			}
			fmt.Fprintf(&f, "| %s | `%s` | %s |\n", cell(inv.Source), o.number(inv.Value), cell(inv.Reason))
		}
		f.WriteString("\n</details>\n\n")
	}
	if n := len(p.InDoubt); n > 0 {
		fmt.Fprintf(&f, "⚠️ %s %s in doubt: not sent again until an operator runs `smsform state resolve --in-doubt --as sent|unsent`.\n\n",
			count(n), plural(n, "recipient is", "recipients are"))
	}
	if len(p.Warnings) > 0 {
		f.WriteString("Warnings:\n\n")
		for _, wn := range p.Warnings {
			fmt.Fprintf(&f, "- %s\n", wn)
		}
		f.WriteString("\n")
	}
	return head, blocks, f.String()
}

// writeBlocks writes blocks, each message body once per run of batches.
func writeBlocks(b *strings.Builder, blocks []mdBlock) {
	for i, bl := range blocks {
		if i == 0 || bl.body != blocks[i-1].body {
			b.WriteString(bl.header)
		}
		b.WriteString(bl.text)
	}
}

// fitMarkdown joins the parts, dropping blocks from the middle until the
// whole fits in limit bytes.
func fitMarkdown(head string, blocks []mdBlock, foot string, limit int) string {
	var all strings.Builder
	all.WriteString(head)
	writeBlocks(&all, blocks)
	all.WriteString(foot)
	if all.Len() <= limit {
		return all.String()
	}
	// Keep as many blocks as fit, alternately from the top and the bottom,
	// counting each with its header (the worst case), and leaving room for
	// the note that says what was cut.
	const noteRoom = 200
	budget := limit - len(head) - len(foot) - noteRoom
	size := func(bl mdBlock) int { return len(bl.header) + len(bl.text) }
	lo, hi := 0, len(blocks) // blocks[:lo] and blocks[hi:] are kept
	for turn := 0; lo < hi; turn++ {
		next := lo
		if turn%2 == 1 {
			next = hi - 1
		}
		if size(blocks[next]) > budget {
			break
		}
		budget -= size(blocks[next])
		if turn%2 == 0 {
			lo++
		} else {
			hi--
		}
	}
	var cut strings.Builder
	writeBlocks(&cut, blocks[lo:hi])
	var out strings.Builder
	out.WriteString(head)
	writeBlocks(&out, blocks[:lo])
	fmt.Fprintf(&out, "**… %s %s (%s characters) left out to fit GitHub's comment limit; `smsform show PLANFILE` shows them all. …**\n\n",
		count(hi-lo), plural(hi-lo, "batch", "batches"), count(utf8.RuneCountInString(cut.String())))
	writeBlocks(&out, blocks[hi:])
	out.WriteString(foot)
	s := out.String()
	if len(s) > limit { // the head and foot alone are too long: cut hard, at a line
		s = s[:limit-len("\n…\n")]
		if i := strings.LastIndexByte(s, '\n'); i > 0 {
			s = s[:i]
		}
		s += "\n…\n"
	}
	return s
}

// codeFence returns a fence longer than any run of backticks in body.
func codeFence(body string) string {
	longest, run := 0, 0
	for _, r := range body {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// cell makes text safe inside a markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
