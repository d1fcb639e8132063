package rawjson

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestStringArrays(t *testing.T) {
	for _, ps := range [][]string{
		{"+447700900001"},
		{"+447700900001", "+14155550100", "+33612345678"},
		{""},
		{"", ""},
		{`say "hi"`, `back\\slash`, "tab\t", "naïve", "<&>", "[", "]", ","},
	} {
		a := string(AppendStrings(nil, ps))
		var std []string
		if err := json.Unmarshal([]byte(a), &std); err != nil || !slices.Equal(std, ps) {
			t.Errorf("%q: AppendStrings wrote %s, which is %q (%v)", ps, a, std, err)
		}
		var got []string
		if err := EachString(a, func(p string) { got = append(got, p) }); err != nil || !slices.Equal(got, ps) {
			t.Errorf("%q: EachString read %q (%v)", ps, got, err)
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
		err := EachString(a, func(p string) { got = append(got, p) })
		var std []string
		stdErr := json.Unmarshal([]byte(a), &std)
		if (err == nil) != (stdErr == nil) || (err == nil && !slices.Equal(got, std)) || !slices.Equal(got, want) {
			t.Errorf("%s: got %q, %v; encoding/json %q, %v; want %q", a, got, err, std, stdErr, want)
		}
	}
}

// FuzzEachString checks EachString against encoding/json on any input: the
// state's phones column is read from a file a person may have edited.
func FuzzEachString(f *testing.F) {
	for _, s := range []string{`[]`, `["+441","+442"]`, `["a\"b"]`, `["+441",]`, `[" ","",""]`, `["\u0000"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, a string) {
		var got []string
		err := EachString(a, func(p string) { got = append(got, p) })
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
