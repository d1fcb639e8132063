package receive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/state"
)

// Format is how an export file of delivery reports is written.
type Format string

const (
	// CSV has a header row; each row is one report, each pointer of the
	// mapping the column it names (/status: the column "status").
	CSV Format = "csv"
	// JSONLines has a JSON document a line, each read as a posted body is
	// (with the mapping's list, when it has one): a provider's export of
	// one report a line, or a log of the bodies a webhook received.
	JSONLines Format = "jsonl"
)

// FormatOf is the format a file's name says: .csv, or .jsonl, .ndjson or
// .json (JSON lines); "" for any other.
func FormatOf(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return CSV
	case ".jsonl", ".ndjson", ".json":
		return JSONLines
	}
	return ""
}

// DefaultBatch is how many reports an import gives the state at once:
// enough that a commit's cost is spread thin, few enough that memory stays
// flat however long the file. Each group dirties pages all over the
// indexes of a large state (the report keys are hashes), and writes them
// again at its commit: at 979,949 reports into a state file, 10,000 a group
// took 57-59 s (124 MB peak), 25,000 49 s (179 MB), 50,000 43 s (250 MB),
// 100,000 42 s (382 MB, over the 300 MB an import may take). On 50,000
// reports alone, 10,000 had taken two thirds of the time of 1,000.
const DefaultBatch = 50_000

// Import reads delivery reports from an export file — for providers that
// have no webhook, and for backfills — and records them as `smsform
// receive` would: the same mapping, the same Recorder, so that a report
// imported after it was received (or imported twice) is a duplicate.
type Import struct {
	Reports *mapping.Reports
	Record  Recorder
	Batch   int // reports per call to Record; 0: DefaultBatch
}

// Imported is what an import read and what became of it.
type Imported struct {
	Lines   int // lines (CSV rows, JSON lines) read, the header and blank lines aside
	Reports int // reports recorded, duplicates included
	// Of them: already recorded (received, or imported before), matched
	// to no message, that resolved a recipient in doubt, that contradict
	// the record.
	Duplicates, Unmatched, Resolved, Anomalies int
	// UnmatchedWhy counts the unmatched by the state's reason.
	UnmatchedWhy map[string]int
	// PendingStatuses counts the new reports that are pending by the
	// provider's status (at most 20 of them): a status the mapping names
	// neither delivered nor undelivered, a slip of the mapping's as often
	// as a step the provider has not finished.
	PendingStatuses map[string]int
	Pending         int // the new reports that are pending, all of them
}

// LineError is the line of a file that stopped an import: every report
// before it is recorded, none after.
type LineError struct {
	File string
	Line int // 0: the file as a whole
	Err  error
}

func (e *LineError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}
func (e *LineError) Unwrap() error { return e.Err }

// File imports the reports of the file at path, written in format f. It
// stops at the first line it cannot read (a *LineError) once the reports
// before it are recorded: after fixing the line, importing the file again
// records the rest, and what was recorded counts once. A CSV header that
// lacks a column the mapping names stops it before anything is recorded.
func (im *Import) File(ctx context.Context, path string, f Format) (Imported, error) {
	file, err := os.Open(path)
	if err != nil {
		return Imported{}, err
	}
	defer file.Close()
	if fi, err := file.Stat(); err == nil && !fi.Mode().IsRegular() {
		return Imported{}, &LineError{File: path, Err: errors.New("not a regular file")}
	}
	return im.Read(ctx, file, path, f)
}

// Check reads as much of the file at path as tells whether the mapping
// can read it — a CSV header's columns, the first JSON line — so that a
// mismatch is refused before the state is even opened. File checks it
// again as it reads.
func (im *Import) Check(path string, f Format) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	// A batch that is never recorded: reading stops at its first report.
	b := &batcher{im: im, name: path, size: 1, probe: true, out: Imported{UnmatchedWhy: map[string]int{}, PendingStatuses: map[string]int{}}}
	switch f {
	case CSV:
		err = b.csv(file)
	case JSONLines:
		err = b.jsonLines(file)
	default:
		err = &LineError{File: path, Err: fmt.Errorf("unknown format %q: csv or jsonl", f)}
	}
	if errors.Is(err, errProbed) {
		return nil
	}
	return err
}

// errProbed ends a Check once a report was read.
var errProbed = errors.New("probed")

// Read imports the reports r holds, written in format f; name is the
// file's name for messages.
func (im *Import) Read(ctx context.Context, r io.Reader, name string, f Format) (Imported, error) {
	b := &batcher{im: im, ctx: ctx, name: name, out: Imported{UnmatchedWhy: map[string]int{}, PendingStatuses: map[string]int{}}}
	if b.size = im.Batch; b.size <= 0 {
		b.size = DefaultBatch
	}
	var err error
	switch f {
	case CSV:
		err = b.csv(r)
	case JSONLines:
		err = b.jsonLines(r)
	default:
		err = &LineError{File: name, Err: fmt.Errorf("unknown format %q: csv or jsonl", f)}
	}
	// The reports before a line that stopped the import are recorded.
	switch ferr := b.flush(); {
	case err == nil:
		err = ferr
	case ferr != nil: // the reports before the line that stopped it were not recorded either
		err = errors.Join(ferr, err)
	}
	return b.out, err
}

