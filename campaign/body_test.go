package campaign

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
)

func mustTemplate(t testing.TB, body string) *Campaign {
	t.Helper()
	tmpl, err := newBodyTemplate(body)
	if err != nil {
		t.Fatalf("parse %q: %v", body, err)
	}
	return &Campaign{Body: body, tmpl: tmpl}
}

func TestRender(t *testing.T) {
	vars := map[string]string{"name": "ann lee", "city": "  Paris ", "empty": "", "blank": "  "}
	tests := []struct{ body, want string }{
		{"Hello", "Hello"},
		{"Hi {{ .name }}", "Hi ann lee"},
		{"{{ .phone }}", "+447700900123"},
		{"{{ upper .name }} {{ lower \"ÉCOLE\" }}", "ANN LEE école"},
		{"{{ title .name }} {{ title \"mcDonald o'neil\" }}", "Ann Lee McDonald O'neil"},
		{"[{{ trim .city }}]", "[Paris]"},
		{`{{ default "friend" .empty }} {{ default "friend" .blank }} {{ default "friend" .name }}`, "friend friend ann lee"},
		{`{{ .name | title | printf "%s!" }}`, "Ann Lee!"},
		{`{{ if .empty }}yes{{ else }}no{{ end }}`, "no"},
		{`{{ with .name }}{{ . }}{{ end }}`, "ann lee"},
		{`{{ len .name }} {{ index . "name" }} {{ eq .city "x" }}`, "7 ann lee false"},
		{`{{/* a comment */}}ok`, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			c := mustTemplate(t, tt.body)
			before := maps.Clone(vars)
			got, err := c.Render(vars, "+447700900123")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Render = %q, want %q", got, tt.want)
			}
			if !maps.Equal(vars, before) {
				t.Errorf("Render changed the caller's vars: %v", vars)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct{ body, want string }{
		{"Hi {{ .name }}", `missing variable "name" (this recipient has: city, phone)`},
		{"{{ .city.x }}", "render body: at {{ .city.x }}: can't evaluate field x in type string"},
		{`{{ printf "%0900000d" 1 }}`, "body renders to more than 16000 characters"},
		{`{{ printf "%s" .city }}{{ printf "%09000d" 1 }}{{ printf "%09000d" 1 }}`, "body renders to more than 16000 characters"},
		{`{{ upper (len .city) }}`, "render body: at"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			_, err := mustTemplate(t, tt.body).Render(map[string]string{"city": "Paris"}, "+1")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestRenderCountsCharactersNotBytes(t *testing.T) {
	// 15,000 two-byte characters are 30,000 bytes but fit.
	body := strings.Repeat("é", 15000)
	if _, err := mustTemplate(t, body).Render(nil, "+1"); err != nil {
		t.Error(err)
	}
}

func TestRenderHandBuiltCampaign(t *testing.T) {
	// A Campaign not from Load (as other packages' tests build them) still renders.
	c := &Campaign{Body: "Hi {{ .name }}"}
	if got, err := c.Render(map[string]string{"name": "Ann"}, "+1"); err != nil || got != "Hi Ann" {
		t.Errorf("Render = %q, %v", got, err)
	}
	if !c.Personalised() {
		t.Error("Personalised = false")
	}
}

func TestRenderConcurrent(t *testing.T) {
	c := mustTemplate(t, "Hi {{ .name }} at {{ .phone }}")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vars := map[string]string{"name": fmt.Sprint("n", g)}
			for i := range 500 {
				phone := fmt.Sprint("+", g, i)
				got, err := c.Render(vars, phone)
				if want := "Hi n" + fmt.Sprint(g) + " at " + phone; err != nil || got != want {
					errs <- fmt.Errorf("Render = %q, %v; want %q", got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestRenderPhoneWins(t *testing.T) {
	// .phone is always the recipient's E.164 number, whatever vars holds.
	got, err := mustTemplate(t, "{{ .phone }}").Render(map[string]string{"phone": "07700 900123"}, "+447700900123")
	if err != nil || got != "+447700900123" {
		t.Errorf("Render = %q, %v", got, err)
	}
}

func TestBodyTemplateRefusals(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{{ range 1000000000 }}{{ end }}`, "range is not allowed"},
		{`{{ if .x }}{{ range .y }}{{ end }}{{ end }}`, "range is not allowed"},
		{`{{ with .x }}{{ else }}{{ range .y }}{{ end }}{{ end }}`, "range is not allowed"},
		{`{{ define "a" }}x{{ end }}`, "define and block are not allowed"},
		{`{{ block "a" . }}x{{ end }}`, "define and block are not allowed"},
		{`{{ template "a" }}`, "template calls are not allowed"},
		{`{{ env "HOME" }}`, `function "env" not defined`},
		{`{{ readFile "/etc/passwd" }}`, `function "readFile" not defined`},
		{`{{ .a `, "unclosed action"},
	}
	for _, tt := range tests {
		if _, err := newBodyTemplate(tt.body); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("newBodyTemplate(%q) err = %v, want %q", tt.body, err, tt.want)
		}
	}
}

func TestPersonalised(t *testing.T) {
	tests := []struct {
		body string
		want bool
	}{
		{"Hello, the sale starts today.", false},
		{`{{ "literal" | upper }} {{ printf "%d" 3 }}`, false},
		{`{{ $x := "a" }}{{ $x }}`, false},
		{`{{/* .name */}}plain`, false},
		{`{{ if true }}yes{{ else }}no{{ end }}`, false},
		{"Hi {{ .name }}", true},
		{"{{ .phone }}", true},
		{"{{ . }}", true},
		{"{{ $.name }}", true},
		{`{{ index . "first name" }}`, true},
		{`{{ $x := .name }}{{ $x }}`, true},
		{`{{ if eq .city "Paris" }}Bonjour{{ end }}`, true},
		{`{{ if true }}{{ else }}{{ .x }}{{ end }}`, true},
		{`{{ with "x" }}{{ . }}{{ end }}`, true}, // errs towards true: costs renders, never a wrong message
		{`{{ default "friend" .name | title }}`, true},
		{`{{ (.name) }}`, true},
	}
	for _, tt := range tests {
		if got := mustTemplate(t, tt.body).Personalised(); got != tt.want {
			t.Errorf("Personalised(%q) = %v, want %v", tt.body, got, tt.want)
		}
	}
}

func TestTemplateErrorLine(t *testing.T) {
	tests := []struct {
		body string
		line int
	}{
		{"body: \"Hi {{ nope }}\"\n", 5},
		{"body: |\n  line one\n  line two {{ nope }}\n", 7},
		{"body: |-\n  one\n\n  {{ nope }}\n", 8},
		// Folding joins lines, so the error can only point at the body.
		{"body: >\n  one\n  {{ nope }}\n", 5},
		{"body: \"one\n\n  {{ nope }}\"\n", 5},
	}
	for _, tt := range tests {
		p := writeCase(t, "version: 1\nname: x\nsender: ACME\nrecipients: [{numbers: [\"+1\"]}]\n"+tt.body, nil)
		_, err := Load(p)
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != tt.line || ce.Field != "body" {
			t.Errorf("%q: err = %v, want line %d", tt.body, err, tt.line)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	c := mustTemplate(b, `Hi {{ default "friend" .name | title }}, your code is {{ .code }}. Reply STOP to opt out.`)
	vars := map[string]string{"name": "ann", "code": "X1Y2", "city": "Paris"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Render(vars, "+447700900123"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBlankVariables(t *testing.T) {
	tests := []struct {
		body string
		want string // for the row below: name blank, city and "first name" empty, code and tier set
	}{
		{"Hi {{ .name }}, code {{ .code }}", "name"},
		{"Hi {{ .name }}, {{ .city }}", "name city"},
		{"Hi {{ .name | upper }}", "name"},
		{"Hi {{ printf \"%s!\" .city }}", "city"},
		{"Hi {{ default \"friend\" .name }}", ""},
		{"Hi {{ .name | default \"friend\" }}", ""},
		{"Hi {{ default .city .name }}", "city"}, // both blank: the fallback is printed
		{"Hi {{ default .name .code }}", ""},     // the fallback is not needed
		{"Hi {{ or .city .code }}", ""},
		{"Hi {{ or .code .city }}", ""},
		{"Hi {{ or .city .name }}", "name"},
		{"Hi{{ if .name }} {{ .name }}{{ end }}", ""},
		{"Hi{{ if .code }} {{ .name }}{{ else }}{{ .city }}{{ end }}", "name"},
		{"Hi{{ if .city }} {{ .name }}{{ else }}{{ .code }}{{ end }}", ""}, // the branch this row takes prints no blank
		{"Hi{{ if eq .tier \"gold\" }} {{ .city }}{{ end }}", ""},
		{"Hi{{ if eq .tier \"silver\" }} {{ .city }}{{ end }}", "city"},
		{"Hi{{ if and .code .name }} {{ .name }}{{ end }}", ""},
		{"Hi{{ if trim .name }} {{ .name }}{{ end }}", ""},
		{"Hi{{ with .name }} {{ . }}{{ end }}", ""},
		{"Hi{{ with .code }} {{ $.city }}{{ end }}", "city"},
		{"Hi{{ with $x := .name }} {{ $x }}{{ end }}", ""},
		{"Code {{ .code }} for {{ .phone }}", ""},
		// Issue 23: index and variables set from fields print as fields do.
		{`Hi {{ index . "name" }}`, "name"},
		{`Hi {{ index . "first name" }}`, "first name"},
		{`Hi {{ index $ "city" | title }}`, "city"},
		{`{{ $x := .name }}Hi {{ $x }}`, "name"},
		{`{{ $x := .code }}{{ $x = .city }}Hi {{ $x }}`, "city"},
		{`{{ $x := .code }}{{ if .tier }}{{ $x = .city }}{{ end }}Hi {{ $x }}`, "city"},
		{`{{ $x := .name }}{{ $y := $x }}Hi {{ upper $y }}`, "name"},
		{`Hi {{ ($x := .name) }}`, "name"},
		{`{{ $ := .name }}Hi {{ $ }}`, "name"},
		{`Hi {{ with .code }}{{ $.name }}{{ end }}`, "name"},
		{`Hi {{ len .name }} {{ eq .city "" }}`, ""}, // a number and a truth value, never the text
		{`Hi {{ slice .code 1 }}{{ .name | html }}{{ urlquery .city }}`, "name city"},
		{`Hi {{ .name }}{{ .name }}`, "name"},
		// A marker that a guarded action prints does not count.
		{`Hi{{ with $n := .name }} {{ $n }}{{ end }}! {{ if eq .tier "gold" }}{{ .name }}{{ end }}`, ""},
		{`Hi{{ with $n := .name }} {{ $n }}{{ end }}! {{ if eq .tier "silver" }}{{ .name }}{{ end }}`, "name"},
		{`{{ if .city }}{{ printf "%s %s" .city .name }}{{ end }}{{ .city }}`, "city"},
		{`{{ if .code }}{{ printf "%s %s" .code .city }}{{ end }}`, "city"},
		{`{{ if .code }}{{ printf "%s %s" .name .city }}{{ end }}{{ if .name }}{{ .name }}{{ end }}`, "name city"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			c, err := Load(writeCase(t, "version: 1\nname: t\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123459\"]\nbody: '"+tt.body+"'\n", nil))
			if err != nil {
				t.Fatal(err)
			}
			row := Row{Columns: []string{"name", "city", "code", "first name", "tier"}, Values: []string{" ", "", "42", "", "silver"}}
			if got := strings.Join(c.BlankVariables(row, "+447400123459"), " "); got != tt.want {
				t.Errorf("BlankVariables = %q, want %q", got, tt.want)
			}
			full := Row{Columns: row.Columns, Values: []string{"Ann", "Paris", "42", "Ann", "gold"}}
			if got := c.BlankVariables(full, "+447400123459"); got != nil {
				t.Errorf("BlankVariables of a full row = %q", got)
			}
		})
	}
}

// A name nothing in the list resembles gets no guess.
func TestRenderMissingNoGuess(t *testing.T) {
	_, err := mustTemplate(t, "Hi {{ .surname }}").Render(map[string]string{"city": "Paris"}, "+1")
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("err = %v, want no guess", err)
	}
}

// TestRenderMissing: every way of reading a variable the recipient lacks is
// an error that names it, and a body that misses several names them all.
func TestRenderMissing(t *testing.T) {
	tests := []struct{ body, want string }{
		{`Hi {{ index . "nosuch" }}!`, `missing variable "nosuch" (this recipient has: city, phone)`},
		{`Hi {{ index $ "nosuch" | upper }}!`, `missing variable "nosuch"`},
		{`{{ $x := .nosuch }}Hi {{ $x }}`, `missing variable "nosuch"`},
		{`{{ with .city }}{{ $.nosuch }}{{ end }}`, `missing variable "nosuch"`},
		{`Hi {{ .first }} {{ .last }}, {{ .city }} {{ index . "first" }} {{ index . "zip code" }}`,
			`missing variables "first", "last", "zip code" (this recipient has: city, phone)`},
		{`{{ if .vip }}{{ .discount }}{{ end }}`, `missing variable "vip" (`}, // vip missing is empty: the branch is not taken
		{"{{ index . \"a`b\\n\" }}", `missing variable "a\x60b\n"`},
		{`{{ index .city 0 }}`, `index reads one variable by its name`},
		{`{{ index . "city" "x" }}`, `index reads one variable by its name`},
		{`{{ index . 1 }}`, `index reads one variable by its name`},
		// A name the list has but for case or a slip is suggested.
		{`Hi {{ .City }}`, `missing variable "City" (this recipient has: city, phone); did you mean .city for .City? (names are case-sensitive)`},
		{`Hi {{ .citty }} {{ .phnoe }}`, `did you mean .city for .citty, .phone for .phnoe?`},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			_, err := mustTemplate(t, tt.body).Render(map[string]string{"city": "Paris"}, "+1")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestRenderErrorsQuoteUserText(t *testing.T) {
	// A column name holding backticks and a line break is named without them.
	vars := map[string]string{"```\nrm -rf": "x"}
	_, err := mustTemplate(t, "Hi {{ .name }}").Render(vars, "+1")
	if err == nil || strings.Contains(err.Error(), "`") || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %q", err)
	}
	if !strings.Contains(err.Error(), `"\x60\x60\x60\nrm -rf"`) {
		t.Errorf("err = %q, want the column quoted", err)
	}
}

// BenchmarkBlankVariables is the cost per row of the empty-variables check:
// a row without a blank variable costs a look at its values; a row with one
// a second rendering (the blank check).
func BenchmarkBlankVariables(b *testing.B) {
	body := `Hi {{ default "friend" .name | title }}, your code is {{ .code }}.{{ if eq .tier "gold" }} Gold: {{ .perk }}{{ end }}`
	c := mustTemplate(b, body)
	c.printed = printedFields(c.tmpl.Tree.Root, nil)
	cols := []string{"name", "code", "tier", "perk"}
	for _, tc := range []struct {
		name   string
		values []string
	}{{"full", []string{"ann", "X1Y2", "gold", "lounge"}}, {"blank", []string{"ann", "X1Y2", "gold", ""}}} {
		b.Run(tc.name, func(b *testing.B) {
			row := Row{Columns: cols, Values: tc.values}
			b.ReportAllocs()
			for b.Loop() {
				c.BlankVariables(row, "+447700900123")
			}
		})
	}
}
