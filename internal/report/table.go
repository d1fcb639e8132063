package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// maxCountries is how many countries the table's cost line names, the
// dearest first.
const maxCountries = 5

// newTable is a table for w: ruled on a terminal, plain aligned columns
// when plain (logs, pipes, files), which read and grep well. Cells are
// never wrapped (a table is fitted to its width before: see [grid]) and
// headers are written as given.
func newTable(w io.Writer, plain bool) *tablewriter.Table {
	opts := []tablewriter.Option{tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone), tablewriter.WithRowAutoWrap(tw.WrapNone)}
	if !plain {
		return tablewriter.NewTable(w, opts...)
	}
	return tablewriter.NewTable(&trimWriter{w: w}, append(opts,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Lines: tw.LinesNone, Separators: tw.SeparatorsNone},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithPadding(tw.Padding{Left: tw.Empty, Right: "  ", Overwrite: true}))...)
}

// trimWriter drops the spaces that pad the last column of a plain table:
// spaces are held back until something other than a line's end follows.
type trimWriter struct {
	w      io.Writer
	spaces int
}

func (t *trimWriter) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p))
	for _, c := range p {
		switch c {
		case ' ':
			t.spaces++
			continue
		case '\n':
		default:
			out = append(out, bytes.Repeat([]byte{' '}, t.spaces)...)
		}
		t.spaces = 0
		out = append(out, c)
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// errEnough stops a walk of the batches that has what it came for.
var errEnough = errors.New("enough batches")

// WriteTable writes the plan for a terminal or a log: the headline, the
// cost and budget, when it may go, a table of the first batches, the
// invalid numbers and duplicates (the first 20 of each), the recipients
// held back and the warnings. Every table fits o.Width.
func WriteTable(w io.Writer, p *plan.Plan, o Output) error {
	o = o.forPeople(false)
	v := o.show(p)
	var b strings.Builder
	writeTableHead(&b, p, o)
	writeScheduleText(&b, p, o.Width)
	if err := writeBatchTable(&b, v, o); err != nil {
		return err
	}
	if err := writeInvalidTable(&b, v, o); err != nil {
		return err
	}
	if err := writeDuplicateTable(&b, v, o); err != nil {
		return err
	}
	writeHeld(&b, "In doubt (never sent again until resolved: smsform state resolve --in-doubt --as sent|unsent)", ansiYellow, v.held(p.InDoubt), o)
	writeHeld(&b, "Failed", "", v.held(p.Failed), o)
	if len(p.Warnings) > 0 {
		b.WriteString("Warnings:\n")
		for _, wn := range p.Warnings {
			b.WriteString(wrapProse("  - "+oneLine(wn), o.Width, "    ") + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTableHead writes what the table says before the batches: the
// campaign, the headline, the cost by country and the budget; each
// paragraph wrapped at the width (see [wrapProse]).
func writeTableHead(b *strings.Builder, p *plan.Plan, o Output) {
	para := func(s, indent string) { b.WriteString(wrapProse(s, o.Width, indent) + "\n") }
	if r := refusalText(p); r != "" {
		b.WriteString(o.paint(ansiYellow, wrapProse(r, o.Width, "  ")) + "\n\n")
	}
	para(fmt.Sprintf("Campaign %s, sender %s", oneLine(p.Campaign), oneLine(p.Sender)), "  ")
	b.WriteString(o.paint(ansiBold, wrapProse(o.headline(p), o.Width, "  ")) + "\n")
	if c := p.Cost; c != nil {
		m := o.amounts(p)
		var line strings.Builder
		fmt.Fprintf(&line, "Cost: %s to send, %s already spent", m.Money(c.Total), m.Money(c.AlreadySpent))
		for i, cc := range c.ByCountry {
			if i == maxCountries {
				fmt.Fprintf(&line, " and %s more", words.Count(len(c.ByCountry)-maxCountries))
				break
			}
			if i == 0 {
				line.WriteString("; ")
			} else {
				line.WriteString(", ")
			}
			fmt.Fprintf(&line, "%s %s", cc.Country, m.Number(cc.Cost))
		}
		for _, u := range c.Unpriced {
			fmt.Fprintf(&line, ", %s no price (%s)", u.Country, words.Count(u.Recipients))
		}
		para(line.String(), "  ")
	}
	if bc := p.Budget; bc != nil {
		if len(bc.Exceeded) == 0 {
			b.WriteString("Budget: within\n")
		} else {
			b.WriteString("Budget: OVER, apply refuses this plan:\n")
			for _, e := range budgetLines(p, o.amounts(p)) {
				para("  - "+oneLine(e), "    ")
			}
		}
	}
	writeComplianceText(b, p)
	if n := capNote(p); n != "" {
		para(n+".", "  ")
	}
	paused, estimate, tested := controlLines(p)
	for _, l := range []string{estimate, tested} {
		if l != "" {
			para(oneLine(l)+".", "  ")
		}
	}
	b.WriteString("\n")
	if paused != "" && !refusedAs(p, plan.RefusedPaused) {
		b.WriteString(o.paint(ansiYellow, wrapProse(oneLine(paused)+".", o.Width, "  ")) + "\n\n")
	}
	if n := p.State.FirstSendNotice(p.Campaign); n != "" && p.Refusal == nil {
		para("Note: "+oneLine(n)+".", "  ")
		b.WriteString("\n")
	}
}

// The batch table's columns.
const (
	colBatch      = "Batch"
	colRecipients = "Recipients"
	colEncoding   = "Encoding"
	colSegments   = "Segments"
	colBody       = "Body"
	colWhen       = "When"
)

// leastPreview is the least of a body the batch table shows while
// shortening other columns can make room for it.
const leastPreview = 30

// writeBatchTable writes the first o.MaxBatches batches (50 by default)
// and how many more there are.
func writeBatchTable(b *strings.Builder, v shown, o Output) error {
	p := v.p
	nb := p.NumBatches()
	if nb == 0 {
		return nil
	}
	most := o.MaxBatches
	if most <= 0 {
		most = 50
	}
	// The first batches, walked: a saved plan's are read from its file as
	// a stream, and the walk stops once the table has its rows.
	var batches []plan.Batch
	err := v.eachBatch(func(i int, batch plan.Batch) error {
		if i == most {
			return errEnough
		}
		batches = append(batches, batch)
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	g := batchGrid(p, batches)
	g.fit(o.Width, o.Plain)
	if err := g.write(b, o.Plain); err != nil {
		return err
	}
	if n := nb - most; n > 0 {
		fmt.Fprintf(b, "... and %s more %s (smsform plan --json lists them all)\n", words.Count(n), words.Plural(n, "batch", "batches"))
	}
	b.WriteString("\n")
	return nil
}

// batchGrid is the batch table before it is fitted. To fit, it first
// writes when a batch goes shorter, then the segments without "each",
// shorter headers, no encoding, and shorter batch ids, before it cuts the
// body preview below 30 characters.
func batchGrid(p *plan.Plan, batches []plan.Batch) *grid {
	n := len(batches)
	g := &grid{cols: []column{
		{header: colBatch, cells: make([]string, n)},
		{header: colRecipients, cells: make([]string, n)},
		{header: colEncoding, cells: make([]string, n)},
		{header: colSegments, cells: make([]string, n)},
		{header: colBody, cells: make([]string, n), cut: cutEnd, least: leastPreview},
	}}
	total := make([]string, n) // the segments alone
	var when, whenShort []string
	for i, batch := range batches {
		g.cols[0].cells[i] = batch.ID
		g.cols[1].cells[i] = words.Count(len(batch.Recipients))
		g.cols[2].cells[i] = string(batch.Encoding)
		total[i] = words.Count(batch.TotalSegments())
		g.cols[3].cells[i] = fmt.Sprintf("%s (%s each)", total[i], words.Count(batch.Segments))
		g.cols[4].cells[i] = preview(batch.Body)
		if p.Schedule != nil {
			at := p.Schedule.Batch(i)
			when = append(when, short(at))
			whenShort = append(whenShort, shorter(at))
		}
	}
	if p.Schedule != nil {
		g.add(column{header: colWhen, cells: when})
		g.shrink = append(g.shrink, func(g *grid) bool {
			c := g.col(colWhen)
			c.header, c.cells = "When (UTC)", whenShort
			return true
		})
	}
	g.shrink = append(g.shrink,
		func(g *grid) bool { g.col(colSegments).cells = total; return true },
		func(g *grid) bool {
			g.col(colRecipients).header, g.col(colSegments).header = "Msgs", "Segs"
			return true
		},
		func(g *grid) bool { return g.drop(colEncoding) },
		func(g *grid) bool {
			c := g.col(colBatch)
			for i, id := range c.cells {
				c.cells[i] = id[:min(len(id), len("b-")+8)]
			}
			return true
		})
	return g
}

// writeInvalidTable lists the first invalid numbers, and how many more.
func writeInvalidTable(b *strings.Builder, v shown, o Output) error {
	invalid := v.invalid()
	if len(invalid) == 0 {
		return nil
	}
	fmt.Fprintf(b, "Invalid numbers (%s), skipped:\n", words.Count(len(invalid)))
	shown := invalid[:min(len(invalid), maxListed)]
	g := &grid{cols: []column{
		{header: "Source", cut: cutStart, least: 20},
		{header: "Number", cut: cutEnd, least: 16},
		{header: "Reason", cut: cutEnd, least: 20},
	}}
	for _, inv := range shown {
		g.cols[0].cells = append(g.cols[0].cells, oneLine(inv.Source))
		g.cols[1].cells = append(g.cols[1].cells, oneLine(inv.Value))
		g.cols[2].cells = append(g.cols[2].cells, oneLine(inv.Reason))
	}
	g.fit(o.Width, o.Plain)
	if err := g.write(b, o.Plain); err != nil {
		return err
	}
	if n := len(invalid) - len(shown); n > 0 {
		fmt.Fprintf(b, "... and %s more\n", words.Count(n))
	}
	b.WriteString("\n")
	return nil
}

// writeDuplicateTable lists the first duplicates: the row dropped, the
// row sent in its place.
func writeDuplicateTable(b *strings.Builder, v shown, o Output) error {
	n := v.p.Summary.Duplicates
	if n == 0 {
		return nil
	}
	dups := v.duplicates()
	fmt.Fprintf(b, "%s, sent once:\n", words.N(n, "duplicate", "duplicates"))
	g := &grid{cols: []column{
		{header: "Row dropped", cut: cutStart, least: 20},
		{header: "Row kept", cut: cutStart, least: 20},
		{header: "Number"},
		{header: "Variables", cut: cutEnd, least: 6},
	}}
	for _, d := range dups {
		kept := oneLine(d.Kept)
		if d.Kept == "" {
			kept = "none: the number is excluded"
		}
		g.cols[0].cells = append(g.cols[0].cells, oneLine(d.Row))
		g.cols[1].cells = append(g.cols[1].cells, kept)
		g.cols[2].cells = append(g.cols[2].cells, d.Phone)
		g.cols[3].cells = append(g.cols[3].cells, variablesWords(d, "differ"))
	}
	g.fit(o.Width, o.Plain)
	if err := g.write(b, o.Plain); err != nil {
		return err
	}
	if more := n - len(dups); more > 0 {
		fmt.Fprintf(b, "... and %s more\n", words.Count(more))
	}
	b.WriteString("\n")
	return nil
}

// writeHeld lists the first recipients the state holds back, one line
// each, cut to the width.
func writeHeld(b *strings.Builder, title, style string, held []plan.Held, o Output) {
	if len(held) == 0 {
		return
	}
	title = wrapProse(fmt.Sprintf("%s: %s", title, words.Count(len(held))), o.Width, "  ")
	if style != "" {
		title = o.paint(style, title)
	}
	b.WriteString(title + "\n")
	for i, h := range held {
		if i == maxListed {
			fmt.Fprintf(b, "  ... and %s more\n", words.Count(len(held)-maxListed))
			break
		}
		line := fmt.Sprintf("  %s  batch %s", h.Phone, h.BatchID)
		if h.Reason != "" {
			line += ": " + oneLine(h.Reason)
		}
		b.WriteString(cutLine(line, o.Width) + "\n")
	}
	b.WriteString("\n")
}
