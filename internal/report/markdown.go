package report

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// githubCommentLimit is the largest comment GitHub accepts, in characters;
// counting bytes instead keeps us under it whatever the text.
const githubCommentLimit = 65536

// WriteMarkdown writes the plan as a pull-request comment whose first
// screen holds every decision a reviewer makes: what changes, messages,
// segments and cost, the budget's verdict, when the first and last
// messages go, the warnings, the template and two samples, all unfolded.
// Folded in <details>: the other samples, the encodings, the batches (each
// body in full, numbers masked unless o.ShowNumbers; a personalised plan's
// batches of one body each grouped by when they go instead), the invalid
// numbers and the duplicates. When the comment would pass o.MarkdownLimit,
// batches are cut from the middle, never the top, and the comment says how
// much was left out.
func WriteMarkdown(w io.Writer, p *plan.Plan, o Output) error {
	text, err := o.markdown(p, "")
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, text)
	return err
}

// markdown is the comment of one plan, within o.MarkdownLimit; stateName
// names its state for a reviewer ("" for a name made from the plan's).
func (o Output) markdown(p *plan.Plan, stateName string) (string, error) {
	limit := o.MarkdownLimit
	if limit <= 0 {
		limit = githubCommentLimit
	}
	o = o.forPeople(false)
	v := o.show(p)
	if stateName == "" {
		stateName = reviewerState(p.State.Location)
	}
	head, err := markdownHead(v, stateName)
	if err != nil {
		return "", err
	}
	var foot strings.Builder
	writeInvalidMarkdown(&foot, v)
	writeDuplicateMarkdown(&foot, v)
	if n := len(p.InDoubt); n > 0 {
		fmt.Fprintf(&foot, "⚠️ %s %s in doubt: not sent again until an operator runs `smsform state resolve --in-doubt --as sent|unsent`.\n\n",
			words.Count(n), words.Plural(n, "recipient is", "recipients are"))
	}
	return v.withBatches(head, foot.String(), limit)
}

// withBatches puts the batches between head and foot, folded: listed one
// by one, cut from the middle to fit limit bytes, or grouped by when they
// go when each batch has a body of its own (see [shown.groupBatches]).
func (v shown) withBatches(head, foot string, limit int) (string, error) {
	p := v.p
	nb := p.NumBatches()
	if nb == 0 {
		return head + foot, nil
	}
	if groups, ok, err := v.groupBatches(); err != nil {
		return "", err
	} else if ok {
		return head + groups + foot, nil
	}
	open := mdSummary(words.N(nb, "batch", "batches")+" to send") + "\n\n"
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
	// The batches cut are only counted, and with plain masks: a masker
	// would remember every number of a plan of millions.
	plain := v
	plain.o.masker = nil
	count := func(i int) mdBlock {
		b, _ := plain.batch(i)
		return withWhen(markdownBlock(b), p, i)
	}
	text := fitMarkdown(head+open, nb, block, count, "</details>\n\n"+foot, limit)
	return text, readErr
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

// markdownHead is what comes before the batches: the first screen (see
// [WriteMarkdown]), then the folded samples and encodings.
func markdownHead(v shown, stateName string) (string, error) {
	p := v.p
	var h strings.Builder
	h.WriteString(refusalMarkdown(p))
	fmt.Fprintf(&h, "%s\n\n", strings.TrimSpace("**"+v.o.headline(p)+"** "+resumeWords(p)))
	fmt.Fprintf(&h, "Campaign %s, sender %s.\n\n", mdCode(p.Campaign, false), mdCode(p.Sender, false))
	if n := firstSendWords(p, stateName); n != "" {
		fmt.Fprintf(&h, "⚠️ %s\n\n", n)
	}
	if n := capNote(p); n != "" {
		fmt.Fprintf(&h, "⏳ %s.\n\n", mdText(n))
	}
	paused, estimate, tested := controlLines(p)
	if paused != "" && !refusedAs(p, plan.RefusedPaused) {
		fmt.Fprintf(&h, "⏸️ **%s.**\n\n", mdText(paused))
	}
	writeBudget(&h, v)
	if err := writeWhen(&h, v, estimate); err != nil {
		return "", err
	}
	if tested != "" {
		fmt.Fprintf(&h, "%s.\n\n", mdText(tested))
	}
	if p.Delivery != nil {
		fmt.Fprintf(&h, "%s\n\n", DeliverySoFar(*p.Delivery))
	}
	writeCountries(&h, v)
	writeWarnings(&h, p)
	writeComplianceMarkdown(&h, p)
	writeMessage(&h, v)
	writeDistribution(&h, p)
	return h.String(), nil
}

// reviewerState names a state location for a pull request, where a
// runner's paths mean nothing and credentials must not be: a PostgreSQL
// location as it is (stateWords names only its database), a path without
// the folders above its last two.
func reviewerState(loc string) string {
	if loc == "" || state.IsPostgres(loc) {
		return loc
	}
	if !filepath.IsAbs(loc) {
		return filepath.ToSlash(loc)
	}
	return "…/" + filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(loc)), filepath.Base(loc)))
}

