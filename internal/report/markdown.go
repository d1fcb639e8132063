package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// githubCommentLimit is the largest comment GitHub accepts, in characters;
// counting bytes instead keeps us under it whatever the text.
const githubCommentLimit = 65536

// WriteMarkdown writes the plan as a pull-request comment that a reviewer
// reads in a minute: the headline, the budget check, the template and a few
// informative samples, the recipients, segments and cost by country, the
// encodings, the warnings; then the batches (each body in full, numbers
// masked unless o.ShowNumbers) inside <details>. When the comment would
// pass o.MarkdownLimit, batches are cut from the middle, never the top, and
// the comment says how much was left out.
func WriteMarkdown(w io.Writer, p *plan.Plan, o Output) error {
	limit := o.MarkdownLimit
	if limit <= 0 {
		limit = githubCommentLimit
	}
	v := o.show(p)
	head, foot := markdownFrame(v)
	// A batch that cannot be read (its body is read back from a temporary
	// file) fails the whole comment: the first such error is returned.
	var readErr error
	block := func(i int) mdBlock {
		b, err := v.batch(i)
		if err != nil && readErr == nil {
			readErr = err
		}
		return withWhen(markdownBlock(b), p, i)
	}
	text := fitMarkdown(head, p.NumBatches(), block, foot, limit)
	if readErr != nil {
		return readErr
	}
	_, err := io.WriteString(w, text)
	return err
}

// mdBlock is one batch in the markdown; header shows its message body and
// is written only where the body differs from the block before it, so a
// cut never leaves batches under another message's body.
type mdBlock struct {
	body, header, text string
}

// markdownBlock renders one batch, as output shows it; blocks are made one
// at a time, so that a million-batch plan never has its whole comment in
// memory.
func markdownBlock(b plan.Batch) mdBlock {
	header := fmt.Sprintf("#### Message (%s, %s each)\n\n%s\n\n",
		b.Encoding, words.N(b.Segments, "segment", "segments"), mdFence(b.Body, ""))
	text := fmt.Sprintf("- %s: %s, %s: %s\n\n", mdCode(b.ID, false),
		words.N(len(b.Recipients), "recipient", "recipients"), words.N(b.TotalSegments(), "segment", "segments"),
		mdText(strings.Join(b.Recipients, ", ")))
	return mdBlock{body: b.Body, header: header, text: text}
}

// markdownFrame is what comes before and after the batches: before them,
// what a reviewer reads in a minute (the summary, the budget, the template
// and samples, by country, by encoding, the warnings); after them, the
// numbers skipped and held.
func markdownFrame(v shown) (head, foot string) {
	p := v.p
	var h strings.Builder
	fmt.Fprintf(&h, "**%s** %s\n\n", Headline(p), resumeWords(p))
	fmt.Fprintf(&h, "Campaign %s, sender %s.\n\n", mdCode(p.Campaign, false), mdCode(p.Sender, false))
	if n := p.State.FirstSendNotice(p.Campaign); n != "" {
		fmt.Fprintf(&h, "⚠️ %s.\n\n", mdText(n))
	}
	if n := capNote(p); n != "" {
		fmt.Fprintf(&h, "⏳ %s.\n\n", mdText(n))
	}
	paused, estimate, tested := controlLines(p)
	if paused != "" {
		fmt.Fprintf(&h, "⏸️ **%s.**\n\n", mdText(paused))
	}
	for _, l := range []string{tested, estimate} {
		if l != "" {
			fmt.Fprintf(&h, "%s.\n\n", mdText(l))
		}
	}
	writeScheduleText(&h, p, "- ")
	writeBudget(&h, p)
	writeComplianceMarkdown(&h, p)
	writeMessage(&h, v)
	writeCountries(&h, p)
	writeDistribution(&h, p)
	if len(p.Warnings) > 0 {
		h.WriteString("#### Warnings\n\n")
		for _, wn := range p.Warnings {
			fmt.Fprintf(&h, "- %s\n", mdText(wn))
		}
		h.WriteString("\n")
	}
	if nb := p.NumBatches(); nb > 0 {
		fmt.Fprintf(&h, "%s\n\n", mdSummary(words.N(nb, "batch", "batches")+" to send"))
	}
	head = h.String()

	var f strings.Builder
	if p.NumBatches() > 0 {
		f.WriteString("</details>\n\n")
	}
	writeInvalidMarkdown(&f, v)
	writeDuplicateMarkdown(&f, v)
	if n := len(p.InDoubt); n > 0 {
		fmt.Fprintf(&f, "⚠️ %s %s in doubt: not sent again until an operator runs `smsform state resolve --in-doubt --as sent|unsent`.\n\n",
			words.Count(n), words.Plural(n, "recipient is", "recipients are"))
	}
	return head, f.String()
}

