// Package planfile reads and writes saved plans: what `smsform plan --out`
// writes, reviewed, and `smsform apply PLANFILE` sends exactly. A saved plan
// is gzip-compressed JSON; it is written and read a batch at a time, so that
// ten million recipients are never whole in memory, and checked whole before
// anything is sent.
package planfile

import (
	"github.com/smsform/smsform/plan"

	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/smsform/smsform/internal/atomicfile"
	"github.com/smsform/smsform/internal/window"
)

// Saved is a plan written to a file by `plan --out`, to be applied exactly as
// it was reviewed. It holds the recipients' numbers (personal data) but never
// a token or secret.
type Saved struct {
	FormatVersion  string     `json:"format_version"`
	SmsformVersion string     `json:"smsform_version"`
	ID             string     `json:"id"` // random: a saved plan is applied at most once
	CreatedAt      time.Time  `json:"created_at"`
	CampaignPath   string     `json:"campaign_path"` // as given to plan
	StatePath      string     `json:"state_path"`
	Files          []FileSum  `json:"files"` // the campaign file and every list it reads
	Plan           *plan.Plan `json:"plan"`

	file *os.File // the file Open reads the batches from
}

// FileSum is a file's SHA-256 at plan time.
type FileSum struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// NewSaved wraps p for saving, with checksums of files.
func NewSaved(p *plan.Plan, version, campaignPath, statePath string, files []string) (*Saved, error) {
	sums, err := HashFiles(files)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	return &Saved{
		FormatVersion:  plan.FormatVersion,
		SmsformVersion: version,
		ID:             hex.EncodeToString(id),
		CreatedAt:      time.Now().UTC().Truncate(time.Second),
		CampaignPath:   campaignPath,
		StatePath:      statePath,
		Files:          sums,
		Plan:           p,
	}, nil
}

// HashFiles returns the SHA-256 of each file.
func HashFiles(paths []string) ([]FileSum, error) {
	sums := make([]FileSum, 0, len(paths))
	for _, p := range paths {
		sum, err := hashFile(p)
		if err != nil {
			return nil, err
		}
		sums = append(sums, FileSum{Path: p, SHA256: sum})
	}
	return sums, nil
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ErrCampaignChanged is wrapped by the error CheckFiles returns.
var ErrCampaignChanged = errors.New("campaign changed after plan")

// CheckFiles reports the first file that changed (or vanished) since the
// plan was made.
func (s *Saved) CheckFiles() error {
	for _, f := range s.Files {
		sum, err := hashFile(f.Path)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s is gone", ErrCampaignChanged, f.Path)
		}
		if err != nil {
			return err
		}
		if sum != f.SHA256 {
			return fmt.Errorf("%w: %s", ErrCampaignChanged, f.Path)
		}
	}
	return nil
}

// Save writes s to path crash-safely, readable by its owner only.
func Save(path string, s *Saved) error {
	err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		zw := gzip.NewWriter(w)
		if err := encodeSaved(zw, s); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	return nil
}

// encodeSaved writes what json.NewEncoder(w).Encode(s) writes, byte for
// byte, but encodes the plan's batches (a million for a personalised
// campaign) one at a time into the frame's empty list, so that the
// document is never whole in memory.
func encodeSaved(w io.Writer, s *Saved) error {
	if s.Plan == nil || s.Plan.NumBatches() == 0 {
		return json.NewEncoder(w).Encode(s)
	}
	p := *s.Plan
	p.Batches = []plan.Batch{}
	frame := *s
	frame.Plan = &p
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(&frame); err != nil {
		return err
	}
	// Only the plan's list can read so (the summary's "batches" is a
	// count, and a quote inside a string is always escaped). The frame is
	// written up to its "[", then the batches, then the rest from its "]".
	i := bytes.Index(buf.Bytes(), []byte(`"batches":[]`))
	if i < 0 {
		return errors.New("plan file: batches missing from the frame")
	}
	split := i + len(`"batches":[`)
	if _, err := w.Write(buf.Bytes()[:split]); err != nil {
		return err
	}
	rest := bytes.Clone(buf.Bytes()[split:]) // buf is reused for the batches
	err := s.Plan.EachBatch(func(i int, b plan.Batch) error {
		buf.Reset()
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(&b); err != nil {
			return err
		}
		// Encode ends each value with a newline; in the list a comma
		// separates them.
		_, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		return err
	})
	if err != nil {
		return err
	}
	_, err = w.Write(rest)
	return err
}

