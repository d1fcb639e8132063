package rawjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzPick: over any valid JSON text, the Picker finds what Lookup of
// each pointer finds (nothing where it misses), and ends where the value
// ends.
func FuzzPick(f *testing.F) {
	for _, s := range [][4]string{
		{`{"to":"1","status":{"groupName":"PENDING","description":"ok"}}`, "/to", "/status/groupName", "/status/description"},
		{`{"a":1,"a":{"b":2},"a":{"c":3}}`, "/a/b", "/a/c", "/a"},
		{`{"a":{"b":2},"a":5}`, "/a/b", "/a", ""},
		{`[["x",{"0":"y"}],{"1":2}]`, "/0/1/0", "/1/1", "/0/0"},
		{`{"k\"l":1,"m~n":{"a/b":[1,2,{"c":null}]}}`, `/k"l`, "/m~0n/a~1b/2/c", "/m~0n/a~1b/01"},
		{`"+447700900123"`, "", "/x", "/0"},
		{` {"a" : [ 1 , { "b" : "x\\\"" } ] } `, "/a/1/b", "/a/0", "/a/-"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, doc, p0, p1, p2 string) {
		var ps []Pointer
		for _, s := range []string{p0, p1, p2} {
			p, err := ParsePointer(s)
			if err != nil {
				return
			}
			ps = append(ps, p)
		}
		b := bytes.TrimSpace([]byte(doc))
		if !json.Valid(b) {
			return
		}
		found := make([][]byte, len(ps))
		if end := NewPicker(ps...).Pick(b, 0, found); end != len(b) {
			t.Fatalf("pick ended at %d of %d", end, len(b))
		}
		for i, p := range ps {
			want, err := p.Lookup(b)
			if err != nil {
				want = nil
			}
			if !bytes.Equal(found[i], want) || (found[i] == nil) != (want == nil) {
				t.Fatalf("%s: picked %q, Lookup %q (%v)", p, found[i], want, err)
			}
		}
	})
}
