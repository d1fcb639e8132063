package planfile

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/plan"
)

// jsonScan reads a JSON document a value at a time, in one pass whose cost
// is the size of the input: white space is skipped as it is met (a long run
// of it costs its length, no more), a value is captured whole as raw bytes
// (at most maxValueSize of them) for encoding/json to check and decode, and
// a batch as Save writes it is decoded without encoding/json, which would
// take most of the time of reading a plan of a million batches.
type jsonScan struct {
	r   *bufio.Reader
	in  *countReader // what r reads from
	buf []byte       // the value being captured, reused
}

// pos is how many bytes of the document were read.
func (s *jsonScan) pos() int64 {
	if s.in == nil {
		return 0
	}
	return s.in.n - int64(s.r.Buffered())
}

// bad is the error for the byte at, which is not what JSON holds there.
func (s *jsonScan) bad(at int64, format string, args ...any) error {
	return &syntaxError{at: at, msg: fmt.Sprintf(format, args...)}
}

// errValueSize says a value of a plan file was larger than maxValueSize.
var errValueSize = errors.New("a value larger than any plan smsform writes")

// next returns the next byte that is not white space, without reading it.
func (s *jsonScan) next() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\n' && c != '\t' && c != '\r' {
			return c, s.r.UnreadByte()
		}
	}
}

// expect reads the next byte that is not white space, which must be c.
func (s *jsonScan) expect(c byte) error {
	got, err := s.next()
	if err != nil {
		return eof(err)
	}
	if got != c {
		return s.bad(s.pos(), "found %q where %q should be", got, c)
	}
	s.r.ReadByte()
	return nil
}