// stateWords is how a comment names the state called name (see
// reviewerState): a file by its name; a PostgreSQL state by its database
// (and schema, when not smsform's), never its host, port, role or options,
// which are the infrastructure's, not the reviewer's.
func stateWords(name string) string {
	if !state.IsPostgres(name) {
		return "the state " + mdCode(name, false)
	}
	db, schema := pgDatabase(name)
	switch {
	case db == "":
		return "the PostgreSQL state"
	case schema != "" && schema != state.DefaultSchema:
		return "the PostgreSQL state (database " + mdCode(db, false) + ", schema " + mdCode(schema, false) + ")"
	}
	return "the PostgreSQL state (database " + mdCode(db, false) + ")"
}

// pgDatabase is the database and schema a PostgreSQL location names ("" for
// what it leaves out), read without connecting or consulting anything else.
func pgDatabase(loc string) (db, schema string) {
	if u, err := url.Parse(loc); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		db = strings.TrimPrefix(u.Path, "/")
		q := u.Query()
		if d := q.Get("dbname"); d != "" {
			db = d
		}
		return db, q.Get("schema")
	}
	kv := keywords(loc)
	return kv["dbname"], kv["schema"]
}

// keywords reads a libpq keyword/value string: key=value pairs separated by
// blanks, a value in single quotes when it holds blanks, \' and \\ escaped.
func keywords(s string) map[string]string {
	out := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			break
		}
		key := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " \t")
		var val strings.Builder
		quoted := strings.HasPrefix(s, "'")
		if quoted {
			s = s[1:]
		}
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				val.WriteByte(s[i])
				continue
			}
			if quoted && c == '\'' || !quoted && (c == ' ' || c == '\t' || c == '\n') {
				break
			}
			val.WriteByte(c)
		}
		out[key] = val.String()
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// firstSendWords is what the comment says when the state records nothing
// of the campaign, naming the state as a reviewer knows it.
func firstSendWords(p *plan.Plan, stateName string) string {
	if !p.State.FirstSend || p.Refusal != nil {
		return ""
	}
	named := stateWords(stateName)
	where := "No record of campaign " + mdCode(p.Campaign, false) + " in " + named
	if p.State.Lineage != "" {
		where = "T" + strings.TrimPrefix(named, "t") + " records nothing yet of campaign " + mdCode(p.Campaign, false)
	}
	return where + ": this is its first send, and nobody will be treated as already messaged."
}

