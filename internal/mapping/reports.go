package mapping

import (
	"fmt"
	"strings"
	"time"

	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/words"
)

// Delivery is what a delivery report says became of a message.
type Delivery uint8

const (
	// Pending: a status that neither Delivered nor Undelivered names
	// (queued, sent to the carrier, or a word nobody listed). Not final,
	// and never taken for delivered.
	Pending Delivery = iota
	// Delivered: the message reached the phone.
	Delivered
	// Undelivered: it will not reach it.
	Undelivered
)

var deliveryNames = [...]string{Pending: "pending", Delivered: "delivered", Undelivered: "undelivered"}

func (d Delivery) String() string { return deliveryNames[d] }

// Reports is how a provider's delivery reports are read: where each
// report's fields are, and which statuses mean delivered or undelivered.
// Every pointer but List is inside one report.
type Reports struct {
	// List is the list of reports in a body; nil: the body is one report.
	List *rawjson.Pointer
	// ID is the provider's id of the message, as its send answer gave it;
	// Number is the recipient. At least one of them is set.
	ID, Number *rawjson.Pointer
	// DefaultRegion is the country of a number written without its
	// country code ("" when the provider always writes it).
	DefaultRegion string
	Status        rawjson.Pointer
	At, Reason    *rawjson.Pointer // nil: none
	// Delivered and Undelivered are the statuses that settle a message;
	// any other is Pending.
	Delivered, Undelivered []Value
	// Export, when set, names the columns of the provider's export files
	// (reports import of a CSV file), whose names are not the posted
	// body's: Columns reads them rather than the pointers above.
	Export *ExportColumns
	// Where the mapping is declared ("smsform.yaml:12"), for messages.
	Where string
}

// ExportColumns are the columns of a provider's CSV export, each /NAME:
// Status, and ID or Number (or both); At and Reason nil when the file has
// none.
type ExportColumns struct {
	ID, Number *rawjson.Pointer
	Status     rawjson.Pointer
	At, Reason *rawjson.Pointer
	Where      string // where export: is declared ("smsform.yaml:17"), for messages
}

// DeliveryOf is what status v means under r: only a status listed means
// delivered or undelivered.
func (r *Reports) DeliveryOf(v Value) Delivery {
	switch {
	case v.IsZero():
		return Pending
	case contains(r.Delivered, v):
		return Delivered
	case contains(r.Undelivered, v):
		return Undelivered
	}
	return Pending
}

// Report is one delivery report as the mapping read it.
type Report struct {
	ID     string // "" when the report gives none
	Number string // as the provider wrote it; "" when none
	Delivery
	// Status is the status as written (a string unquoted, a number or a
	// boolean as text), or what stood there instead ("null", "an object").
	Status string
	Reason string    // the provider's words; "" when none, and never read for a delivered message
	At     time.Time // when it happened, as the report says; zero when it does not
}

// Read reads the reports of doc, a body as [Doc] gives it. A report the
// mapping cannot read (no status, neither an id nor a number, a time that
// is not one) makes the whole body unreadable: nothing of it should be
// recorded, and the error says which report and which pointer.
func (r *Reports) Read(doc []byte, clean Cleaner) ([]Report, error) {
	ptrs := []rawjson.Pointer{r.Status}
	slot := func(p *rawjson.Pointer) int {
		if p == nil {
			return -1
		}
		ptrs = append(ptrs, *p)
		return len(ptrs) - 1
	}
	id, number, at, reason := slot(r.ID), slot(r.Number), slot(r.At), slot(r.Reason)
	pk := rawjson.NewPicker(ptrs...)
	found := make([][]byte, len(ptrs))
	text := func(i int) string {
		if i < 0 {
			return ""
		}
		return rawjson.Text(found[i])
	}
	var out []Report
	err := eachElement(doc, r.List, func(n int, el []byte) error {
		pk.Pick(el, 0, found)
		if found[0] == nil {
			return fmt.Errorf("%s: no status at %s", which(r.List, n), r.Status)
		}
		v, kind := ValueOfJSON(found[0])
		status := kind
		if kind == "" {
			status = v.written(found[0])
		}
		rep, err := r.report(text(id), text(number), v, status, text(reason), clean)
		if err == nil && at >= 0 {
			rep.At, err = readTime(found[at], r.At)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", which(r.List, n), err)
		}
		out = append(out, rep)
		return nil
	})
	return out, err
}

// report makes a Report of one report's fields but its time: its id and
// number as text, its status's value and text, and its provider's words.
func (r *Reports) report(id, number string, v Value, status, reason string, clean Cleaner) (Report, error) {
	rep := Report{ID: words.Clip(clean.ID(id), 128), Number: words.Clip(strings.TrimSpace(number), 40), Delivery: r.DeliveryOf(v), Status: words.Clip(clean.ID(status), 64)}
	if rep.ID == "" && rep.Number == "" {
		return Report{}, fmt.Errorf("neither an id (%s) nor a number (%s): it names no message", pointerOrNone(r.ID), pointerOrNone(r.Number))
	}
	if rep.Delivery != Delivered {
		rep.Reason = words.Clip(clean.Words(reason), 300)
	}
	return rep, nil
}

// readTime reads the JSON text when (nil or null: none) at pointer p as a
// time: a string or a number, "" for none.
func readTime(when []byte, p *rawjson.Pointer) (time.Time, error) {
	if when == nil || string(when) == "null" {
		return time.Time{}, nil
	}
	if c := when[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
		return time.Time{}, fmt.Errorf("%s at %s is not a time", rawjson.Kind(when), p)
	}
	return textTime(rawjson.Text(when), p)
}

