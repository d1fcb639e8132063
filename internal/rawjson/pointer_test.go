package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// decode reads a document as the client does: numbers kept as written.
func decode(t testing.TB, doc string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The examples of RFC 6901, section 5, and what it forbids.
func TestPointerRFC6901(t *testing.T) {
	doc := decode(t, `{"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4, "i\\j": 5, "k\"l": 6, " ": 7, "m~n": 8,
		"id": 12345678901234567890, "nil": null}`)
	for _, tc := range []struct{ ptr, want string }{
		{"", ""}, {"/foo", `["bar","baz"]`}, {"/foo/0", `"bar"`}, {"/", "0"}, {"/a~1b", "1"}, {"/c%d", "2"}, {"/e^f", "3"},
		{"/g|h", "4"}, {"/i\\j", "5"}, {"/k\"l", "6"}, {"/ ", "7"}, {"/m~0n", "8"},
		{"/id", "12345678901234567890"}, // not rounded through float64
		{"/nil", "null"},                // null is an answer, not a miss
	} {
		p, err := ParsePointer(tc.ptr)
		if err != nil {
			t.Fatalf("ParsePointer(%q): %v", tc.ptr, err)
		}
		v, err := lookupDecoded(p, doc)
		if err != nil {
			t.Errorf("%q: %v", tc.ptr, err)
			continue
		}
		if tc.want == "" {
			continue
		}
		got, _ := json.Marshal(v)
		if string(got) != tc.want {
			t.Errorf("%q = %s, want %s", tc.ptr, got, tc.want)
		}
	}
	for _, ptr := range []string{"/foo/01", "/foo/+1", "/foo/-", "/foo/2", "/foo/x", "/missing", "/foo/0/deeper", "/nil/x"} {
		p, _ := ParsePointer(ptr)
		_, err := lookupDecoded(p, doc)
		var pe *PointerError
		if !errors.As(err, &pe) || !errors.Is(err, ErrMissed) || !strings.Contains(err.Error(), ptr) {
			t.Errorf("%q: err = %v, want a *PointerError naming it", ptr, err)
		}
	}
	for _, bad := range []string{"foo", "/a~", "/a~2", "~1"} {
		if _, err := ParsePointer(bad); err == nil {
			t.Errorf("ParsePointer(%q) accepted", bad)
		}
	}
}

func FuzzPointer(f *testing.F) {
	for _, s := range []string{"", "/", "/a/0", "/a~1b/~0", "/0/1/2", "/-"} {
		f.Add(s, `{"a":[{"b":1}],"0":[[1,2,3]]}`)
	}
	f.Fuzz(func(t *testing.T, ptr, doc string) {
		p, err := ParsePointer(ptr)
		if err != nil {
			return
		}
		if p.String() != ptr {
			t.Fatalf("String() = %q, want %q", p.String(), ptr)
		}
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		got, err := lookupDecoded(p, v) // never panics
		if !json.Valid([]byte(doc)) {
			return // Decode took a valid prefix; Lookup wants valid JSON
		}
		// Lookup over the text gives the same answer.
		raw, rerr := p.Lookup([]byte(doc))
		if (err == nil) != (rerr == nil) || err != nil && err.Error() != rerr.Error() {
			t.Fatalf("Lookup: %v, Lookup: %v", err, rerr)
		}
		// And so does Visit: its last call is Lookup's value.
		var visited []byte
		verr := p.Visit([]byte(doc), func(v []byte) int {
			end := SkipValue(v, 0)
			visited = v[:end]
			return end
		})
		if (verr == nil) != (rerr == nil) || verr != nil && verr.Error() != rerr.Error() || verr == nil && !bytes.Equal(visited, raw) {
			t.Fatalf("Visit: %q, %v; Lookup: %q, %v", visited, verr, raw, rerr)
		}
		if err != nil {
			return
		}
		dec = json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var rv any
		if err := dec.Decode(&rv); err != nil || !reflect.DeepEqual(rv, got) {
			t.Fatalf("Lookup %v, Lookup %s (%v)", got, raw, err)
		}
	})
}

// TestLookupRaw: the examples of RFC 6901 give over the text what they
// give over the decoded document, and a key written twice names its last
// value, as decoding keeps.
func TestLookupRaw(t *testing.T) {
	doc := ` {"foo": ["bar", "baz"], "": 0, "a/b": 1, "m~n": 8, "k\"l": 6, "esc\u0061ped": "x\"y", "id": 12345678901234567890,
		"nil": null, "twice": 1, "twice": {"x": [1, {"y": "deep"}]}, "s": "{[\"]}"} `
	for _, tc := range []struct{ ptr, want string }{
		{"/foo", `["bar", "baz"]`}, {"/foo/1", `"baz"`}, {"/", "0"}, {"/a~1b", "1"}, {"/m~0n", "8"}, {`/k"l`, "6"},
		{"/escaped", `"x\"y"`}, {"/id", "12345678901234567890"}, {"/nil", "null"}, {"/twice/x/1/y", `"deep"`}, {"/s", `"{[\"]}"`},
	} {
		got, err := MustPointer(tc.ptr).Lookup([]byte(doc))
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: %s, %v; want %s", tc.ptr, got, err, tc.want)
		}
	}
	for _, ptr := range []string{"/foo/01", "/foo/2", "/missing", "/nil/x", "/twice/0", "/s/0"} {
		if _, err := MustPointer(ptr).Lookup([]byte(doc)); !errors.Is(err, ErrMissed) {
			t.Errorf("%q: %v, want a miss", ptr, err)
		}
	}
	if got := Text([]byte(`"a\u00e9"`)); got != "aé" {
		t.Errorf("Text = %q", got)
	}
}

// lookupDecoded is what p names in v, a document decoded with UseNumber:
// the reference that Lookup over the text is held to. A
// JSON null is a value (nil, no error); a name that is absent is a
// *PointerError: the two are different answers. An array index is digits
// without a leading zero ("0", "12", never "01" nor "+1"); "-", the element
// past the end, names nothing.
func lookupDecoded(p Pointer, v any) (any, error) {
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