// eof is an end of input where a value was due.
func eof(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// null reads a null if one is next, and says so.
func (s *jsonScan) null() (bool, error) {
	c, err := s.next()
	if err != nil {
		return false, eof(err)
	}
	if c != 'n' {
		return false, nil
	}
	at := s.pos()
	raw, err := s.value()
	if err != nil {
		return false, err
	}
	if string(raw) != "null" {
		return false, s.bad(at, "found %.40q where null should be", raw)
	}
	return true, nil
}

// object reads an object, calling fn with each key to read its value; a
// null is an empty object.
func (s *jsonScan) object(fn func(key string) error) error {
	if null, err := s.null(); null || err != nil {
		return err
	}
	if err := s.expect('{'); err != nil {
		return err
	}
	return s.elements('}', func(int) error {
		at := s.pos()
		raw, err := s.value()
		if err != nil {
			return err
		}
		var key string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &key) != nil {
			return s.bad(at, "found %.40q where a key (a name in quotes) should be", raw)
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		return fn(key)
	})
}

// list reads a list, calling fn for each element to read it; a null is an
// empty list.
func (s *jsonScan) list(fn func(i int) error) error {
	if null, err := s.null(); null || err != nil {
		return err
	}
	if err := s.expect('['); err != nil {
		return err
	}
	return s.elements(']', fn)
}

// elements reads comma-separated elements up to end, after the opening.
func (s *jsonScan) elements(end byte, fn func(i int) error) error {
	for i := 0; ; i++ {
		c, err := s.next()
		if err != nil {
			return eof(err)
		}
		if c == end && i == 0 {
			s.r.ReadByte()
			return nil
		}
		if err := fn(i); err != nil {
			return err
		}
		c, err = s.next()
		if err != nil {
			return eof(err)
		}
		s.r.ReadByte()
		switch c {
		case ',':
		case end:
			return nil
		default:
			return s.bad(s.pos()-1, "found %q where ',' or %q should be", c, end)
		}
	}
}

// value captures the next value whole, as raw bytes valid until the next
// call: its syntax is checked by whoever decodes it.
func (s *jsonScan) value() ([]byte, error) {
	c, err := s.next()
	if err != nil {
		return nil, eof(err)
	}
	s.buf = s.buf[:0]
	depth := 0
	for {
		c, err = s.r.ReadByte()
		if err != nil {
			return nil, eof(err)
		}
		switch {
		case c == '"':
			s.buf = append(s.buf, c)
			if err := s.restOfString(); err != nil {
				return nil, err
			}
		case c == '{' || c == '[':
			depth++
			s.buf = append(s.buf, c)
		case c == '}' || c == ']':
			if depth == 0 { // the end of the list or object this value is in
				s.r.UnreadByte()
				return s.buf, nil
			}
			depth--
			s.buf = append(s.buf, c)
		case depth == 0 && (c == ',' || c == ':' || c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			s.r.UnreadByte()
			return s.buf, nil
		default:
			s.buf = append(s.buf, c)
		}
		if len(s.buf) > maxValueSize {
			return nil, errValueSize
		}
		if depth == 0 && (c == '"' || c == '}' || c == ']') {
			return s.buf, nil
		}
	}
}

// restOfString captures a string after its opening quote, to its closing
// one.
func (s *jsonScan) restOfString() error {
	for {
		chunk, err := s.r.ReadSlice('"')
		if err != nil && err != bufio.ErrBufferFull {
			return eof(err)
		}
		s.buf = append(s.buf, chunk...)
		if len(s.buf) > maxValueSize {
			return errValueSize
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		// The quote ends the string unless an odd number of backslashes
		// comes before it.
		n := 0
		for i := len(s.buf) - 2; i >= 0 && s.buf[i] == '\\'; i-- {
			n++
		}
		if n%2 == 0 {
			return nil
		}
	}
}

// end checks that nothing but white space follows the document, reading
// the stream to its end (within its bound) so that gzip checks its
// checksum.
func (s *jsonScan) end() error {
	c, err := s.next()
	switch {
	case err == io.EOF:
		return nil
	case err != nil:
		return err
	}
	return s.bad(s.pos(), "data after the plan (%q)", c)
}

// decodeBatch decodes a batch as Save writes it, field by field, and
// anything else (other order, escapes, unknown fields…) with encoding/json,
// so that what it accepts and what it makes of it are encoding/json's.
func decodeBatch(raw []byte) (plan.Batch, error) {
	if b, ok := fastBatch(raw); ok {
		return b, nil
	}
	var b plan.Batch
	err := json.Unmarshal(raw, &b)
	return b, err
}

// fastBatch decodes raw if it is exactly in the form Save writes; ok is
// false for anything else. Every string of the batch is a part of one copy
// of raw: one allocation, not one a field and recipient.
func fastBatch(raw []byte) (b plan.Batch, ok bool) {
	p := batchParser{raw: string(raw)}
	if !p.lit(`{"id":`) {
		return b, false
	}
	b.ID, ok = p.str()
	ok = ok && p.lit(`,"body":`)
	if ok {
		b.Body, ok = p.str()
	}
	ok = ok && p.lit(`,"encoding":`)
	var enc string
	if ok {
		enc, ok = p.str()
		b.Encoding = sms.Encoding(enc)
	}
	ok = ok && p.lit(`,"segments_per_message":`)
	if ok {
		b.Segments, ok = p.int()
	}
	ok = ok && p.lit(`,"recipients":`)
	if ok {
		b.Recipients, ok = p.strs()
	}
	if ok && p.lit(`,"zones":`) {
		b.Zones, ok = p.strs()
	}
	return b, ok && p.lit("}") && len(p.raw) == 0
}

// batchParser eats a batch's raw text from the front.
type batchParser struct{ raw string }

func (p *batchParser) lit(s string) bool {
	if !strings.HasPrefix(p.raw, s) {
		return false
	}
	p.raw = p.raw[len(s):]
	return true
}

// str reads a string without escapes or control characters, in valid
// UTF-8: what encoding/json would decode to the same bytes.
func (p *batchParser) str() (string, bool) {
	s, rest, ok := rawjson.PlainString(p.raw)
	if ok {
		p.raw = rest
	}
	return s, ok
}

// strs reads a non-empty list of strings.
func (p *batchParser) strs() ([]string, bool) {
	end := strings.IndexByte(p.raw, ']')
	if end < 0 || !p.lit("[") {
		return nil, false
	}
	out := make([]string, 0, 1+strings.Count(p.raw[:end-1], ","))
	for {
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if p.lit("]") {
			return out, true
		}
		if !p.lit(",") {
			return nil, false
		}
	}
}

// int reads a small non-negative integer written as encoding/json writes
// one.
func (p *batchParser) int() (int, bool) {
	n := 0
	for n < len(p.raw) && n < 9 && p.raw[n] >= '0' && p.raw[n] <= '9' {
		n++
	}
	if n == 0 || (n > 1 && p.raw[0] == '0') {
		return 0, false
	}
	v, err := strconv.Atoi(p.raw[:n])
	if err != nil {
		return 0, false
	}
	p.raw = p.raw[n:]
	return v, true
}
