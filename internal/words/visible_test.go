package words

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"spring-sale", "spring-sale"},
		{"Zoë 東京 ’quoted’ – ok 😀", "Zoë 東京 ’quoted’ – ok 😀"},
		{`C:\lists\a.csv "x"`, `C:\lists\a.csv "x"`},
		{"a\nb", `a\nb`},
		{"a\tb\r", `a\tb\r`},
		{"\x1b]0;pwned\x07</details>\n\n# Approved by security",
			`\x1b]0;pwned\a</details>\n\n# Approved by security`},
		{"\x00\x01\x7f", `\x00\x01\x7f`},
		{"next\u0085line \u009b31m", `next\u0085line \u009b31m`},
		{"abc\u202edcba", `abc\u202edcba`},
		{"\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"\u2066x\u2067y\u2068z\u2069", `\u2066x\u2067y\u2068z\u2069`},
		{"\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"bad \xff\x9b byte", `bad \xff\x9b byte`},
		{"zero\u200bwidth joiner\u200d", "zero\u200bwidth joiner\u200d"},
	} {
		if got := Visible(tt.in); got != tt.want {
			t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestVisibleLeavesNothingHidden walks every code point of the BMP and a
// few beyond: what Visible returns holds no control, no bidi control and
// no invalid UTF-8, and a line never ends inside it.
func TestVisibleLeavesNothingHidden(t *testing.T) {
	var b strings.Builder
	for r := rune(0); r < 0x10000; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		b.WriteRune(r)
	}
	b.WriteString("\xff\xc2")
	out := Visible(b.String())
	if !utf8.ValidString(out) {
		t.Fatal("output is not UTF-8")
	}
	for _, r := range out {
		if hidden(r) {
			t.Fatalf("%U reached the output", r)
		}
	}
}

func TestVisibleDoesNotAllocateForPlainText(t *testing.T) {
	plain := "Hi Zoë, the spring sale starts today – reply STOP to opt out. 東京"
	if n := testing.AllocsPerRun(100, func() { _ = Visible(plain) }); n != 0 {
		t.Errorf("Visible allocated %v times for text that needs no escape", n)
	}
}

func BenchmarkVisible(b *testing.B) {
	plain := strings.Repeat("Hi Zoë, the spring sale starts today. ", 4)
	hostile := plain + "\x1b]0;x\x07\u202e"
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Visible(plain)
		}
	})
	b.Run("hostile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Visible(hostile)
		}
	})
}

func FuzzVisible(f *testing.F) {
	f.Add("Hi {{ .name }}\n")
	f.Add("\x1b]0;pwned\x07\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := Visible(s)
		if firstHidden(out) >= 0 {
			t.Fatalf("Visible(%q) = %q still hides something", s, out)
		}
		if firstHidden(s) < 0 && out != s {
			t.Fatalf("Visible changed %q, which needs nothing", s)
		}
	})
}

// TestVisibleEscapesAsQuoteDoes: each escape is the one strconv.Quote
// writes, so that a person who knows Go's (or C's) escapes reads it.
func TestVisibleEscapesAsQuoteDoes(t *testing.T) {
	for r := rune(0); r < 0x3000; r++ {
		if !hidden(r) {
			continue
		}
		q := strconv.QuoteRune(r)
		if got, want := Visible(string(r)), q[1:len(q)-1]; got != want {
			t.Errorf("%U: got %s, want %s", r, got, want)
		}
	}
}
