package planfile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"

	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/plan"
)

// ErrNotPlan is wrapped by the errors Open and Load return for a file that
// is not a readable plan.
var ErrNotPlan = errors.New("not a readable smsform plan file")

// maxValueSize bounds one value of a plan file (a batch, the list of invalid
// numbers…) as it is read, so that a hostile file cannot exhaust memory;
// what smsform writes is far under it.
const maxValueSize = 256 << 20

// limits bound how much a plan file may decompress to: ratio times its
// compressed size, and never more than max. What smsform writes is a few
// times its compressed size (numbers and ids compress about 3 to 1, one body
// repeated in every batch more), so a file past the bound is not ours, and
// reading it on would only burn time: a gzip stream of 2 GB of spaces is 2 MB.
type limits struct {
	ratio, max int64
}

// defaultLimits are the bounds of every plan file read.
var defaultLimits = limits{ratio: 64, max: 8 << 30}

// bound is how many bytes a file of size compressed bytes may decompress to.
func (l limits) bound(size int64) int64 {
	if size > l.max/l.ratio {
		return l.max
	}
	return size * l.ratio
}

// Open reads the plan file at path, as show does. It reads the whole file
// once before returning, and refuses it unless it is complete (gzip's
// checksum), well formed, no larger decompressed than 64 times its size
// (8 GiB at most), every batch's id matches its content and the summary
// counts what the batches hold; only the frame is kept. The batches are read
// again from the open file each time the plan's Stream is walked, each one
// checked against its id again, so that ten million recipients are never in
// memory at once. ctx governs every read of the file, those of the walks
// included: once it is done, a read stops with its error. Close releases the
// file.
func Open(ctx context.Context, path string) (*Saved, error) {
	s, err := OpenHeader(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := s.ReadPlan(nil); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// OpenHeader opens the plan file at path and reads what it says of itself
// and of the campaign it was made from (format, id, paths, state location,
// files): not its plan, and without checking the rest of the file. Plan is
// nil until [Saved.ReadPlan] has read and checked the whole file: apply reads
// it once that way, comparing each batch with the campaign's as it goes.
// ctx governs every read of the file, as for [Open]. Close releases the file.
func OpenHeader(ctx context.Context, path string) (*Saved, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	src := &source{ctx: ctx, path: path, r: f, lim: defaultLimits}
	s, err := src.header()
	if err != nil {
		f.Close()
		return nil, err
	}
	s.resolve(path)
	s.file, s.src = f, src
	return s, nil
}

// ReadPlan reads and checks the whole plan file as [Open] does, handing each
// batch to fn (which may be nil) as it is read and checked, and sets Plan,
// whose batches are then a Stream over the file. An error of fn stops the
// reading and is returned as it is; Plan is then left as it was.
func (s *Saved) ReadPlan(fn func(int, plan.Batch) error) error {
	return s.readPlan(fn, true)
}

// ReadPlanAgainst is ReadPlan for a caller that compares every batch, its
// id included, with one it knows to be right (a batch plan.Compute made):
// each batch's id is not checked against its content here, since the
// comparison says more, and hashing a million bodies twice costs time.
func (s *Saved) ReadPlanAgainst(fn func(int, plan.Batch) error) error {
	return s.readPlan(fn, false)
}

func (s *Saved) readPlan(fn func(int, plan.Batch) error, checkIDs bool) error {
	if s.src == nil {
		return errors.New("read plan: it was not opened from a file")
	}
	s.src.trustIDs = !checkIDs
	defer func() { s.src.trustIDs = false }()
	read, err := s.src.checked(fn)
	if err != nil {
		return err
	}
	s.Plan = read.Plan
	return nil
}

// Load reads a plan file whole, its batches in Plan.Batches (for show's
// markdown comment), with the checks of [Open].
func Load(ctx context.Context, path string) (*Saved, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var batches []plan.Batch
	s, err := openSaved(&source{ctx: ctx, path: path, r: f, lim: defaultLimits}, func(_ int, b plan.Batch) error {
		batches = append(batches, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.Plan.Batches, s.Plan.Stream = batches, nil
	return s, nil
}

// openFile opens the plan file at path, refusing anything but a regular
// file (a folder, a device such as /dev/null, a named pipe, whose opening
// would wait for a writer): no plan is there.
func openFile(path string) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, (&source{path: path}).bad(fmt.Sprintf("it is a %s, not a plan file", kind(fi.Mode())))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open plan: %w", err)
	}
	return f, nil
}

// Close releases the file of a plan read by Open.
func (s *Saved) Close() error {
	if s.file == nil {
		return nil
	}
	return s.file.Close()
}

// source is a plan file being read: where it is, and how.
type source struct {
	ctx  context.Context
	path string
	r    io.ReadSeeker
	lim  limits
	max  int64                      // the bound of this file, set by open
	head map[string]json.RawMessage // the header as read first
	// trustIDs: the reading in progress leaves each batch's id to the
	// caller's comparison (ReadPlanAgainst).
	trustIDs bool
	raw      *rawFrame // what the last whole reading found, for the plan's id
}

// rawFrame is a plan file's fields as read, raw JSON: the top-level ones
// (the plan left out) and the plan's (its batches left out).
type rawFrame struct {
	top, fields map[string]json.RawMessage
}

// bad is the error for a file that is not a plan smsform wrote.
func (src *source) bad(why string) error {
	return fmt.Errorf("%s: %w: %s", src.path, ErrNotPlan, why)
}

// openSaved reads and checks the whole file, handing each batch to batch
// (which may be nil), and returns what it holds, its paths resolved from
// the file's folder and its batches a Stream over the file.
func openSaved(src *source, batch func(int, plan.Batch) error) (*Saved, error) {
	if _, err := src.header(); err != nil {
		return nil, err
	}
	s, err := src.checked(batch)
	if err != nil {
		return nil, err
	}
	s.resolve(src.path)
	return s, nil
}

// header reads the file's header: its fields before the plan. One that
// lacks what every plan file has first is read whole, whose checks say
// what is wrong with it.
func (src *source) header() (*Saved, error) {
	s, err := src.read(readHeader, nil)
	if err == nil && (s.ID == "" || s.CampaignPath == "") {
		s, err = src.checked(nil)
	}
	return s, err
}

// checked reads and checks the whole file, handing each batch to batch
// (which may be nil), and returns what it holds, its plan's batches a
// Stream over the file (paths as stored). The header must have been read:
// the whole file must say what its header said.
func (src *source) checked(batch func(int, plan.Batch) error) (*Saved, error) {
	var n, recipients int
	s, err := src.read(readWhole, func(i int, b plan.Batch) error {
		n++
		recipients += len(b.Recipients)
		if batch != nil {
			return batch(i, b)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case s.FormatVersion != plan.FormatVersion:
		return nil, src.bad(fmt.Sprintf("format version %q; this smsform reads %q", s.FormatVersion, plan.FormatVersion))
	case s.Plan == nil || s.ID == "":
		return nil, src.bad("it holds no plan")
	case s.Plan.Summary.Batches != n || s.Plan.Summary.ToSend != recipients:
		return nil, src.bad(fmt.Sprintf("its summary says %d batch(es) to %d recipient(s), its batches hold %d to %d",
			s.Plan.Summary.Batches, s.Plan.Summary.ToSend, n, recipients))
	}
	if _, err := window.Compile(s.Plan.Window); err != nil {
		return nil, src.bad("its send window is damaged (" + err.Error() + ")")
	}
	if err := src.checkID(s.ID); err != nil {
		return nil, err
	}
	s.Plan.Stream = src
	return s, nil
}

// Each walks the batches of the plan file from its start.
func (src *source) Each(fn func(int, plan.Batch) error) error {
	_, err := src.read(readBatches, fn)
	return err
}

// readMode says how far a reading of a plan file goes.
type readMode int

const (
	readHeader  readMode = iota // the fields before the plan
	readBatches                 // up to the end of the batches
	readWhole                   // to the end, gzip's checksum included
)

// read decodes the plan file from its start, one value at a time: each
// batch goes to fn as it is read, checked against its id. It returns what
// it read, nil for readBatches.
func (src *source) read(mode readMode, fn func(int, plan.Batch) error) (*Saved, error) {
	in, err := src.open()
	if err != nil {
		return nil, err
	}
	defer in.Close()
	counted := &countReader{r: in}
	d := &decoder{src: src, in: in, mode: mode, fn: fn, js: &jsonScan{r: bufio.NewReaderSize(counted, 64<<10), in: counted},
		top: map[string]json.RawMessage{}, fields: map[string]json.RawMessage{}}
	err = d.js.object(d.topKey)
	switch {
	case errors.Is(err, errStop), err == nil && mode != readWhole:
		if mode == readHeader {
			src.head = d.top
			return d.frame()
		}
		return nil, nil
	case err == nil:
		err = d.js.end()
	}
	if we, ok := errors.AsType[*walkError](err); ok {
		return nil, we.err // the caller's, as it gave it: not the file's
	}
	if err != nil {
		return nil, d.failed(err)
	}
	for k, v := range src.head {
		if !bytes.Equal(d.top[k], v) {
			return nil, src.bad(fmt.Sprintf("its %s is given twice", k))
		}
	}
	src.raw = &rawFrame{top: d.top, fields: d.fields}
	return d.frame()
}

// open starts reading the file from its start: its decompressed content,
// bounded (see limits) and stopped by the context.
func (src *source) open() (*aheadReader, error) {
	size, err := src.r.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = src.r.Seek(0, io.SeekStart)
	}
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", src.path, err)
	}
	if err := src.ctx.Err(); err != nil {
		return nil, fmt.Errorf("read plan %s: %w", src.path, err)
	}
	zr, err := gzip.NewReader(bufio.NewReader(ctxReader{src.ctx, src.r}))
	if err != nil {
		if cerr := src.ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("read plan %s: %w", src.path, cerr)
		}
		return nil, src.bad("it was not written by smsform plan --out")
	}
	src.max = src.lim.bound(size)
	return readAhead(ctxReader{src.ctx, &boundedReader{r: zr, left: src.max}}), nil
}

// decoder is one reading of a plan file.
type decoder struct {
	src     *source
	in      io.Reader // the decompressed content
	mode    readMode
	fn      func(int, plan.Batch) error
	js      *jsonScan
	top     map[string]json.RawMessage
	fields  map[string]json.RawMessage // the plan's, but its batches
	hasPlan bool
}

// topKey reads the value of one key of the document.
func (d *decoder) topKey(key string) error {
	switch key {
	case "format_version":
		// Checked as soon as read: a later format is not ours to parse.
		if err := d.value(d.top, key); err != nil {
			return err
		}
		var v string
		if json.Unmarshal(d.top[key], &v) != nil || v != plan.FormatVersion {
			return d.src.bad(fmt.Sprintf("format version %s; this smsform reads %q", d.top[key], plan.FormatVersion))
		}
		return nil
	case "plan":
		if d.mode == readHeader {
			return errStop
		}
		d.hasPlan = true
		return d.js.object(d.planKey)
	}
	return d.value(d.top, key)
}

// planKey reads the value of one key of the plan.
func (d *decoder) planKey(key string) error {
	if key != "batches" {
		return d.value(d.fields, key)
	}
	if err := d.js.list(d.batch); err != nil {
		return err
	}
	if d.mode != readWhole {
		return errStop
	}
	return nil
}

// batch reads batch i, checks it and hands it on.
func (d *decoder) batch(i int) error {
	raw, err := d.js.value()
	if err != nil {
		return err
	}
	b, err := decodeBatch(raw)
	if err != nil {
		return d.src.bad(fmt.Sprintf("batch %d: %s", i+1, batchProblem(err)))
	}
	if err := checkBatch(b, !d.src.trustIDs); err != nil {
		return d.src.bad(fmt.Sprintf("batch %d: %v", i+1, err))
	}
	if err := d.fn(i, b); err != nil {
		return &walkError{err}
	}
	return nil
}

// failed words an error met while reading. A damaged stream shows first
// as a batch or a value that makes no sense; gzip's checksum at the end
// says what it really is, so the rest is read (within the bound) first.
func (d *decoder) failed(err error) error {
	if cerr := d.src.ctx.Err(); cerr != nil {
		return fmt.Errorf("read plan %s: %w", d.src.path, cerr)
	}
	if _, derr := io.Copy(io.Discard, d.in); derr != nil {
		err = derr
	} else if errors.Is(err, ErrNotPlan) {
		return err
	}
	if cerr := d.src.ctx.Err(); cerr != nil {
		return fmt.Errorf("read plan %s: %w", d.src.path, cerr)
	}
	switch {
	case errors.Is(err, errTooLarge):
		return d.src.bad(fmt.Sprintf("it decompresses to more than %d bytes (the bound is %d times its size, %d bytes at most): no plan smsform writes is so large",
			d.src.max, d.src.lim.ratio, d.src.lim.max))
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, errValueSize):
		return d.src.bad("it is truncated or corrupted (" + err.Error() + ")")
	}
	if se, ok := errors.AsType[*syntaxError](err); ok {
		return d.src.bad("its content is damaged: " + se.words())
	}
	return d.src.bad("its content is damaged (" + err.Error() + ")")
}

// frame is the document read, but its batches.
func (d *decoder) frame() (*Saved, error) {
	var s Saved
	if err := decodeFields("", d.top, &s); err != nil {
		return nil, d.src.bad(err.Error())
	}
	if d.hasPlan {
		s.Plan = &plan.Plan{}
		if err := decodeFields("plan.", d.fields, s.Plan); err != nil {
			return nil, d.src.bad(err.Error())
		}
	}
	return &s, nil
}

// errStop ends a reading where its mode says.
var errStop = errors.New("read as far as asked")

// walkError is an error of the function a walk hands the batches to: it
// stops the walk and is returned as is, never taken for damage.
type walkError struct{ err error }

func (e *walkError) Error() string { return e.err.Error() }

// checkBatch refuses a batch that is not what plan wrote: without
// recipients, or whose id is not its content's, as when a file was edited
// by hand after its review.
func checkBatch(b plan.Batch, id bool) error {
	if len(b.Recipients) == 0 {
		return errors.New("no recipients")
	}
	if !id {
		return nil
	}
	if id := plan.BatchID(b.Body, b.Recipients); id != b.ID {
		return fmt.Errorf("its id %q is not its content's: the file was changed after plan --out", b.ID)
	}
	return nil
}

func unmarshalFields(fields map[string]json.RawMessage, v any) error {
	obj, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	return json.Unmarshal(obj, v)
}

// value reads the next value whole into into[key], a copy.
func (d *decoder) value(into map[string]json.RawMessage, key string) error {
	raw, err := d.js.value()
	if err != nil {
		return err
	}
	into[key] = bytes.Clone(raw)
	return nil
}

// errTooLarge says a plan file decompressed past its bound (see limits).
var errTooLarge = errors.New("decompressed past the bound")

// boundedReader fails a read once more than left bytes were read.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge
	}
	// One byte past the bound is read, so that a file of exactly the
	// bound is not refused.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

// ctxReader stops reading once its context is done: a long read of a plan
// file (show, apply, the checks of its files) ends at an interrupt.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
