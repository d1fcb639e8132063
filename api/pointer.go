package api

import (
	"bytes"
	"encoding/json"
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
// It is evaluated over values decoded with [json.Decoder.UseNumber]: a
// 20-digit id must not round through float64.
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

// ErrPointerMissed is wrapped by the *PointerError of a pointer that names
// nothing in a document.
var ErrPointerMissed = errors.New("JSON pointer names nothing")

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
func (e *PointerError) Unwrap() error { return ErrPointerMissed }

// Lookup is the value p names in v, a document decoded with UseNumber. A
// JSON null is a value (nil, no error); a name that is absent is a
// *PointerError: the two are different answers. An array index is digits
// without a leading zero ("0", "12", never "01" nor "+1"); "-", the element
// past the end, names nothing.
func (p Pointer) Lookup(v any) (any, error) {
	for _, tok := range p.tokens {
		miss := func(format string, args ...any) error {
			return &PointerError{Pointer: p.raw, Token: tok, Why: fmt.Sprintf(format, args...)}
		}
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[tok]
			if !ok {
				return nil, miss("no such key")
			}
			v = next
		case []any:
			i, ok := arrayIndex(tok)
			switch {
			case !ok:
				return nil, miss("not an array index")
			case i >= len(x):
				return nil, miss("index out of range (%d elements)", len(x))
			}
			v = x[i]
		default:
			return nil, miss("%s holds no keys", jsonKind(v))
		}
	}
	return v, nil
}

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

// jsonKind names a decoded JSON value's kind for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "true/false"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return "a value"
}

// LookupRaw is [Pointer.Lookup] over JSON text: the text of the value p
// names in doc, which must be valid JSON ([json.Valid]), found without
// decoding anything else. A long answer is read at the cost of one pass
// over its bytes and no allocation per element, where decoding it whole
// would build a map for each. It gives the same answers as Lookup over
// doc decoded (a key written twice names its last value, as decoding
// keeps), and its errors are the same.
func (p Pointer) LookupRaw(doc []byte) ([]byte, error) {
	v := trimSpace(doc)
	for _, tok := range p.tokens {
		miss := func(format string, args ...any) error {
			return &PointerError{Pointer: p.raw, Token: tok, Why: fmt.Sprintf(format, args...)}
		}
		switch {
		case len(v) > 0 && v[0] == '{':
			next, ok := rawMember(v, tok)
			if !ok {
				return nil, miss("no such key")
			}
			v = next
		case len(v) > 0 && v[0] == '[':
			i, ok := arrayIndex(tok)
			if !ok {
				return nil, miss("not an array index")
			}
			next, n := rawElement(v, i)
			if next == nil {
				return nil, miss("index out of range (%d elements)", n)
			}
			v = next
		default:
			return nil, miss("%s holds no keys", rawKind(v))
		}
	}
	return v, nil
}

// RawElements calls fn with the text of each element of the JSON array
// list (valid JSON), in order, until fn returns false.
func RawElements(list []byte, fn func(el []byte) bool) {
	list = trimSpace(list)
	if len(list) == 0 || list[0] != '[' {
		return
	}
	i := skipSpace(list, 1)
	for i < len(list) && list[i] != ']' {
		end := skipValue(list, i)
		if !fn(list[i:end]) {
			return
		}
		i = skipSpace(list, end)
		if i < len(list) && list[i] == ',' {
			i = skipSpace(list, i+1)
		}
	}
}

// RawText is the JSON string or number v as text (a number as written);
// "" for anything else.
func RawText(v []byte) string {
	switch {
	case len(v) == 0:
		return ""
	case v[0] == '"':
		return rawString(v)
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		return string(v)
	}
	return ""
}

// rawMember is the value of the last member named key of the object obj.
func rawMember(obj []byte, key string) ([]byte, bool) {
	var found []byte
	rawMembers(obj, func(k, v []byte) {
		if keyIs(k, key) {
			found = v
		}
	})
	return found, found != nil
}

// rawMembers calls fn with each member of the object obj, in order: its
// key (quoted) and its value.
func rawMembers(obj []byte, fn func(k, v []byte)) {
	i := skipSpace(obj, 1)
	for i < len(obj) && obj[i] == '"' {
		kend := skipValue(obj, i)
		k := obj[i:kend]
		i = skipSpace(obj, kend)
		i = skipSpace(obj, i+1) // the colon
		vend := skipValue(obj, i)
		fn(k, obj[i:vend])
		i = skipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
}

// rawElement is element i of the array arr, or nil and how many there are.
func rawElement(arr []byte, i int) ([]byte, int) {
	var el []byte
	n := 0
	RawElements(arr, func(v []byte) bool {
		if n == i {
			el = v
		}
		n++
		return el == nil
	})
	return el, n
}

// keyIs reports whether the JSON string k (quoted) is key.
func keyIs(k []byte, key string) bool {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k[1:len(k)-1]) == key
	}
	return rawString(k) == key
}

// rawString is the JSON string v (quoted) unquoted.
func rawString(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// skipValue is the index just past the value that starts at b[i] (valid
// JSON).
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && !endsLiteral(b[i]) {
		i++
	}
	return i
}

// skipString is the index just past the string that starts at b[i]. An
// answer's strings are short: a plain loop beats a call per quote. A
// backslash escapes the byte after it.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
	return len(b)
}

// endsLiteral reports whether c ends a number, true, false or null.
func endsLiteral(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == ']' || c == '}'
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

func trimSpace(b []byte) []byte { return bytes.TrimSpace(b) }

// rawKind names the kind of the JSON text v for messages, as jsonKind
// names a decoded value's.
func rawKind(v []byte) string {
	if len(v) == 0 {
		return "a value"
	}
	switch c := v[0]; {
	case c == 'n':
		return "null"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "true/false"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	}
	return "a number"
}
