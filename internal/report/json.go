package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/smsform/smsform/compliance"
	"github.com/smsform/smsform/plan"
)

// jsonPlan is the JSON document of a plan (format_version 1).
type jsonPlan struct {
	FormatVersion string          `json:"format_version"`
	Refusal       *plan.Refusal   `json:"refusal,omitempty"` // why apply will refuse the plan, first
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
	Paused        *jsonPause      `json:"paused,omitempty"`
	LastTestSend  *jsonTestSend   `json:"last_test_send,omitempty"`
	Estimate      *jsonEstimate   `json:"estimate,omitempty"`

	Template       string              `json:"template"`
	Samples        []plan.Sample       `json:"samples"`
	Countries      []plan.CountryCount `json:"countries"`
	Distribution   []plan.SegmentCount `json:"distribution"`
	Cost           *plan.Cost          `json:"cost,omitempty"`
	Budget         *plan.BudgetCheck   `json:"budget,omitempty"`
	EmptyVariables plan.EmptyVariables `json:"empty_variables"`
	DuplicateRows  []plan.Duplicate    `json:"duplicate_rows"`
	// Kind and Compliance: with rule sets (see compliance.go).
	Kind       compliance.Kind    `json:"kind,omitempty"`
	Compliance []plan.RuleVerdict `json:"compliance,omitempty"`
}

type jsonBatch struct {
	ID                 string   `json:"id"`
	Recipients         []string `json:"recipients"`
	Body               string   `json:"body"`
	Encoding           string   `json:"encoding"`
	Segments           int      `json:"segments"`
	SegmentsPerMessage int      `json:"segments_per_message"`
	Zones              []string `json:"zones,omitempty"`
	Hours              string   `json:"hours,omitempty"` // the hours rules allow its recipients, in their local time
	When               string   `json:"when,omitempty"`  // with a schedule: now, an RFC 3339 time, ended or never
}

// WriteJSON writes the plan as one JSON document.
func WriteJSON(w io.Writer, p *plan.Plan, o Output) error {
	v := o.show(p)
	doc := jsonPlan{
		FormatVersion: plan.FormatVersion,
		Refusal:       p.Refusal,
		Campaign:      p.Campaign,
		Sender:        p.Sender,
		Summary:       p.Summary,
		Batches:       []jsonBatch{},
		Invalid:       v.invalid(),
		InDoubt:       v.held(p.InDoubt),
		Failed:        v.held(p.Failed),
		Removed:       v.removed(),
		BodyChanged:   p.BodyChanged,
		Warnings:      append([]string{}, p.Warnings...),
		State:         p.State,
		Schedule:      scheduleJSON(p.Schedule),

		Template:       p.Template,
		Samples:        v.samples(),
		Countries:      append([]plan.CountryCount{}, p.Countries...),
		Distribution:   append([]plan.SegmentCount{}, p.Distribution...),
		Cost:           p.Cost,
		Budget:         p.Budget,
		EmptyVariables: plan.EmptyVariables{Recipients: p.EmptyVariables.Recipients, Rows: append([]string{}, p.EmptyVariables.Rows...)},
		DuplicateRows:  v.duplicates(),
	}
	doc.Paused, doc.LastTestSend, doc.Estimate = controlsJSON(p, v)
	doc.Kind, doc.Compliance = complianceJSON(p)
	// The batches, a million for a personalised campaign, are streamed one
	// by one: the document is never whole in memory.
	return streamJSON(w, doc, "batches", false, func(add func(any) error) error {
		return v.eachBatch(func(i int, b plan.Batch) error {
			jb := jsonBatch{ID: b.ID, Recipients: b.Recipients, Body: b.Body,
				Encoding: string(b.Encoding), Segments: b.TotalSegments(), SegmentsPerMessage: b.Segments, Zones: b.Zones, Hours: b.Hours}
			if p.Schedule != nil {
				jb.When = whenJSON(p.Schedule.Batch(i))
			}
			return add(jb)
		})
	})
}

// streamJSON writes doc as indented JSON, filling its empty list at key in
// place with the items given to add: the bytes are those of encoding the
// whole document at once, but one item at a time is in memory (a plan's
// batches, a state's recipients: millions of them). escapeHTML is as
// [json.Encoder.SetEscapeHTML] has it.
func streamJSON(w io.Writer, doc any, key string, escapeHTML bool, items func(add func(item any) error) error) error {
	var frame bytes.Buffer
	enc := json.NewEncoder(&frame)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	before, after, ok := bytes.Cut(frame.Bytes(), []byte(fmt.Sprintf("%q: []", key)))
	if !ok {
		return fmt.Errorf("JSON document: no empty list %q to fill", key)
	}
	bw := bufio.NewWriter(w)
	bw.Write(before)
	fmt.Fprintf(bw, "%q: [", key)
	var one bytes.Buffer
	ienc := json.NewEncoder(&one)
	ienc.SetIndent("    ", "  ")
	ienc.SetEscapeHTML(escapeHTML)
	n := 0
	err := items(func(item any) error {
		one.Reset()
		if err := ienc.Encode(item); err != nil {
			return err
		}
		if n > 0 {
			bw.WriteByte(',')
		}
		n++
		bw.WriteString("\n    ")
		// Encode ends each value with a newline, which the list's own
		// separators replace.
		_, err := bw.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n")))
		return err
	})
	if err != nil {
		return err
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteByte(']')
	bw.Write(after)
	return bw.Flush()
}
