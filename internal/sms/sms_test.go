package sms

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestAnalyze(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name     string
		body     string
		enc      Encoding
		units    int
		segments int
		forcing  []rune
		ifGSM7   int
	}{
		{"empty", "", GSM7, 0, 1, nil, 1},
		{"hello", "Hello, world!", GSM7, 13, 1, nil, 1},
		{"160 septets", a(160), GSM7, 160, 1, nil, 1},
		{"161 septets", a(161), GSM7, 161, 2, nil, 2},
		{"306 septets", a(153 * 2), GSM7, 306, 2, nil, 2},
		{"307 septets", a(153*2 + 1), GSM7, 307, 3, nil, 3},
		{"euro makes 160", a(158) + "€", GSM7, 160, 1, nil, 1},
		{"euro makes 161", a(159) + "€", GSM7, 161, 2, nil, 2},
		{"extension table", "^{}\\[~]|€\f", GSM7, 20, 1, nil, 1},
		// 152+2+152 = 306 septets would fit two parts, but the escape pair
		// cannot be split after septet 152, so it opens the second part.
		{"escape at part boundary", a(152) + "€" + a(152), GSM7, 306, 3, nil, 3},
		{"escape just fits", a(151) + "€" + a(153), GSM7, 306, 2, nil, 2},
		{"basic non-ASCII", "£¥èéùìòÇØøÅåΔΦΓΛΩΠΨΣΘΞÆæßÉ¤¡ÄÖÑÜ§¿äöñüà@$_", GSM7, 42, 1, nil, 1},
		{"e acute is GSM", "café", GSM7, 4, 1, nil, 1},
		{"e circumflex is not", "crêpe", UCS2, 5, 1, []rune{'ê'}, 1},
		{"C cedilla is GSM", "Ça va", GSM7, 5, 1, nil, 1},
		{"c cedilla is not", "garçon", UCS2, 6, 1, []rune{'ç'}, 1},
		{"backquote is not", "`x`", UCS2, 3, 1, []rune{'`'}, 1},
		{"tab is not", "a\tb", UCS2, 3, 1, []rune{'\t'}, 1},
		{"curly quotes", "“Hi” it’s me “again”", UCS2, 20, 1, []rune{'“', '”', '’'}, 1},
		{"70 units", a(69) + "ж", UCS2, 70, 1, []rune{'ж'}, 1},
		{"71 units", a(70) + "ж", UCS2, 71, 2, []rune{'ж'}, 1},
		{"134 units", a(133) + "ж", UCS2, 134, 2, []rune{'ж'}, 1},
		{"135 units", a(134) + "ж", UCS2, 135, 3, []rune{'ж'}, 1},
		{"emoji counts two", "ok 😀", UCS2, 5, 1, []rune{'😀'}, 1},
		{"emoji makes 71", a(69) + "😀", UCS2, 71, 2, []rune{'😀'}, 1},
		// 66+2+66 = 134 units would fit two parts, but the surrogate pair
		// cannot be split after unit 66, so it opens the second part.
		{"emoji at part boundary", a(66) + "😀" + a(66), UCS2, 134, 3, []rune{'😀'}, 1},
		{"emoji just fits", a(65) + "😀" + a(67), UCS2, 134, 2, []rune{'😀'}, 1},
		{"quote costs segments", "“" + a(199), UCS2, 200, 3, []rune{'“'}, 2},
		{"repeats listed once", "ê“ê”ê“", UCS2, 6, 1, []rune{'ê', '“', '”'}, 1},
		{"invalid UTF-8", "a\xffb", UCS2, 3, 1, []rune{'\uFFFD'}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Analyze(tt.body)
			want := Analysis{Encoding: tt.enc, Units: tt.units, Segments: tt.segments, Forcing: tt.forcing, SegmentsIfGSM7: tt.ifGSM7}
			if got.Encoding != want.Encoding || got.Units != want.Units || got.Segments != want.Segments ||
				!slices.Equal(got.Forcing, want.Forcing) || got.SegmentsIfGSM7 != want.SegmentsIfGSM7 {
				t.Errorf("Analyze(%q) = %+v, want %+v", tt.body, got, want)
			}
		})
	}
}

func TestAnalyzeManyForcing(t *testing.T) {
	var b strings.Builder
	var want []rune
	for r := rune(0x4E00); r < 0x4E00+100; r++ {
		b.WriteRune(r)
		b.WriteRune(r)
		want = append(want, r)
	}
	got := Analyze(b.String())
	if !slices.Equal(got.Forcing, want) {
		t.Errorf("Forcing = %q, want %q", got.Forcing, want)
	}
	if got.Units != 200 || got.Segments != 3 {
		t.Errorf("Units, Segments = %d, %d, want 200, 3", got.Units, got.Segments)
	}
}

