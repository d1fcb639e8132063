// Package report is everything smsform shows people and programs: a plan
// as a table for a terminal, as markdown for a pull request, as one JSON
// document ([WriteTable], [WriteMarkdown], [WriteJSON]); and an apply as it
// runs, as progress lines or JSON events, and its summary ([Progress],
// [WriteResult]). It computes nothing: plan and apply hand it their
// values, and internal/cli picks the output from the command line.
//
// Phone numbers are masked unless [Output.ShowNumbers] says otherwise.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/clipperhouse/displaywidth"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// Output says how a plan is shown.
type Output struct {
	// ShowNumbers prints phone numbers whole; by default they are masked,
	// because plans are pasted into pull requests.
	ShowNumbers bool
	// MaxBatches caps the batches the table lists (0: 50).
	MaxBatches int
	// Width is the width the table must fit, by cutting the body preview
	// short; 0 leaves the preview whole (--wide, or JSON-like use).
	Width int
	// Plain writes tables as aligned columns without rules, for logs,
	// pipes and files; rules are for terminals.
	Plain bool
	// Colour marks the summary line and the in-doubt recipients for a
	// terminal (ANSI bold and yellow).
	Colour bool
	// MarkdownLimit caps markdown output in bytes (0: 65,536, GitHub's
	// comment limit); the middle is cut, never the summary at the top.
	MarkdownLimit int
}

func (o Output) number(phone string) string {
	if o.ShowNumbers {
		return phone
	}
	return e164.Mask(phone)
}

// Headline counts everything in one line, e.g. "Plan: 1,204 messages in 13
// batches (1,310 segments, EUR 45.85); 3 invalid, 12 excluded, 0 already
// sent, 0 in doubt." (the cost with a price table only).
func Headline(p *plan.Plan) string {
	s := p.Summary
	var b strings.Builder
	cost := ""
	if c := p.Cost; c != nil {
		cost = ", " + words.Money(c.Currency, c.Total)
		if len(c.Unpriced) > 0 {
			cost += " + no price"
		}
	}
	fmt.Fprintf(&b, "Plan: %s %s in %s %s (%s %s%s); %s invalid, %s excluded, %s already sent, %s in doubt",
		words.Count(s.ToSend), words.Plural(s.ToSend, "message", "messages"),
		words.Count(s.Batches), words.Plural(s.Batches, "batch", "batches"),
		words.Count(s.Segments), words.Plural(s.Segments, "segment", "segments"), cost,
		words.Count(s.Invalid), words.Count(s.Excluded), words.Count(s.AlreadySent), words.Count(s.InDoubt))
	if s.Failed > 0 {
		fmt.Fprintf(&b, ", %s failed", words.Count(s.Failed))
	}
	if s.Duplicates > 0 {
		fmt.Fprintf(&b, ", %s %s", words.Count(s.Duplicates), words.Plural(s.Duplicates, "duplicate", "duplicates"))
	}
	b.WriteString(".")
	return b.String()
}

// maxCountries is how many countries the table's cost line names, the
// dearest first.
const maxCountries = 5

// maxListed is how many invalid numbers, or recipients held back, a table
// lists.
const maxListed = 20

const (
	ansiBold   = "\x1b[1m"
	ansiYellow = "\x1b[1;33m"
	ansiReset  = "\x1b[0m"
)

// paint wraps s in an ANSI style when the output is coloured.
func (o Output) paint(style, s string) string {
	if !o.Colour {
		return s
	}
	return style + s + ansiReset
}

