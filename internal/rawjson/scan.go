package rawjson

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// Elements calls fn with the text of each element of the JSON array
// list (valid JSON), in order, until fn returns false.
func Elements(list []byte, fn func(el []byte) bool) {
	list = trimSpace(list)
	if len(list) == 0 || list[0] != '[' {
		return
	}
	i := SkipSpace(list, 1)
	for i < len(list) && list[i] != ']' {
		end := SkipValue(list, i)
		if !fn(list[i:end]) {
			return
		}
		i = SkipSpace(list, end)
		if i < len(list) && list[i] == ',' {
			i = SkipSpace(list, i+1)
		}
	}
}

// Text is the JSON string or number v as text (a number as written);
// "" for anything else.
func Text(v []byte) string {
	switch {
	case len(v) == 0:
		return ""
	case v[0] == '"':
		return unquote(v)
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		return string(v)
	}
	return ""
}

// member is the value of the last member named key of the object obj.
func member(obj []byte, key string) ([]byte, bool) {
	var found []byte
	Members(obj, func(k, v []byte) {
		if KeyIs(k, key) {
			found = v
		}
	})
	return found, found != nil
}

// Members calls fn with each member of the object obj, in order: its
// key (quoted) and its value.
func Members(obj []byte, fn func(k, v []byte)) {
	i := SkipSpace(obj, 1)
	for i < len(obj) && obj[i] == '"' {
		kend := SkipValue(obj, i)
		k := obj[i:kend]
		i = SkipSpace(obj, kend)
		i = SkipSpace(obj, i+1) // the colon
		vend := SkipValue(obj, i)
		fn(k, obj[i:vend])
		i = SkipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = SkipSpace(obj, i+1)
		}
	}
}

// Element is element i of the array arr, or nil and how many there are.
func Element(arr []byte, i int) ([]byte, int) {
	var el []byte
	n := 0
	Elements(arr, func(v []byte) bool {
		if n == i {
			el = v
		}
		n++
		return el == nil
	})
	return el, n
}

// KeyIs reports whether the JSON string k (quoted) is key.
func KeyIs(k []byte, key string) bool {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k[1:len(k)-1]) == key
	}
	return unquote(k) == key
}

// unquote is the JSON string v (quoted) unquoted.
func unquote(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// SkipValue is the index just past the value that starts at b[i] (valid
// JSON).
func SkipValue(b []byte, i int) int {
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

func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

func trimSpace(b []byte) []byte { return bytes.TrimSpace(b) }

// Kind names the kind of the JSON text v for messages, as jsonKind
// names a decoded value's.
func Kind(v []byte) string {
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

// AppendStrings appends the JSON array of ss to b: by hand when every
// string is printable ASCII that needs no escaping (E.164 numbers, ids),
// through encoding/json otherwise.
func AppendStrings(b []byte, ss []string) []byte {
	for _, s := range ss {
		if !plainASCII(s) {
			j, _ := json.Marshal(ss) // []string always marshals
			return append(b, j...)
		}
	}
	n := 2 + 3*len(ss)
	for _, s := range ss {
		n += len(s)
	}
	b = append(slices.Grow(b, n), '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	return append(b, ']')
}

// plainASCII reports whether s is printable ASCII that needs no escaping
// in a JSON string.
func plainASCII(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// EachString calls fn with every string of the JSON array a, which must be
// an array of strings. An array as AppendStrings writes it (or SQLite's
// json_group_array, or PostgreSQL's text of one) is read without copying
// anything; any other is decoded by encoding/json first, so a malformed
// array is an error before fn is called at all.
func EachString(a string, fn func(s string)) error {
	if !plainArray(a) {
		var ss []string
		if err := json.Unmarshal([]byte(a), &ss); err != nil {
			return err
		}
		for _, s := range ss {
			fn(s)
		}
		return nil
	}
	rest := a[1 : len(a)-1]
	for len(rest) > 0 {
		end := 1 + strings.IndexByte(rest[1:], '"')
		fn(rest[1:end])
		rest = rest[min(end+2, len(rest)):]
	}
	return nil
}

// plainArray reports whether a is a JSON array of strings of printable
// ASCII with no escapes, and no space between them.
func plainArray(a string) bool {
	if len(a) < 2 || a[0] != '[' || a[len(a)-1] != ']' {
		return false
	}
	in := a[1 : len(a)-1]
	if len(in) == 0 {
		return true
	}
	for i := 0; ; i++ {
		if i >= len(in) || in[i] != '"' {
			return false
		}
		for i++; i < len(in) && in[i] != '"'; i++ {
			if c := in[i]; c < 0x20 || c > 0x7e || c == '\\' {
				return false
			}
		}
		if i++; i == len(in) {
			return true
		}
		if i > len(in) || in[i] != ',' {
			return false
		}
	}
}

// PlainString reads the JSON string at the start of s when it has no
// escapes and no control characters and is valid UTF-8: what
// encoding/json would decode to the same bytes, returned without copying.
// ok is false for anything else, which the caller decodes the slow way.
func PlainString(s string) (str, rest string, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", s, false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", s, false
	}
	str = s[1 : 1+end]
	for i := 0; i < len(str); i++ {
		if str[i] < ' ' || str[i] == '\\' {
			return "", s, false
		}
	}
	if !utf8.ValidString(str) {
		return "", s, false
	}
	return str, s[end+2:], true
}
