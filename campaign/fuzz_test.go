package campaign

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/smsform/smsform/internal/window"
)

// addSeeds adds every file matching pattern as a seed.
func addSeeds(f *testing.F, patterns ...string) {
	f.Helper()
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

// FuzzLoad loads arbitrary campaign files next to a few real lists. Load must
// never panic, every error must be an *Error, and a campaign that loads must
// read and render.
func FuzzLoad(f *testing.F) {
	addSeeds(f, "testdata/good/*.yaml", "testdata/bad/*.yaml")
	lists := map[string][]byte{}
	for _, name := range []string{"customers.csv", "people.csv", "optout.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", "good", "lists", name))
		if err != nil {
			f.Fatal(err)
		}
		lists[filepath.Join("lists", name)] = data
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := writeCase(t, string(data), lists)
		c, err := Load(p)
		if err != nil {
			for _, e := range allErrors(t, err) {
				// The campaign file, or a file it names (a price table).
				if e.File != p && filepath.Dir(e.File) != filepath.Dir(p) && !strings.HasPrefix(e.File, filepath.Dir(p)+string(filepath.Separator)) {
					t.Errorf("error names %q, not the campaign file or one it names", e.File)
				}
			}
			return
		}
		for _, s := range append(c.Recipients, c.Exclude...) {
			err := s.Read(context.Background(), func(e Entry) error {
				_, _ = c.Render(e.Vars, "+14155550101")
				return nil
			})
			if err != nil {
				allErrors(t, err)
			}
		}
		_ = c.Personalised()
		_ = c.Files()
		if _, err := window.Compile(c.Window); err != nil {
			t.Errorf("a loaded campaign's window does not compile: %v", err)
		}
	})
}

func FuzzReadCSV(f *testing.F) {
	addSeeds(f, "testdata/good/lists/*.csv", "testdata/bad/lists/*.csv")
	f.Add([]byte("\uFEFFphone,name\r\n+1,\"a\r\nb\"\r\n\r\n,,\r\n"))
	f.Add([]byte("phone\n\"unclosed\n+1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, Source{Kind: KindCSV, Path: writeList(t, "l.csv", string(data)), PhoneColumn: "phone"})
	})
}

func FuzzReadText(f *testing.F) {
	addSeeds(f, "testdata/good/lists/*.txt", "testdata/bad/lists/*.txt")
	f.Add([]byte("\uFEFF+1\r\n# c\r\n\r\n  07700 900123  \n"))
	f.Add([]byte("+1\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, Source{Kind: KindText, Path: writeList(t, "l.txt", string(data))})
	})
}

// checkRead reads s and checks what every reader promises: lines that start
// at 1 and never go back, valid UTF-8, and errors that are *Errors.
func checkRead(t *testing.T, s Source) {
	t.Helper()
	last := 0
	err := s.Read(context.Background(), func(e Entry) error {
		if e.Line < 1 || e.Line < last {
			t.Errorf("entry line %d after %d", e.Line, last)
		}
		last = e.Line
		if !utf8.ValidString(e.Raw) {
			t.Errorf("entry %q is not UTF-8", e.Raw)
		}
		for k, v := range e.Vars {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				t.Errorf("vars %q=%q are not UTF-8", k, v)
			}
		}
		return nil
	})
	if err != nil {
		for _, e := range allErrors(t, err) {
			if e.Line < 0 || e.File != s.Path {
				t.Errorf("error %v", e)
			}
		}
	}
}

// FuzzRender parses and renders arbitrary bodies: no panic, no runaway
// output, no hang.
func FuzzRender(f *testing.F) {
	for _, body := range []string{
		"Hi {{ .name }}",
		`{{ default "friend" .name | title }}`,
		`{{ printf "%0900000d" 1 }}`,
		`{{ if eq .name "x" }}{{ upper .name }}{{ else }}{{ lower .phone }}{{ end }}`,
		`{{ with $x := .name }}{{ $x }}{{ end }}`,
		`{{ index . "name" }}{{ len .phone }}{{ slice .name 1 }}`,
		// Issue 23: index and variables, which must fail or warn as fields do.
		`Hi {{ index . "nosuch" }}!`,
		`{{ index $ "name" | upper }} {{ index . "first name" }}`,
		`{{ index .name 0 }}{{ index . 1 }}{{ index . "name" "x" }}`,
		`{{ $x := .name }}{{ $y := $x }}{{ $x = .nosuch }}{{ $y }}`,
		`{{ $ := .name }}{{ $ }}{{ ($z := .name) }}`,
		`{{ with $ }}{{ .name }}{{ end }}{{ with .name }}{{ $.name }}{{ . }}{{ else with .phone }}{{ . }}{{ end }}`,
		`{{ if and .name (eq .name "x") }}{{ or .name .phone }}{{ else if not .name }}{{ default .phone .name }}{{ end }}`,
		`{{ printf "%s %q" .name .name | html | js | urlquery | title }}`,
	} {
		f.Add(body, "ann")
		f.Add(body, " ")
	}
	f.Fuzz(func(t *testing.T, body, name string) {
		tmpl, err := newBodyTemplate(body)
		if err != nil {
			return
		}
		c := &Campaign{Body: body, tmpl: tmpl, printed: printedFields(tmpl.Tree.Root, nil)}
		_ = c.Personalised()
		out, err := c.Render(map[string]string{"name": name}, "+14155550101")
		if err == nil && utf8.RuneCountInString(out) > maxRendered {
			t.Errorf("rendered %d characters", utf8.RuneCountInString(out))
		}
		row := Row{Columns: []string{"name"}, Values: []string{name}}
		blank := c.BlankVariables(row, "+14155550101")
		if strings.TrimSpace(name) != "" && blank != nil {
			t.Errorf("BlankVariables = %q for a row without a blank value", blank)
		}
		for _, v := range blank {
			if !slices.Contains(c.printed, v) {
				t.Errorf("BlankVariables names %q, which the body does not print", v)
			}
		}
	})
}

// FuzzPrices loads arbitrary price tables. Load must never panic, every error
// must be an *Error naming the table, and a table that loads must hold one
// currency and prices that are not negative, and look numbers up.
func FuzzPrices(f *testing.F) {
	addSeeds(f, "../examples/prices/*.csv", "../internal/report/testdata/campaigns/*.csv")
	f.Add([]byte("country,prefix,price_per_segment,currency\nGB,+4474,0.05,EUR\nGB,,1,EUR\n"))
	f.Add([]byte("currency,price_per_segment,prefix,country\nEUR,0.05,,FR\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := writeCase(t, pricesHead, map[string][]byte{"prices.csv": data})
		c, err := Load(p)
		if err != nil {
			for _, e := range allErrors(t, err) {
				if !strings.HasSuffix(e.File, "prices.csv") {
					t.Errorf("error %q names %q, not the price table", e, e.File)
				}
			}
			return
		}
		for _, r := range c.Prices.Rows {
			if r.Price.IsNegative() {
				t.Errorf("line %d: negative price %s", r.Line, r.Price)
			}
		}
		for _, n := range []string{"+447400123459", "+4", "", "+14155550101"} {
			if i, ok := c.Prices.Lookup(n, "GB"); ok && (i < 0 || i >= len(c.Prices.Rows)) {
				t.Errorf("Lookup(%q) = %d, out of the table", n, i)
			}
		}
	})
}