// writeInvalidMarkdown lists the first invalid numbers.
func writeInvalidMarkdown(f *strings.Builder, v shown) {
	invalid := v.invalid()
	if len(invalid) == 0 {
		return
	}
	fmt.Fprintf(f, "%s\n\n| Source | Number | Reason |\n|---|---|---|\n",
		mdSummary(fmt.Sprintf("%s invalid %s, skipped", words.Count(len(invalid)), words.Plural(len(invalid), "number", "numbers"))))
	for i, inv := range invalid {
		if i == maxListed {
			fmt.Fprintf(f, "\n… and %s more\n", words.Count(len(invalid)-maxListed))
			break
		}
		fmt.Fprintf(f, "| %s | %s | %s |\n", mdText(inv.Source), mdCode(inv.Value, true), mdText(inv.Reason))
	}
	f.WriteString("\n</details>\n\n")
}

// writeDuplicateMarkdown lists the first duplicates.
func writeDuplicateMarkdown(f *strings.Builder, v shown) {
	n := v.p.Summary.Duplicates
	if n == 0 {
		return
	}
	dups := v.duplicates()
	fmt.Fprintf(f, "%s\n\n| Row dropped | Row kept | Number |\n|---|---|---|\n", mdSummary(words.N(n, "duplicate", "duplicates")+", sent once"))
	for _, d := range dups {
		kept := mdText(d.Kept)
		if d.Kept == "" {
			kept = "none: the number is excluded"
		}
		fmt.Fprintf(f, "| %s | %s | %s |\n", mdText(d.Row), kept, mdCode(d.Phone, true))
	}
	if more := n - len(dups); more > 0 {
		fmt.Fprintf(f, "\n… and %s more\n", words.Count(more))
	}
	f.WriteString("\n</details>\n\n")
}

// resumeWords says whether the campaign sends for the first time.
func resumeWords(p *plan.Plan) string {
	if p.State.Lineage == "" || p.State.FirstSend {
		return "First send." // the notice below says what was found
	}
	return fmt.Sprintf("Resumed: the state (serial %d) records what was sent, which is not sent again.", p.State.Serial)
}

func writeBudget(h *strings.Builder, p *plan.Plan) {
	b := p.Budget
	if b == nil {
		return
	}
	var limits []string
	if b.MaxTotal != nil {
		m, spent := amounts(p), ""
		if p.Cost != nil {
			spent = m.Money(p.Cost.Total.Add(p.Cost.AlreadySpent)) + " of "
		}
		limits = append(limits, fmt.Sprintf("cost %s%s", spent, m.Money(*b.MaxTotal)))
	}
	if b.MaxSegmentsPerMessage > 0 {
		most := 0
		for _, d := range p.Distribution {
			most = max(most, d.SegmentsPerMessage)
		}
		limits = append(limits, fmt.Sprintf("%s of %s segments per message", words.Count(most), words.Count(b.MaxSegmentsPerMessage)))
	}
	if b.MaxRecipients > 0 {
		limits = append(limits, fmt.Sprintf("%s of %s recipients", words.Count(p.Summary.ToSend+p.Summary.AlreadySent), words.Count(b.MaxRecipients)))
	}
	if len(b.Exceeded) == 0 {
		fmt.Fprintf(h, "**Budget:** ✅ within budget: %s.\n\n", strings.Join(limits, "; "))
		return
	}
	fmt.Fprintf(h, "**Budget:** ❌ **over budget**, apply will refuse this plan:\n\n")
	for _, e := range b.Exceeded {
		fmt.Fprintf(h, "- %s\n", mdText(e))
	}
	h.WriteString("\n")
}

