package rawjson

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Pointer is a JSON pointer (RFC 6901), parsed once when the configuration
// that holds it is loaded, so that a mistake is an error of that file and
// never a surprise in the middle of a send. The zero Pointer, like "",
// names the whole document.
//
// It is evaluated over JSON text ([Pointer.Lookup]): a 20-digit id is
// read as written, never rounded through float64.
type Pointer struct {
	raw    string
	tokens []string
}

// ParsePointer reads p: "" or "/" followed by tokens separated by "/", in
// which "~" appears only as "~0" (a "~") or "~1" (a "/").
func ParsePointer(p string) (Pointer, error) {
	if p == "" {
		return Pointer{}, nil
	}
	if !strings.HasPrefix(p, "/") {
		return Pointer{}, fmt.Errorf("JSON pointer %q does not start with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, tok := range parts {
		for j := 0; j < len(tok); j++ {
			if tok[j] == '~' && (j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1')) {
				return Pointer{}, fmt.Errorf("JSON pointer %q: a ~ must be written ~0 (and a / inside a key ~1)", p)
			}
		}
		// ~1 first: "~01" is "~1" as text, a key holding "~1".
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
	}
	return Pointer{raw: p, tokens: parts}, nil
}

// MustPointer is ParsePointer for constants; it panics on a bad pointer.
func MustPointer(p string) Pointer {
	ptr, err := ParsePointer(p)
	if err != nil {
		panic(err)
	}
	return ptr
}

// String is the pointer as written.
func (p Pointer) String() string { return p.raw }

// MarshalText writes the pointer as written.
func (p Pointer) MarshalText() ([]byte, error) { return []byte(p.raw), nil }

// UnmarshalText parses a pointer, as ParsePointer does.
func (p *Pointer) UnmarshalText(b []byte) error {
	q, err := ParsePointer(string(b))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// ErrMissed is wrapped by the *PointerError of a pointer that names
// nothing in a document.
var ErrMissed = errors.New("JSON pointer names nothing")

// PointerError says where a pointer missed: the pointer, the token that
// found nothing, and why.
type PointerError struct {
	Pointer string
	Token   string
	Why     string
}

func (e *PointerError) Error() string {
	return fmt.Sprintf("JSON pointer %s: at %q: %s", e.Pointer, e.Token, e.Why)
}
func (e *PointerError) Unwrap() error { return ErrMissed }

// arrayIndex reads an RFC 6901 array index.
func arrayIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 9 || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil
}

// Lookup is the text of the value p names in doc, which must be valid
// JSON ([json.Valid]), found without decoding anything else. A JSON null is
// a value ("null", no error); a name that is absent is a *PointerError:
// the two are different answers. An array index is digits without a
// leading zero ("0", "12", never "01" nor "+1"); "-", the element past the
// end, names nothing. A long answer is read at the cost of one pass
// over its bytes and no allocation per element, where decoding it whole
// would build a map for each. It gives the same answers as Lookup over
// doc decoded (a key written twice names its last value, as decoding
// keeps), and its errors are the same.
func (p Pointer) Lookup(doc []byte) ([]byte, error) {
	v := trimSpace(doc)
	for _, tok := range p.tokens {
		miss := func(format string, args ...any) error {
			return &PointerError{Pointer: p.raw, Token: tok, Why: fmt.Sprintf(format, args...)}
		}
		switch {
		case len(v) > 0 && v[0] == '{':
			next, ok := member(v, tok)
			if !ok {
				return nil, miss("no such key")
			}
			v = next
		case len(v) > 0 && v[0] == '[':
			i, ok := arrayIndex(tok)
			if !ok {
				return nil, miss("not an array index")
			}
			next, n := Element(v, i)
			if next == nil {
				return nil, miss("index out of range (%d elements)", n)
			}
			v = next
		default:
			return nil, miss("%s holds no keys", Kind(v))
		}
	}
	return v, nil
}

// Visit is Lookup for a value that its reader walks anyway (a long list of
// recipients): rather than scanning past the value to find its end and
// then handing it over to be walked a second time, Visit calls read with
// doc from the value's first byte, and read returns the index just past
// the value it read. A key written twice names its last value, as for
// Lookup: read may be called for an earlier one too, and when Visit
// returns nil the last call is the value Lookup returns. Its errors are
// Lookup's.
func (p Pointer) Visit(doc []byte, read func(v []byte) int) error {
	_, err := p.visit(doc[SkipSpace(doc, 0):], 0, read)
	return err
}

// visit looks up the tokens from k on in the value at v[0] (v runs to the
// end of the document) and returns the index just past that value, with
// the error of its last occurrence of the token, if any.
func (p Pointer) visit(v []byte, k int, read func(v []byte) int) (int, error) {
	if k == len(p.tokens) {
		return read(v), nil
	}
	tok := p.tokens[k]
	miss := func(format string, args ...any) error {
		return &PointerError{Pointer: p.raw, Token: tok, Why: fmt.Sprintf(format, args...)}
	}
	var err error
	// next visits the value at v[i] when it is the one tok names (keeping
	// the error of its lookup: the last one named counts), skips it
	// otherwise, and returns the index of what follows it and its comma.
	next := func(i int, named bool) int {
		end := 0
		if named {
			var n int
			n, err = p.visit(v[i:], k+1, read)
			end = i + n
		} else {
			end = SkipValue(v, i)
		}
		if i = SkipSpace(v, end); i < len(v) && v[i] == ',' {
			i = SkipSpace(v, i+1)
		}
		return i
	}
	switch v[0] {
	case '{':
		err = miss("no such key")
		i := SkipSpace(v, 1)
		for i < len(v) && v[i] == '"' {
			kend := SkipValue(v, i)
			key := v[i:kend]
			i = next(SkipSpace(v, SkipSpace(v, kend)+1), KeyIs(key, tok)) // past the colon
		}
		return i + 1, err // past the }
	case '[':
		want, ok := arrayIndex(tok)
		if !ok {
			return SkipValue(v, 0), miss("not an array index")
		}
		n, i := 0, SkipSpace(v, 1)
		for ; i < len(v) && v[i] != ']'; n++ {
			i = next(i, n == want)
		}
		if want >= n {
			err = miss("index out of range (%d elements)", n)
		}
		return i + 1, err // past the ]
	}
	return SkipValue(v, 0), miss("%s holds no keys", Kind(v))
}