// batcher hands reports to the Recorder a batch at a time.
type batcher struct {
	im      *Import
	ctx     context.Context
	name    string
	size    int
	pending []state.Report
	line    int  // the line of the last report pending
	probe   bool // Check: stop at the first report, recording nothing
	out     Imported
}

// add queues the reports of one line, recording the batch once full.
func (b *batcher) add(line int, rs ...state.Report) error {
	if b.probe {
		return errProbed
	}
	b.out.Lines++
	b.pending = append(b.pending, rs...)
	b.line = line
	if len(b.pending) >= b.size {
		return b.flush()
	}
	return nil
}

// flush records what is pending.
func (b *batcher) flush() error {
	if len(b.pending) == 0 {
		return nil
	}
	if err := b.ctx.Err(); err != nil {
		return err
	}
	rec, err := b.im.Record.Record(b.ctx, b.pending, nil)
	if err != nil {
		return fmt.Errorf("record the reports of %s up to line %d: %w", b.name, b.line, err)
	}
	b.out.Reports += len(b.pending)
	for i, x := range rec.Reports {
		switch {
		case x.Duplicate:
			b.out.Duplicates++
		case x.Unmatched != "":
			b.out.Unmatched++
			countUpTo20(b.out.UnmatchedWhy, x.Unmatched)
		}
		if !x.Duplicate && b.pending[i].Delivery == state.Pending {
			b.out.Pending++
			countUpTo20(b.out.PendingStatuses, b.pending[i].ProviderStatus)
		}
		if x.Resolved {
			b.out.Resolved++
		}
		if x.Anomaly != "" {
			b.out.Anomalies++
		}
	}
	b.pending = b.pending[:0]
	return nil
}

// countUpTo20 counts key in m, which keeps 20 keys at the most.
func countUpTo20(m map[string]int, key string) {
	if len(m) < 20 || m[key] > 0 {
		m[key]++
	}
}

// csv reads a CSV export: a header row, then a report a row.
func (b *batcher) csv(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	// A byte-order mark before the header (spreadsheets write one) would
	// make a quoted first column a bare quote.
	if bom, err := br.Peek(3); err == nil && string(bom) == "\ufeff" {
		br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	header, err := cr.Read()
	switch {
	case errors.Is(err, io.EOF):
		return &LineError{File: b.name, Err: errors.New("the file is empty: a CSV export needs a header row")}
	case err != nil:
		return &LineError{File: b.name, Line: 1, Err: csvProblem(err)}
	}
	columns := len(header)
	cols, err := b.im.Reports.Columns(append([]string(nil), header...))
	if err != nil {
		what, where := "provider.reports", b.im.Reports.Where
		if e := b.im.Reports.Export; e != nil {
			what, where = what+".export", e.Where
		}
		return &LineError{File: b.name, Line: 1, Err: fmt.Errorf("%s (%s): %w", what, where, err)}
	}
	for last := cr.InputOffset(); ; last = cr.InputOffset() {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		line, _ := cr.FieldPos(0)
		switch {
		case errors.Is(err, csv.ErrFieldCount):
			return &LineError{File: b.name, Line: line, Err: fmt.Errorf("the row has %d fields and the header row %d: quote a field that holds a comma", len(row), columns)}
		case err != nil:
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				// The row it began on: a quote never closed is read to the
				// file's end.
				line = pe.StartLine
			}
			return &LineError{File: b.name, Line: line, Err: csvProblem(err)}
		case cr.InputOffset()-last > mapping.MaxBody:
			return &LineError{File: b.name, Line: line, Err: fmt.Errorf("a row longer than %d bytes", mapping.MaxBody)}
		}
		rep, err := cols.Report(row, cleaner{})
		if err != nil {
			return &LineError{File: b.name, Line: line, Err: err}
		}
		if err := b.add(line, stateReport(rep, b.im.Reports.DefaultRegion)); err != nil {
			return err
		}
	}
}

// csvProblem words an encoding/csv error without its position, which the
// LineError gives.
func csvProblem(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// jsonLines reads a JSON document a line.
func (b *batcher) jsonLines(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for line := 1; ; line++ {
		text, err := readLine(br, &buf)
		if errors.Is(err, io.EOF) && len(text) == 0 {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return &LineError{File: b.name, Line: line, Err: err}
		}
		text = bytes.TrimSpace(text)
		if line == 1 {
			// A byte-order mark, as some exporters write one (a CSV's is
			// set aside too).
			text = bytes.TrimPrefix(text, []byte("\uFEFF"))
		}
		if len(text) == 0 {
			continue
		}
		if !json.Valid(text) {
			return &LineError{File: b.name, Line: line, Err: errors.New("not a JSON document")}
		}
		rs, err := b.im.Reports.Read(text, cleaner{})
		if err != nil {
			return &LineError{File: b.name, Line: line, Err: err}
		}
		if err := b.add(line, stateReports(rs, b.im.Reports.DefaultRegion)...); err != nil {
			return err
		}
	}
}

// errLongLine refuses a line no report or body needs.
var errLongLine = fmt.Errorf("a line longer than %d bytes", mapping.MaxBody)

// readLine reads a line of br, without its end, into *buf; io.EOF with
// the last line when it has no end.
func readLine(br *bufio.Reader, buf *[]byte) ([]byte, error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		*buf = append(*buf, chunk...)
		if len(*buf) > mapping.MaxBody+2 {
			return nil, errLongLine
		}
		switch {
		case err == nil:
			return bytes.TrimRight(*buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return *buf, err
		}
	}
}