func TestAnalyzeGSM7DoesNotAllocate(t *testing.T) {
	body := strings.Repeat("Hello {name}, your order ships on Monday. Café €5 ", 5)
	if n := testing.AllocsPerRun(100, func() { Analyze(body) }); n != 0 {
		t.Errorf("Analyze allocated %v times for a GSM-7 body, want 0", n)
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"", "Hello", "“Hi”", "€€€", "😀", strings.Repeat("a", 152) + "€", strings.Repeat("é", 161), "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got := Analyze(body)
		if got.Segments < 1 || got.SegmentsIfGSM7 < 1 {
			t.Fatalf("Analyze(%q) = %+v: fewer than 1 segment", body, got)
		}
		runes := []rune(body)
		switch got.Encoding {
		case GSM7:
			if len(got.Forcing) != 0 || got.Segments != got.SegmentsIfGSM7 {
				t.Fatalf("Analyze(%q) = %+v: GSM-7 with forcing or differing segments", body, got)
			}
			if got.Units < len(runes) || got.Units > 2*len(runes) {
				t.Fatalf("Analyze(%q) = %+v: %d septets for %d characters", body, got, got.Units, len(runes))
			}
			checkSegments(t, body, got, gsm7Single, gsm7Part)
		case UCS2:
			if len(got.Forcing) == 0 {
				t.Fatalf("Analyze(%q) = %+v: UCS-2 without forcing characters", body, got)
			}
			if want := len(utf16.Encode(runes)); got.Units != want {
				t.Fatalf("Analyze(%q).Units = %d, want %d UTF-16 units", body, got.Units, want)
			}
			checkSegments(t, body, got, ucs2Single, ucs2Part)
			seen := map[rune]bool{}
			for _, r := range got.Forcing {
				if seen[r] || !slices.Contains(runes, r) {
					t.Fatalf("Analyze(%q).Forcing = %q: repeated or absent %q", body, got.Forcing, r)
				}
				seen[r] = true
			}
		default:
			t.Fatalf("Analyze(%q): unknown encoding %q", body, got.Encoding)
		}
	})
}

// checkSegments checks the segment count against the bounds the units allow:
// a part holds at most part units, and at least part-1 when a two-unit
// character had to move on.
func checkSegments(t *testing.T, body string, got Analysis, single, part int) {
	t.Helper()
	if got.Units <= single {
		if got.Segments != 1 {
			t.Fatalf("Analyze(%q) = %+v: %d units need 1 segment", body, got, got.Units)
		}
		return
	}
	lo := (got.Units + part - 1) / part
	hi := (got.Units + part - 2) / (part - 1)
	if got.Segments < lo || got.Segments > hi {
		t.Fatalf("Analyze(%q) = %+v: segments outside [%d, %d]", body, got, lo, hi)
	}
}

func TestCheckSender(t *testing.T) {
	tests := []struct {
		sender string
		err    string // "" means accepted
	}{
		{"ACME", ""},
		{"Acme Sales", ""},
		{"A", ""},
		{"ACME 2024", ""},
		{"ABCDEFGHIJK", ""},
		{"123", ""},
		{"12345678", ""},
		{"+447400123456", ""},
		{"+14155552671", ""},
		{"", "sender is empty; write an alphanumeric name of at most 11 characters, a phone number in E.164 or a short code"},
		{"ACME SALES LTD", `sender "ACME SALES LTD" is 14 characters; an alphanumeric sender has at most 11`},
		{"AC-ME", `sender "AC-ME" has "-"; an alphanumeric sender may hold only letters, digits and spaces`},
		{"Café", `sender "Café" has "é"; an alphanumeric sender may hold only letters, digits and spaces`},
		{"12 34", `sender "12 34" has no letter; an alphanumeric sender needs at least one`},
		{"   ", `sender "   " has no letter; an alphanumeric sender needs at least one`},
		{"12", `sender "12" has 2 digits; a short code has 3 to 8, and a phone number is written in E.164 with a leading +`},
		{"447400123456", `sender "447400123456" has 12 digits; a short code has 3 to 8, and a phone number is written in E.164 with a leading +`},
		{"+44 7400 123456", `sender "+44 7400 123456" starts with + but is not in E.164; write + and the digits only, without spaces or dashes`},
		{"+4412", `sender "+4412" is not a valid phone number: too short`},
		{"+999123456", `sender "+999123456" is not a valid phone number: unknown country code`},
		{"+", `sender "+" starts with + but is not in E.164; write + and the digits only, without spaces or dashes`},
	}
	for _, tt := range tests {
		t.Run(tt.sender, func(t *testing.T) {
			err := CheckSender(tt.sender)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("CheckSender(%q) = %v, want nil", tt.sender, err)
			case tt.err != "" && (err == nil || err.Error() != tt.err):
				t.Errorf("CheckSender(%q) = %v, want %s", tt.sender, err, tt.err)
			}
		})
	}
}

func BenchmarkAnalyze(b *testing.B) {
	bodies := map[string]string{
		"gsm7":      "Hi Alice, your appointment at Dr Smith's is on Monday 3 June at 10:30. Reply STOP to opt out. €5 fee applies [see terms].",
		"gsm7-long": strings.Repeat("Hello Alice, this is a reminder. ", 20),
		"ucs2":      "Hi Alice, your appointment is on Monday 😀 “see you” ",
	}
	for _, name := range []string{"gsm7", "gsm7-long", "ucs2"} {
		body := bodies[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				Analyze(body)
			}
		})
	}
}