// writeWarnings lists the plan's warnings, unfolded: they are what a
// reviewer must not miss.
func writeWarnings(h *strings.Builder, p *plan.Plan) {
	if len(p.Warnings) == 0 {
		return
	}
	h.WriteString("#### Warnings\n\n")
	for _, wn := range p.Warnings {
		fmt.Fprintf(h, "- %s\n", mdText(wn))
	}
	h.WriteString("\n")
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

// writeDuplicateMarkdown lists the first duplicates, and whether the row
// dropped has other variables than the row sent.
func writeDuplicateMarkdown(f *strings.Builder, v shown) {
	n := v.p.Summary.Duplicates
	if n == 0 {
		return
	}
	dups := v.duplicates()
	fmt.Fprintf(f, "%s\n\n| Row dropped | Row kept | Number | Variables |\n|---|---|---|---|\n", mdSummary(words.N(n, "duplicate", "duplicates")+", sent once"))
	for _, d := range dups {
		kept := mdText(d.Kept)
		if d.Kept == "" {
			kept = "none: the number is excluded"
		}
		fmt.Fprintf(f, "| %s | %s | %s | %s |\n", mdText(d.Row), kept, mdCode(d.Phone, true), variablesWords(d, "**differ**"))
	}
	if more := n - len(dups); more > 0 {
		fmt.Fprintf(f, "\n… and %s more\n", words.Count(more))
	}
	f.WriteString("\n</details>\n\n")
}

// variablesWords says whether a duplicate's rows have the same variables;
// differ is how "differ" is written (in bold in a comment).
func variablesWords(d plan.Duplicate, differ string) string {
	switch {
	case d.Kept == "":
		return ""
	case d.Differs:
		return differ + ": the row kept's message is sent"
	}
	return "the same"
}

// resumeWords says whether the campaign sends for the first time.
func resumeWords(p *plan.Plan) string {
	switch {
	case p.Refusal != nil:
		return "" // the refusal above says what the state is
	case p.State.Lineage == "" || p.State.FirstSend:
		return "First send." // the notice below says what was found
	}
	return fmt.Sprintf("Resumed: the state (serial %d) records what was sent, which is not sent again.", p.State.Serial)
}

// writeBudget says the budget's verdict, unfolded, every amount in the
// output's precision.
func writeBudget(h *strings.Builder, v shown) {
	p := v.p
	b := p.Budget
	if b == nil {
		return
	}
	m := v.o.amounts(p)
	var limits []string
	if b.MaxTotal != nil {
		spent := ""
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
	for _, e := range budgetLines(p, m) {
		fmt.Fprintf(h, "- %s\n", mdText(e))
	}
	h.WriteString("\n")
}

// budgetLines are the plan's budget lines with the cost line written in
// the output's precision: plan words it with the plan's own, and two
// plans in one output may need different ones.
func budgetLines(p *plan.Plan, m words.Amounts) []string {
	b, c := p.Budget, p.Cost
	lines := slices.Clone(b.Exceeded)
	if b.MaxTotal == nil || c == nil || len(c.Unpriced) > 0 {
		return lines
	}
	all := c.Total.Add(c.AlreadySpent)
	if !all.GreaterThan(*b.MaxTotal) {
		return lines
	}
	spent := ""
	if c.AlreadySpent.IsPositive() {
		spent = fmt.Sprintf(" (%s to send + %s already spent)", m.Money(c.Total), m.Money(c.AlreadySpent))
	}
	line := fmt.Sprintf("cost %s%s exceeds max_total %s by %s", m.Money(all), spent, m.Money(*b.MaxTotal), m.Money(all.Sub(*b.MaxTotal)))
	for i, l := range lines {
		if strings.HasPrefix(l, "cost ") && strings.Contains(l, " exceeds max_total ") {
			lines[i] = line
		}
	}
	return lines
}

// shownSamples is how many samples the comment shows unfolded; the rest
// are folded below them.
const shownSamples = 2

// writeMessage shows the template and the first samples, unfolded, and
// the other samples folded.
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
	samples := v.samples()
	fmt.Fprintf(h, "%s%s:\n\n", words.Plural(len(samples), "As sent", "Samples as sent"), numbers)
	for i, s := range samples {
		if i == shownSamples {
			fmt.Fprintf(h, "%s\n\n", mdSummary(words.N(len(samples)-shownSamples, "more sample", "more samples")))
		}
		who := mdCode(s.Phone, false) + ", "
		if len(s.Why) == 1 && s.Why[0] == "every recipient" {
			who = "" // the same message for all: one person's number would read as if it were theirs alone
		}
		fmt.Fprintf(h, "- **%s**: %s%s, %s, %s\n\n  %s\n\n",
			mdText(strings.Join(s.Why, ", ")), who, s.Encoding, words.N(s.Segments, "segment", "segments"),
			words.N(s.Characters, "character", "characters"), mdFence(clip(s.Body), "  "))
	}
	if len(samples) > shownSamples {
		h.WriteString("</details>\n\n")
	}
}

// writeCountries shows what goes to each country, and what it costs.
func writeCountries(h *strings.Builder, v shown) {
	p := v.p
	if len(p.Countries) == 0 {
		return
	}
	c := p.Cost
	if c == nil {
		h.WriteString("#### By country\n\n")
		h.WriteString("| Country | Recipients | Segments |\n|---|---:|---:|\n")
		for _, cc := range p.Countries {
			fmt.Fprintf(h, "| %s | %s | %s |\n", mdText(cc.Country), words.Count(cc.Recipients), words.Count(cc.Segments))
		}
		fmt.Fprintf(h, "| **Total** | **%s** | **%s** |\n\nNo price table: add `prices: FILE.csv` to the campaign to see the cost.\n\n",
			words.Count(p.Summary.ToSend), words.Count(p.Summary.Segments))
		return
	}
	m := v.o.amounts(p)
	h.WriteString("#### Cost by country\n\n")
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

// writeDistribution shows the messages by encoding and segments, folded.
func writeDistribution(h *strings.Builder, p *plan.Plan) {
	if len(p.Distribution) == 0 {
		return
	}
	h.WriteString(mdSummary("Messages by encoding and segments") + "\n\n")
	h.WriteString("| Encoding | Segments per message | Messages | Segments |\n|---|---:|---:|---:|\n")
	for _, d := range p.Distribution {
		fmt.Fprintf(h, "| %s | %s | %s | %s |\n", d.Encoding, words.Count(d.SegmentsPerMessage), words.Count(d.Messages), words.Count(d.Segments))
	}
	h.WriteString("\n</details>\n\n")
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
// middle until the whole fits in limit bytes; count makes a block only to
// count the characters of those dropped.
func fitMarkdown(head string, n int, block, count func(int) mdBlock, foot string, limit int) string {
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
		bl := count(i)
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
