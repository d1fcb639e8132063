package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPhonesJSON(t *testing.T) {
	for _, ps := range [][]string{
		{"+447700900001"},
		{"+447700900001", "+14155550100", "+33612345678"},
		{""},
		{"", ""},
		{`say "hi"`, `back\\slash`, "tab\t", "naïve", "<&>", "[", "]", ","},
	} {
		a := string(appendPhones(nil, ps))
		var std []string
		if err := json.Unmarshal([]byte(a), &std); err != nil || !slices.Equal(std, ps) {
			t.Errorf("%q: appendPhones wrote %s, which is %q (%v)", ps, a, std, err)
		}
		var got []string
		if err := eachPhone(a, func(p string) { got = append(got, p) }); err != nil || !slices.Equal(got, ps) {
			t.Errorf("%q: eachPhone read %q (%v)", ps, got, err)
		}
	}
	// What SQLite's json_group_array writes, and what a person may have.
	for a, want := range map[string][]string{
		`[]`:                     nil,
		`["+441","+442"]`:        {"+441", "+442"},
		`[ "+441" , "+442" ]`:    {"+441", "+442"},
		`["a\"b","\u00e9"]`:      {`a"b`, "é"},
		`["+441",]`:              nil,
		`["+441"`:                nil,
		`{"a":1}`:                nil,
		`["+441"]x`:              nil,
		`["+441" "+442"]`:        nil,
		`["+441",1]`:             nil,
		`["+441","unterminated]`: nil,
	} {
		var got []string
		err := eachPhone(a, func(p string) { got = append(got, p) })
		var std []string
		stdErr := json.Unmarshal([]byte(a), &std)
		if (err == nil) != (stdErr == nil) || (err == nil && !slices.Equal(got, std)) || !slices.Equal(got, want) {
			t.Errorf("%s: got %q, %v; encoding/json %q, %v; want %q", a, got, err, std, stdErr, want)
		}
	}
}

// FuzzEachPhone checks eachPhone against encoding/json on any input: the
// phones column is read from a file a person may have edited.
func FuzzEachPhone(f *testing.F) {
	for _, s := range []string{`[]`, `["+441","+442"]`, `["a\"b"]`, `["+441",]`, `[" ","",""]`, `["\u0000"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, a string) {
		var got []string
		err := eachPhone(a, func(p string) { got = append(got, p) })
		var std []string
		stdErr := json.Unmarshal([]byte(a), &std)
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("%q: error %v, encoding/json %v", a, err, stdErr)
		}
		if err == nil && !slices.Equal(got, std) {
			t.Fatalf("%q: got %q, encoding/json %q", a, got, std)
		}
		if err != nil && got != nil {
			t.Fatalf("%q: a malformed array gave %q", a, got)
		}
	})
}

// TestKnown drives known with random changes, some rolled back, against a
// plain map.
func TestKnown(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	k := newKnown(0)
	ref := map[string]Status{}
	phone := func() string {
		if rng.IntN(10) == 0 {
			return fmt.Sprintf("other-%d", rng.IntN(500))
		}
		return fmt.Sprintf("+44%d", rng.IntN(20000))
	}
	for round := range 300 {
		saved := maps.Clone(ref)
		mark := k.mark()
		for range rng.IntN(200) {
			p := phone()
			switch rng.IntN(3) {
			case 0:
				c := Status(rng.IntN(4))
				k.set(p, c)
				ref[p] = c
			case 1:
				c := k.check(p)
				if c != ref[p] {
					t.Fatalf("round %d: check(%s) = %d, want %d", round, p, c, ref[p])
				}
				if c != Sent && c != InDoubt {
					ref[p] = InDoubt
				}
			case 2:
				if c := k.get(p); c != ref[p] {
					t.Fatalf("round %d: get(%s) = %d, want %d", round, p, c, ref[p])
				}
			}
		}
		if rng.IntN(3) == 0 {
			k.rollback(mark)
			ref = saved
		} else {
			k.commit()
		}
		for p, c := range ref {
			if got := k.get(p); got != c {
				t.Fatalf("round %d: %s is %d, want %d", round, p, got, c)
			}
		}
	}
	if n := k.statuses.Len(); n <= 1024 {
		t.Errorf("the map never grew (%d numbers)", n)
	}
}