// NewTable is a table for w: ruled on a terminal, plain aligned columns
// when plain (logs, pipes, files), which read and grep well.
func NewTable(w io.Writer, plain bool) *tablewriter.Table {
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
		t := NewTable(&b, o.Plain)
		cols := []string{"Batch", "Recipients", "Encoding", "Segments", "Body"}
		if p.Schedule != nil {
			cols = append(cols, "When")
		}
		t.Header(cols)
		var rows [][]string
		for i := range min(nb, max) {
			batch := p.Batch(i)
			row := []string{batch.ID, words.Count(len(batch.Recipients)), string(batch.Encoding),
				fmt.Sprintf("%s (%d each)", words.Count(batch.TotalSegments()), batch.Segments),
				strings.Join(strings.Fields(batch.Body), " ")}
			if p.Schedule != nil {
				row = append(row, short(p.Schedule.Batch(i)))
			}
			rows = append(rows, row)
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
		t := NewTable(&b, o.Plain)
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

// jsonPlan is the JSON document of a plan (format_version 1).
type jsonPlan struct {
	FormatVersion string          `json:"format_version"`
	Campaign      string          `json:"campaign"`
	Sender        string          `json:"sender"`
	Summary       plan.Summary    `json:"summary"`
	Batches       []jsonBatch     `json:"batches"`
	Invalid       []plan.Invalid  `json:"invalid"`
	InDoubt       []plan.Held     `json:"in_doubt"`
	Failed        []plan.Held     `json:"failed"`
	Removed       []string        `json:"removed"`
	BodyChanged   int             `json:"body_changed"`
	Warnings      []string        `json:"warnings"`
	State         plan.StateStamp `json:"state"`
	Schedule      *jsonSchedule   `json:"schedule,omitempty"`

	Template       string              `json:"template"`
	Samples        []plan.Sample       `json:"samples"`
	Countries      []plan.CountryCount `json:"countries"`
	Distribution   []plan.SegmentCount `json:"distribution"`
	Cost           *plan.Cost          `json:"cost,omitempty"`
	Budget         *plan.BudgetCheck   `json:"budget,omitempty"`
	EmptyVariables plan.EmptyVariables `json:"empty_variables"`
	DuplicateRows  []plan.Duplicate    `json:"duplicate_rows"`
}

type jsonBatch struct {
	ID                 string   `json:"id"`
	Recipients         []string `json:"recipients"`
	Body               string   `json:"body"`
	Encoding           string   `json:"encoding"`
	Segments           int      `json:"segments"`
	SegmentsPerMessage int      `json:"segments_per_message"`
	Zones              []string `json:"zones,omitempty"`
	When               string   `json:"when,omitempty"` // with a schedule: now, an RFC 3339 time, ended or never
}

// WriteJSON writes the plan as one JSON document.
func WriteJSON(w io.Writer, p *plan.Plan, o Output) error {
	doc := jsonPlan{
		FormatVersion: plan.FormatVersion,
		Campaign:      p.Campaign,
		Sender:        p.Sender,
		Summary:       p.Summary,
		Batches:       []jsonBatch{},
		Invalid:       make([]plan.Invalid, 0, len(p.Invalid)),
		InDoubt:       o.held(p.InDoubt),
		Failed:        o.held(p.Failed),
		Removed:       make([]string, 0, len(p.Removed)),
		BodyChanged:   p.BodyChanged,
		Warnings:      append([]string{}, p.Warnings...),
		State:         p.State,
		Schedule:      scheduleJSON(p.Schedule),

		Template:       p.Template,
		Samples:        make([]plan.Sample, 0, len(p.Samples)),
		Countries:      append([]plan.CountryCount{}, p.Countries...),
		Distribution:   append([]plan.SegmentCount{}, p.Distribution...),
		Cost:           p.Cost,
		Budget:         p.Budget,
		EmptyVariables: plan.EmptyVariables{Recipients: p.EmptyVariables.Recipients, Rows: append([]string{}, p.EmptyVariables.Rows...)},
		DuplicateRows:  make([]plan.Duplicate, 0, len(p.DuplicateRows)),
	}
	for _, s := range p.Samples {
		doc.Samples = append(doc.Samples, o.sample(s))
	}
	for _, d := range p.DuplicateRows {
		d.Phone = o.number(d.Phone)
		doc.DuplicateRows = append(doc.DuplicateRows, d)
	}
	for _, inv := range p.Invalid {
		inv.Value = o.number(inv.Value)
		doc.Invalid = append(doc.Invalid, inv)
	}
	for _, r := range p.Removed {
		doc.Removed = append(doc.Removed, o.number(r))
	}
	var frame bytes.Buffer
	enc := json.NewEncoder(&frame)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	// The batches, a million for a personalised campaign, are streamed one
	// by one into the frame's empty list, so that the document is never
	// whole in memory; the bytes are those of encoding it at once.
	before, after, ok := bytes.Cut(frame.Bytes(), []byte(`"batches": [],`))
	if !ok {
		return errors.New("plan JSON: batches missing from the frame")
	}
	bw := bufio.NewWriter(w)
	bw.Write(before)
	if p.NumBatches() == 0 {
		bw.WriteString(`"batches": [],`)
	} else {
		bw.WriteString("\"batches\": [\n")
		var one bytes.Buffer
		oenc := json.NewEncoder(&one)
		oenc.SetIndent("    ", "  ")
		oenc.SetEscapeHTML(false)
		err := p.EachBatch(func(i int, b plan.Batch) error {
			nums := make([]string, len(b.Recipients))
			for j, r := range b.Recipients {
				nums[j] = o.number(r)
			}
			if i > 0 {
				bw.WriteString(",\n")
			}
			bw.WriteString("    ")
			// Encode ends each value with a newline, which the list's own
			// separators replace.
			one.Reset()
			jb := jsonBatch{ID: b.ID, Recipients: nums, Body: b.Body,
				Encoding: string(b.Encoding), Segments: b.TotalSegments(), SegmentsPerMessage: b.Segments, Zones: b.Zones}
			if p.Schedule != nil {
				jb.When = whenJSON(p.Schedule.Batch(i))
			}
			if err := oenc.Encode(jb); err != nil {
				return err
			}
			bw.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n")))
			return nil
		})
		if err != nil {
			return err
		}
		bw.WriteString("\n  ],")
	}
	bw.Write(after)
	return bw.Flush()
}

func (o Output) held(h []plan.Held) []plan.Held {
	out := make([]plan.Held, len(h))
	for i, x := range h {
		x.Phone = o.number(x.Phone)
		out[i] = x
	}
	return out
}
