package plan

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
)

// bodySum is the first half of a body's SHA-256: what tells two bodies
// apart, and what the state's body hash is compared with.
type bodySum [16]byte

func sumBody(body string) bodySum {
	full := sha256.Sum256([]byte(body))
	return bodySum(full[:16])
}

func (s bodySum) hash() uint64 { return binary.LittleEndian.Uint64(s[:8]) }

// bodyMeta is what the plan keeps of a body besides its text.
type bodyMeta struct {
	chars uint16 // characters
	segs  uint16 // segments
	gsm   uint16 // segments were it GSM-7 (see sms.Analysis.SegmentsIfGSM7)
	flags uint8
}

// bodyStore holds the distinct bodies of a plan, by id in the order each
// first appeared: their hash and meta in memory, their text in a spool.
// Ten million personalised bodies are ten million strings that the plan
// needs only when it writes batches, in about the order they were made.
type bodyStore struct {
	sums  column[bodySum] // only while the plan is computed
	meta  column[bodyMeta]
	index index
	spool spool
}

func (s *bodyStore) len() int { return s.meta.len() }

// add returns the id of body, whose sum is sum, storing it if it is new.
func (s *bodyStore) add(body string, sum bodySum, m bodyMeta) (int32, error) {
	h := sum.hash()
	if id, ok := s.index.find(h, func(id int32) bool { return s.sums.at(int(id)) == sum }); ok {
		return id, nil
	}
	id := int32(s.meta.len())
	if err := s.index.add(h, id, func(id int32) uint64 { return s.sums.at(int(id)).hash() }); err != nil {
		return 0, err
	}
	if err := s.spool.write(body); err != nil {
		return 0, err
	}
	s.sums.append(sum)
	s.meta.append(m)
	return id, nil
}

// done ends adding: the sums and index are dropped, the spool flushed.
func (s *bodyStore) done() error {
	s.sums, s.index = column[bodySum]{}, index{}
	return s.spool.flush()
}

// spillAfter is how many bytes of bodies a spool keeps in memory before it
// moves them to a temporary file (a variable, for tests).
var spillAfter = 32 << 20

// markEvery is how many bodies apart the spool notes where a body starts.
const markEvery = 256

// spool keeps texts in the order written, each after its length as a
// uvarint: in memory, then past spillAfter bytes in a temporary file that
// is removed as soon as it is made, so that nothing is left behind.
type spool struct {
	mem   pieces
	file  *os.File
	w     *bufio.Writer
	size  int64
	marks []int64 // offset of text 0, markEvery, 2·markEvery, …
	n     int
}

func (s *spool) write(text string) error {
	if s.n%markEvery == 0 {
		s.marks = append(s.marks, s.size)
	}
	s.n++
	var head [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(head[:], uint64(len(text)))
	s.size += int64(h + len(text))
	if s.file == nil {
		s.mem.write(head[:h])
		s.mem.writeString(text)
		if s.size <= int64(spillAfter) {
			return nil
		}
		return s.spill()
	}
	s.w.Write(head[:h]) // bufio keeps the first error for the next write
	if _, err := s.w.WriteString(text); err != nil {
		return &SpillError{Err: err}
	}
	return nil
}

// SpillError is a plan that could not keep its rendered bodies in a
// temporary file.
type SpillError struct{ Err error }

func (e *SpillError) Error() string {
	return "keeping rendered bodies in a temporary file: " + e.Err.Error()
}

func (e *SpillError) Unwrap() error { return e.Err }

// Hint says what to do about it.
func (e *SpillError) Hint() string {
	return "a plan keeps the bodies of a personalised campaign in a temporary file once they pass 32 MB, about as large as the bodies: set TMPDIR to a writable folder with room for them"
}

// spill moves the texts to a temporary file, which later ones join.
func (s *spool) spill() error {
	f, err := os.CreateTemp("", "smsform-bodies-*")
	if err != nil {
		return &SpillError{Err: err}
	}
	// Removed now, the file lives until it is closed, by the cleanup below
	// or at exit. Where an open file cannot be removed, the cleanup does.
	removed := os.Remove(f.Name()) == nil
	runtime.AddCleanup(s, func(f *os.File) {
		f.Close()
		if !removed {
			os.Remove(f.Name())
		}
	}, f)
	s.file, s.w = f, bufio.NewWriterSize(f, 1<<20)
	for _, p := range s.mem {
		if _, err := s.w.Write(p); err != nil {
			return &SpillError{Err: err}
		}
	}
	s.mem = nil
	return nil
}

func (s *spool) flush() error {
	if s.w == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return &SpillError{Err: err}
	}
	s.w = nil
	return nil
}

// pieceSize is the size of the pieces a spool keeps its texts in before
// it spills. One slice grown by append was copied whole at each growth,
// into fresh memory each time: a quarter of the CPU of a plan of 1,000,000
// personalised bodies, most of it the kernel handing out pages.
var pieceSize = 1 << 20

// pieces are bytes in slices of pieceSize, each full but the last.
type pieces [][]byte

func (ps *pieces) write(b []byte) { appendPieces(ps, b) }

func (ps *pieces) writeString(b string) { appendPieces(ps, b) }

func appendPieces[T []byte | string](ps *pieces, b T) {
	for len(b) > 0 {
		if n := len(*ps); n == 0 || len((*ps)[n-1]) == pieceSize {
			*ps = append(*ps, make([]byte, 0, pieceSize))
		}
		last := &(*ps)[len(*ps)-1]
		k := min(len(b), pieceSize-len(*last))
		*last = append(*last, b[:k]...)
		b = b[k:]
	}
}

// ReadAt reads from the bytes at off, as a file would.
func (ps pieces) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		i, at := int(off/int64(pieceSize)), int(off%int64(pieceSize))
		if i >= len(ps) || at >= len(ps[i]) {
			return n, io.EOF
		}
		k := copy(b[n:], ps[i][at:])
		n += k
		off += int64(k)
	}
	return n, nil
}

// spoolReader reads a spool's texts by number, fastest in order.
type spoolReader struct {
	s    *spool
	r    *bufio.Reader
	next int // the text r reads next
	last int
	text string
	buf  []byte
}

func (s *spool) reader() *spoolReader { return &spoolReader{s: s, last: -1} }

// at returns text i.
func (r *spoolReader) at(i int) (string, error) {
	if i == r.last {
		return r.text, nil
	}
	if r.r == nil || i < r.next || i-r.next > markEvery {
		m := i / markEvery
		var src io.ReaderAt = r.s.mem
		if r.s.file != nil {
			src = r.s.file
		}
		sec := io.NewSectionReader(src, r.s.marks[m], r.s.size-r.s.marks[m])
		if r.r == nil {
			r.r = bufio.NewReaderSize(sec, 64<<10)
		} else {
			r.r.Reset(sec)
		}
		r.next = m * markEvery
	}
	for ; r.next <= i; r.next++ {
		n, err := binary.ReadUvarint(r.r)
		if err != nil {
			return "", r.fail(err)
		}
		if r.next < i {
			if _, err := r.r.Discard(int(n)); err != nil {
				return "", r.fail(err)
			}
			continue
		}
		r.buf = slices.Grow(r.buf[:0], int(n))[:n]
		if _, err := io.ReadFull(r.r, r.buf); err != nil {
			return "", r.fail(err)
		}
		r.last, r.text = i, string(r.buf)
	}
	return r.text, nil
}

func (r *spoolReader) fail(err error) error {
	r.r = nil
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading rendered bodies back: %w", err)
}
