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
	head, foot := markdownFrame(p, o)
	block := func(i int) mdBlock { return withWhen(markdownBlock(p.Batches[i], o), p, i) }
	_, err := io.WriteString(w, fitMarkdown(head, len(p.Batches), block, foot, limit))
	return err
}

// mdBlock is one batch in the markdown; header shows its message body and
// is written only where the body differs from the block before it, so a
// cut never leaves batches under another message's body.
type mdBlock struct {
	body, header, text string
}

// markdownBlock renders one batch; blocks are made one at a time, so that
// a million-batch plan never has its whole comment in memory.
func markdownBlock(b Batch, o Output) mdBlock {
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
	return mdBlock{body: b.Body, header: header, text: text}
}

// markdownFrame is what comes before and after the batches.
func markdownFrame(p *Plan, o Output) (head, foot string) {
	var h strings.Builder
	fmt.Fprintf(&h, "**%s**\n\n", Headline(p))
	fmt.Fprintf(&h, "Campaign `%s`, sender `%s`.\n\n", p.Campaign, p.Sender)
	if n := p.State.FirstSendNotice(p.Campaign); n != "" {
		fmt.Fprintf(&h, "⚠️ %s.\n\n", n)
	}
	writeScheduleText(&h, p, "- ")
	if len(p.Batches) > 0 {
		fmt.Fprintf(&h, "<details><summary>%s %s to send</summary>\n\n", count(len(p.Batches)), plural(len(p.Batches), "batch", "batches"))
	}
	head = h.String()

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
	return head, f.String()
}

// writeBlocks writes blocks lo..hi-1, each message body once per run of
// batches, and always before the first block written.
func writeBlocks(b *strings.Builder, block func(int) mdBlock, lo, hi int) {
	prevBody, first := "", true
	for i := lo; i < hi; i++ {
		bl := block(i)
		if first || bl.body != prevBody {
			b.WriteString(bl.header)
		}
		b.WriteString(bl.text)
		prevBody, first = bl.body, false
	}
}

// fitMarkdown joins head, the n blocks and foot, dropping blocks from the
// middle until the whole fits in limit bytes.
func fitMarkdown(head string, n int, block func(int) mdBlock, foot string, limit int) string {
	// Sizes count each block with its header: the worst case, which is
	// also exact for the first block after a cut.
	size := func(i int) int { bl := block(i); return len(bl.header) + len(bl.text) }
	total := len(head) + len(foot)
	for i := 0; i < n && total <= limit; i++ {
		total += size(i)
	}
	if total <= limit {
		var all strings.Builder
		all.WriteString(head)
		writeBlocks(&all, block, 0, n)
		all.WriteString(foot)
		if all.Len() <= limit {
			return all.String()
		}
	}
	// Keep as many blocks as fit, alternately from the top and the bottom,
	// leaving room for the note that says what was cut.
	const noteRoom = 200
	budget := limit - len(head) - len(foot) - noteRoom
	lo, hi := 0, n // blocks [0,lo) and [hi,n) are kept
	for turn := 0; lo < hi; turn++ {
		next := lo
		if turn%2 == 1 {
			next = hi - 1
		}
		sz := size(next)
		if sz > budget {
			break
		}
		budget -= sz
		if turn%2 == 0 {
			lo++
		} else {
			hi--
		}
	}
	cutChars, prevBody := 0, ""
	for i := lo; i < hi; i++ {
		bl := block(i)
		cutChars += utf8.RuneCountInString(bl.text)
		if i == lo || bl.body != prevBody {
			cutChars += utf8.RuneCountInString(bl.header)
		}
		prevBody = bl.body
	}
	var out strings.Builder
	out.WriteString(head)
	writeBlocks(&out, block, 0, lo)
	fmt.Fprintf(&out, "**… %s %s (%s characters) left out to fit GitHub's comment limit; `smsform show PLANFILE` shows them all. …**\n\n",
		count(hi-lo), plural(hi-lo, "batch", "batches"), count(cutChars))
	writeBlocks(&out, block, hi, n)
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