// textTime reads s, written at p, as a time; "" is none.
func textTime(s string, p *rawjson.Pointer) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	t, ok := ParseTime(s)
	if !ok {
		return time.Time{}, fmt.Errorf("%q at %s is not a time: write RFC 3339 (2026-03-01T12:00:01Z), or a Unix time in seconds or milliseconds", words.Clip(s, 40), p)
	}
	return t, nil
}

// eachElement calls fn with each element of the list at p in doc (valid
// JSON), numbered from 0, or with doc itself when p is nil; it stops at
// fn's first error, and refuses a list longer than MaxBodyElements before fn
// sees any of it.
func eachElement(doc []byte, p *rawjson.Pointer, fn func(n int, el []byte) error) error {
	if p == nil {
		return fn(0, trimSpace(doc))
	}
	list, err := p.Lookup(doc)
	switch {
	case err != nil:
		return fmt.Errorf("no list at %s: %w", p, err)
	case list[0] != '[':
		return fmt.Errorf("the body holds %s at %s, not a list", rawjson.Kind(list), p)
	}
	n := 0
	rawjson.Elements(list, func([]byte) bool { n++; return n <= MaxBodyElements })
	if n > MaxBodyElements {
		return fmt.Errorf("%w (the list at %s)", ErrTooMany, p)
	}
	n = 0
	rawjson.Elements(list, func(el []byte) bool {
		err = fn(n, el)
		n++
		return err == nil
	})
	return err
}

// which names element n of a body for messages.
func which(list *rawjson.Pointer, n int) string {
	if list == nil {
		return "the body"
	}
	return fmt.Sprintf("element %d of %s", n, list)
}

func pointerOrNone(p *rawjson.Pointer) string {
	if p == nil {
		return "none mapped"
	}
	return "at " + p.String()
}

func trimSpace(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	for j > i && (b[j-1] == ' ' || b[j-1] == '\t' || b[j-1] == '\r' || b[j-1] == '\n') {
		j--
	}
	return b[i:j]
}

// Columns reads delivery reports from the rows of a table with a header
// row (a provider's CSV export): each pointer of the mapping is /NAME,
// the column named NAME (List is not read: each row is one report).
type Columns struct {
	r                              *Reports
	id, number, status, at, reason int              // column indexes; -1: none
	atPointer                      *rawjson.Pointer // for messages
}

// Columns finds the mapping's columns in header. It refuses a pointer that
// is not /NAME or names no column, before any row is read.
func (r *Reports) Columns(header []string) (*Columns, error) {
	c := &Columns{r: r}
	var errs []string
	find := func(p *rawjson.Pointer) int {
		if p == nil {
			return -1
		}
		i, err := columnOf(*p, header)
		if err != nil {
			errs = append(errs, err.Error())
		}
		return i
	}
	cols := ExportColumns{ID: r.ID, Number: r.Number, Status: r.Status, At: r.At, Reason: r.Reason}
	if r.Export != nil {
		cols = *r.Export
	}
	c.id, c.number, c.status, c.at, c.reason = find(cols.ID), find(cols.Number), find(&cols.Status), find(cols.At), find(cols.Reason)
	c.atPointer = cols.At
	if len(errs) > 0 {
		err := fmt.Errorf("%s (the header has %s)", strings.Join(errs, "; "), strings.Join(quoteAll(header, 20), ", "))
		if r.Export == nil {
			// The mapping is the posted body's: an export often names
			// its columns otherwise.
			err = fmt.Errorf("%w; if the export's columns are not the posted reports' names, name them under provider.reports.export (id, number, status, at, reason: /COLUMN each)", err)
		}
		return nil, err
	}
	return c, nil
}

// Report reads one row. Like [Reports.Read], a row the mapping cannot read
// is an error naming the column.
func (c *Columns) Report(row []string, clean Cleaner) (Report, error) {
	cell := func(i int) string {
		if i < 0 || i >= len(row) {
			return ""
		}
		return row[i]
	}
	status := cell(c.status)
	if c.status >= len(row) {
		return Report{}, fmt.Errorf("no status: the row has %d columns", len(row))
	}
	rep, err := c.r.report(cell(c.id), cell(c.number), StringValue(status), status, cell(c.reason), clean)
	if err == nil {
		rep.At, err = textTime(cell(c.at), c.atPointer)
	}
	return rep, err
}

// columnOf is the index in header of the column p names: p is /NAME.
func columnOf(p rawjson.Pointer, header []string) (int, error) {
	raw := p.String()
	if !strings.HasPrefix(raw, "/") || strings.Contains(raw[1:], "/") {
		return -1, fmt.Errorf("%s names no column: in a table, write /COLUMN", p)
	}
	name := strings.ReplaceAll(strings.ReplaceAll(raw[1:], "~1", "/"), "~0", "~")
	found := -1
	for i, h := range header {
		if strings.TrimPrefix(h, "\ufeff") != name { // a byte-order mark before the first column
			continue
		}
		if found >= 0 {
			// Which one the export meant is not for smsform to guess.
			return -1, fmt.Errorf("%s names two columns of the header (%d and %d): rename one, or remove it", p, found+1, i+1)
		}
		found = i
	}
	if found < 0 {
		return -1, fmt.Errorf("%s names no column of the header", p)
	}
	return found, nil
}

// quoteAll quotes the first n of ss for a message.
func quoteAll(ss []string, n int) []string {
	out := make([]string, 0, min(len(ss), n)+1)
	for i, s := range ss {
		if i == n {
			out = append(out, "…")
			break
		}
		out = append(out, fmt.Sprintf("%q", words.Clip(s, 40)))
	}
	return out
}