// ErrNotPlan is wrapped by the errors Open and Load return for a file that
// is not a readable plan.
var ErrNotPlan = errors.New("not a readable smsform plan file")

// maxValueSize bounds one value of a plan file (a batch, the list of invalid
// numbers…) as it is read, so that a hostile file cannot exhaust memory;
// what smsform writes is far under it.
const maxValueSize = 256 << 20

// Open reads the plan file at path for applying. It reads the whole file
// once before returning, and refuses it unless it is complete (gzip's
// checksum), well formed, every batch's id matches its content and the
// summary counts what the batches hold; only the frame is kept. The batches
// are read again from the open file each time the plan's Stream is walked,
// each one checked against its id again, so that ten million recipients are
// never in memory at once. Close releases the file.
func Open(path string) (*Saved, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open plan: %w", err)
	}
	s, err := openSaved(path, f, nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.file = f
	return s, nil
}

// Load reads a plan file whole, its batches in Plan.Batches (for show).
func Load(path string) (*Saved, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open plan: %w", err)
	}
	defer f.Close()
	var batches []plan.Batch
	s, err := openSaved(path, f, func(_ int, b plan.Batch) error {
		batches = append(batches, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.Plan.Batches, s.Plan.Stream = batches, nil
	return s, nil
}

// Close releases the file of a plan read by Open.
func (s *Saved) Close() error {
	if s.file == nil {
		return nil
	}
	return s.file.Close()
}

// openSaved reads and checks the whole file, handing each batch to batch
// (which may be nil), and returns the frame with a Stream over r.
func openSaved(path string, r io.ReadSeeker, batch func(int, plan.Batch) error) (*Saved, error) {
	bad := func(why string) error { return fmt.Errorf("%s: %w: %s", path, ErrNotPlan, why) }
	var n, recipients int
	s, err := readSaved(path, r, true, func(i int, b plan.Batch) error {
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
		return nil, bad(fmt.Sprintf("format version %q; this smsform reads %q", s.FormatVersion, plan.FormatVersion))
	case s.Plan == nil || s.ID == "":
		return nil, bad("it holds no plan")
	case s.Plan.Summary.Batches != n || s.Plan.Summary.ToSend != recipients:
		return nil, bad(fmt.Sprintf("its summary says %d batch(es) to %d recipient(s), its batches hold %d to %d",
			s.Plan.Summary.Batches, s.Plan.Summary.ToSend, n, recipients))
	}
	if _, err := window.Compile(s.Plan.Window); err != nil {
		return nil, bad("its send window is damaged (" + err.Error() + ")")
	}
	s.Plan.Stream = &fileStream{path: path, r: r}
	return s, nil
}

// fileStream walks the batches of a plan file from its start.
type fileStream struct {
	path string
	r    io.ReadSeeker
}

func (f *fileStream) Each(fn func(int, plan.Batch) error) error {
	_, err := readSaved(f.path, f.r, false, fn)
	return err
}

// readSaved decodes a plan file from its start, one value at a time: each
// batch goes to fn as it is read, checked against its id. With whole it
// reads to the end (gzip's checksum included) and returns the frame;
// otherwise it stops after the batches and returns nil.
func readSaved(path string, r io.ReadSeeker, whole bool, fn func(int, plan.Batch) error) (*Saved, error) {
	bad := func(why string) error { return fmt.Errorf("%s: %w: %s", path, ErrNotPlan, why) }
	damaged := func(err error) error {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, errValueSize) {
			return bad("it is truncated or corrupted (" + err.Error() + ")")
		}
		return bad("its content is damaged (" + err.Error() + ")")
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, bad("it was not written by smsform plan --out")
	}
	lim := &limitedValues{r: zr}
	d := &jsonStream{dec: json.NewDecoder(lim)}
	top := map[string]json.RawMessage{}
	fields := map[string]json.RawMessage{} // the plan's, but its batches
	hasPlan := false
	err = d.object(lim, func(key string) error {
		if key == "format_version" {
			// Checked as soon as read: a later format is not ours to parse.
			if err := d.value(lim, top, key); err != nil {
				return err
			}
			var v string
			if json.Unmarshal(top[key], &v) != nil || v != plan.FormatVersion {
				return bad(fmt.Sprintf("format version %s; this smsform reads %q", top[key], plan.FormatVersion))
			}
			return nil
		}
		if key != "plan" {
			return d.value(lim, top, key)
		}
		hasPlan = true
		return d.object(lim, func(key string) error {
			if key != "batches" {
				return d.value(lim, fields, key)
			}
			if err := d.list(lim, func(i int) error {
				var b plan.Batch
				if err := d.dec.Decode(&b); err != nil {
					return err
				}
				if err := checkBatch(b); err != nil {
					return bad(fmt.Sprintf("batch %d: %v", i+1, err))
				}
				if err := fn(i, b); err != nil {
					return &walkError{err}
				}
				return nil
			}); err != nil {
				return err
			}
			if !whole {
				return errBatchesDone
			}
			return nil
		})
	})
	if errors.Is(err, errBatchesDone) {
		return nil, nil
	}
	if we, ok := errors.AsType[*walkError](err); ok {
		return nil, we.err // the caller's, as it gave it: not the file's
	}
	if err == nil && !whole {
		return nil, nil // a plan without batches
	}
	if err == nil {
		err = d.end(zr)
	}
	if err != nil {
		// A damaged stream shows first as a batch or a value that makes
		// no sense; gzip's checksum at the end says what it really is.
		if _, derr := io.Copy(io.Discard, zr); derr != nil {
			return nil, damaged(derr)
		}
		if errors.Is(err, ErrNotPlan) {
			return nil, err
		}
		return nil, damaged(err)
	}
	var s Saved
	if err := unmarshalFields(top, &s); err != nil {
		return nil, damaged(err)
	}
	if hasPlan {
		s.Plan = &plan.Plan{}
		if err := unmarshalFields(fields, s.Plan); err != nil {
			return nil, damaged(err)
		}
	}
	return &s, nil
}

// errBatchesDone ends a walk of the batches early.
var errBatchesDone = errors.New("batches read")

// walkError is an error of the function a walk hands the batches to: it
// stops the walk and is returned as is, never taken for damage.
type walkError struct{ err error }

func (e *walkError) Error() string { return e.err.Error() }

// checkBatch refuses a batch that is not what plan wrote: without
// recipients, or whose id is not its content's, as when a file was edited
// by hand after its review.
func checkBatch(b plan.Batch) error {
	if len(b.Recipients) == 0 {
		return errors.New("no recipients")
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

// jsonStream reads a JSON document a value at a time.
type jsonStream struct{ dec *json.Decoder }

// object reads an object, calling fn for each key with the decoder before
// its value; a null is an empty object.
func (d *jsonStream) object(lim *limitedValues, fn func(key string) error) error {
	lim.reset()
	tok, err := d.dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("want an object, found %v", tok)
	}
	for d.dec.More() {
		lim.reset()
		tok, err := d.dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("want a key, found %v", tok)
		}
		if err := fn(key); err != nil {
			return err
		}
	}
	_, err = d.dec.Token() // the closing brace
	return err
}

// list reads a list, calling fn for each element with the decoder before
// it; a null is an empty list.
func (d *jsonStream) list(lim *limitedValues, fn func(i int) error) error {
	lim.reset()
	tok, err := d.dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("want a list, found %v", tok)
	}
	for i := 0; d.dec.More(); i++ {
		lim.reset()
		if err := fn(i); err != nil {
			return err
		}
	}
	_, err = d.dec.Token()
	return err
}

// value reads the next value whole into into[key].
func (d *jsonStream) value(lim *limitedValues, into map[string]json.RawMessage, key string) error {
	lim.reset()
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		return err
	}
	into[key] = raw
	return nil
}

// end checks that nothing but white space follows the document, reading
// the stream to its end so that gzip checks its checksum.
func (d *jsonStream) end(zr io.Reader) error {
	rest, err := io.ReadAll(io.LimitReader(io.MultiReader(d.dec.Buffered(), zr), 1<<20))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return errors.New("data after the plan")
	}
	return nil
}

// errValueSize says a value of a plan file was larger than maxValueSize.
var errValueSize = errors.New("a value larger than any plan smsform writes")

// limitedValues fails a read once more than maxValueSize bytes were read
// since the last reset: the decoder holds at most one value (and its read
// ahead) at a time, so this bounds its memory.
type limitedValues struct {
	r    io.Reader
	read int
}

func (l *limitedValues) reset() { l.read = 0 }

func (l *limitedValues) Read(p []byte) (int, error) {
	if l.read > maxValueSize {
		return 0, errValueSize
	}
	n, err := l.r.Read(p)
	l.read += n
	return n, err
}