// writeMessage shows the template and the samples.
func writeMessage(h *strings.Builder, v shown) {
	p := v.p
	if p.Template == "" && len(p.Samples) == 0 {
		return
	}
	h.WriteString("#### Message\n\n")
	if p.Template != "" {
		fmt.Fprintf(h, "Template:\n\n%s\n\n", mdFence(clip(p.Template), ""))
	}
	if len(p.Samples) == 0 {
		return
	}
	numbers := " (numbers masked)"
	if v.o.ShowNumbers {
		numbers = ""
	}
	fmt.Fprintf(h, "%s%s:\n\n", words.Plural(len(p.Samples), "As sent", "Samples as sent"), numbers)
	for _, s := range v.samples() {
		fmt.Fprintf(h, "- **%s**: %s, %s, %s, %s\n\n  %s\n\n",
			mdText(strings.Join(s.Why, ", ")), mdCode(s.Phone, false), s.Encoding, words.N(s.Segments, "segment", "segments"),
			words.N(s.Characters, "character", "characters"), mdFence(clip(s.Body), "  "))
	}
}

// writeCountries shows what goes to each country, and what it costs.
func writeCountries(h *strings.Builder, p *plan.Plan) {
	if len(p.Countries) == 0 {
		return
	}
	c := p.Cost
	h.WriteString("#### By country\n\n")
	if c == nil {
		h.WriteString("| Country | Recipients | Segments |\n|---|---:|---:|\n")
		for _, cc := range p.Countries {
			fmt.Fprintf(h, "| %s | %s | %s |\n", mdText(cc.Country), words.Count(cc.Recipients), words.Count(cc.Segments))
		}
		fmt.Fprintf(h, "| **Total** | **%s** | **%s** |\n\nNo price table: add `prices: FILE.csv` to the campaign to see the cost.\n\n",
			words.Count(p.Summary.ToSend), words.Count(p.Summary.Segments))
		return
	}
	m := amounts(p)
	h.WriteString("| Country | Recipients | Segments | Cost |\n|---|---:|---:|---:|\n")
	for _, cc := range c.ByCountry {
		fmt.Fprintf(h, "| %s | %s | %s | %s |\n", mdText(cc.Country), words.Count(cc.Recipients), words.Count(cc.Segments), m.Money(cc.Cost))
	}
	for _, u := range c.Unpriced {
		fmt.Fprintf(h, "| %s | %s | %s | **no price** |\n", mdText(u.Country), words.Count(u.Recipients), words.Count(u.Segments))
	}
	total := m.Money(c.Total)
	if len(c.Unpriced) > 0 {
		total += " + no price"
	}
	fmt.Fprintf(h, "| **Total** | **%s** | **%s** | **%s** |\n\n", words.Count(p.Summary.ToSend), words.Count(p.Summary.Segments), total)
	if p.Summary.AlreadySent > 0 {
		fmt.Fprintf(h, "Already spent: %s for %s recorded as sent", m.Money(c.AlreadySpent),
			words.N(p.Summary.AlreadySent, "message", "messages"))
		if n := c.AlreadySpentEstimated; n > 0 {
			fmt.Fprintf(h, " (%s of them sent an earlier body, priced as today's: the state keeps a body's hash, not its text)", words.Count(n))
		}
		h.WriteString(".\n\n")
	}
}

// writeDistribution shows the messages by encoding and segments.
func writeDistribution(h *strings.Builder, p *plan.Plan) {
	if len(p.Distribution) == 0 {
		return
	}
	h.WriteString("#### Encoding and segments\n\n| Encoding | Segments per message | Messages | Segments |\n|---|---:|---:|---:|\n")
	for _, d := range p.Distribution {
		fmt.Fprintf(h, "| %s | %s | %s | %s |\n", d.Encoding, words.Count(d.SegmentsPerMessage), words.Count(d.Messages), words.Count(d.Segments))
	}
	h.WriteString("\n")
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
		words.Count(hi-lo), words.Plural(hi-lo, "batch", "batches"), words.Count(cutChars))
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

// maxShown is the most of one body or template the comment shows: an SMS
// of 10 segments, so that five samples never crowd out the rest.
const maxShown = 1600

// clip shortens text to maxShown characters, saying so.
func clip(text string) string {
	if utf8.RuneCountInString(text) <= maxShown {
		return text
	}
	r := []rune(text)
	return fmt.Sprintf("%s… (%s more characters: smsform show PLANFILE --recipient NUMBER shows a message whole)",
		string(r[:maxShown]), words.Count(len(r)-maxShown))
}
