package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/clipperhouse/displaywidth"
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
// when plain (logs, pipes, files), which read and grep well.
func newTable(w io.Writer, plain bool) *tablewriter.Table {
	if !plain {
		return tablewriter.NewWriter(w)
	}
	return tablewriter.NewTable(&trimWriter{w: w},
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Lines: tw.LinesNone, Separators: tw.SeparatorsNone},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithPadding(tw.Padding{Left: tw.Empty, Right: "  ", Overwrite: true}))
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

// fitPreview cuts column col of rows (the body preview) so that a table of
// rows under header fits width; a width of 0 leaves it whole. A ruled
// table's border takes 1 column and each cell 3 besides its text; a plain
// one puts 2 between columns.
func fitPreview(rows [][]string, header []string, col, width int, plain bool) {
	if width <= 0 || len(rows) == 0 {
		return
	}
	used := 1 + 3*len(header)
	if plain {
		used = 2 * (len(header) - 1) // two spaces between columns
	}
	for c := range header {
		if c == col {
			continue
		}
		w := displaywidth.String(header[c])
		for _, r := range rows {
			w = max(w, displaywidth.String(r[c]))
		}
		used += w
	}
	room := max(width-used, 10) // a preview too short to read says nothing
	for _, r := range rows {
		r[col] = preview(r[col], room)
	}
}

// preview shortens a body to one line of at most n characters.
func preview(body string, n int) string {
	return displaywidth.TruncateString(strings.Join(strings.Fields(body), " "), n, "…")
}

// errEnough stops a walk of the batches that has what it came for.
var errEnough = errors.New("enough batches")

// WriteTable writes the plan for a terminal: the headline, a table of
// batches, the invalid numbers (first 20) and the warnings.
func WriteTable(w io.Writer, p *plan.Plan, o Output) error {
	max := o.MaxBatches
	if max <= 0 {
		max = 50
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Campaign %s, sender %s\n%s\n", p.Campaign, p.Sender, o.paint(ansiBold, Headline(p)))
	if c := p.Cost; c != nil {
		fmt.Fprintf(&b, "Cost: %s to send, %s already spent", words.Money(c.Currency, c.Total), words.Money(c.Currency, c.AlreadySpent))
		for i, cc := range c.ByCountry {
			if i == maxCountries {
				fmt.Fprintf(&b, " and %s more", words.Count(len(c.ByCountry)-maxCountries))
				break
			}
			if i == 0 {
				b.WriteString("; ")
			} else {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s", cc.Country, words.Money("", cc.Cost))
		}
		for _, u := range c.Unpriced {
			fmt.Fprintf(&b, ", %s no price (%s)", u.Country, words.Count(u.Recipients))
		}
		b.WriteString("\n")
	}
	if bc := p.Budget; bc != nil {
		if len(bc.Exceeded) == 0 {
			b.WriteString("Budget: within\n")
		} else {
			b.WriteString("Budget: OVER, apply refuses this plan:\n")
			for _, e := range bc.Exceeded {
				fmt.Fprintf(&b, "  - %s\n", e)
			}
		}
	}
	b.WriteString("\n")
	if n := p.State.FirstSendNotice(p.Campaign); n != "" {
		fmt.Fprintf(&b, "Note: %s.\n\n", n)
	}
	writeScheduleText(&b, p, "  ")
	if nb := p.NumBatches(); nb > 0 {
		t := newTable(&b, o.Plain)
		cols := []string{"Batch", "Recipients", "Encoding", "Segments", "Body"}
		if p.Schedule != nil {
			cols = append(cols, "When")
		}
		t.Header(cols)
		// The first batches, walked: a saved plan's are read from its file
		// as a stream, and the walk stops once the table has its rows.
		var rows [][]string
		err := p.EachBatch(func(i int, batch plan.Batch) error {
			if i == max {
				return errEnough
			}
			row := []string{batch.ID, words.Count(len(batch.Recipients)), string(batch.Encoding),
				fmt.Sprintf("%s (%d each)", words.Count(batch.TotalSegments()), batch.Segments),
				strings.Join(strings.Fields(batch.Body), " ")}
			if p.Schedule != nil {
				row = append(row, short(p.Schedule.Batch(i)))
			}
			rows = append(rows, row)
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return err
		}
		fitPreview(rows, cols, 4, o.Width, o.Plain)
		for _, row := range rows {
			if err := t.Append(row); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		if n := nb - max; n > 0 {
			fmt.Fprintf(&b, "... and %s more %s (smsform plan --json lists them all)\n", words.Count(n), words.Plural(n, "batch", "batches"))
		}
		b.WriteString("\n")
	}
	if len(p.Invalid) > 0 {
		fmt.Fprintf(&b, "Invalid numbers (%s), skipped:\n", words.Count(len(p.Invalid)))
		t := newTable(&b, o.Plain)
		t.Header("Source", "Number", "Reason")
		for i, inv := range p.Invalid {
			if i == maxListed {
				break
			}
			if err := t.Append(inv.Source, o.number(inv.Value), inv.Reason); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		if n := len(p.Invalid) - maxListed; n > 0 {
			fmt.Fprintf(&b, "... and %s more\n", words.Count(n))
		}
		b.WriteString("\n")
	}
	writeHeld(&b, o.paint(ansiYellow, "In doubt (never sent again until resolved: smsform state resolve --in-doubt --as sent|unsent)"), p.InDoubt, o)
	writeHeld(&b, "Failed", p.Failed, o)
	if len(p.Warnings) > 0 {
		b.WriteString("Warnings:\n")
		for _, wn := range p.Warnings {
			fmt.Fprintf(&b, "  - %s\n", wn)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeHeld(b *strings.Builder, title string, held []plan.Held, o Output) {
	if len(held) == 0 {
		return
	}
	fmt.Fprintf(b, "%s: %s\n", title, words.Count(len(held)))
	for i, h := range held {
		if i == maxListed {
			fmt.Fprintf(b, "  ... and %s more\n", words.Count(len(held)-maxListed))
			break
		}
		fmt.Fprintf(b, "  %s  batch %s", o.number(h.Phone), h.BatchID)
		if h.Reason != "" {
			fmt.Fprintf(b, ": %s", h.Reason)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}
