package e164

import "testing"

// Digits accepts what each of the three readers it replaces accepted
// (apply's matcher: space - . ( ) /; the fast path: space - . ( ); the
// masker: those and typographic spaces and dashes), so no number read
// before is refused now.
func TestDigits(t *testing.T) {
	for _, tt := range []struct {
		raw      string
		want     string
		plus, ok bool
	}{
		{"+447400123456", "447400123456", true, true},
		{" +44 7400 123-456 ", "447400123456", true, true},
		{"(0)7400.123/456", "07400123456", false, true},
		{"0044\u00a07400\u2009123\u2013456", "00447400123456", false, true},
		{"+44 7400 123456 ext 2", "", false, false},
		{"+", "", true, false},
		{"", "", false, false},
	} {
		d, plus, ok := Digits(tt.raw)
		if d != tt.want || plus != tt.plus || ok != tt.ok {
			t.Errorf("Digits(%q) = %q, %v, %v; want %q, %v, %v", tt.raw, d, plus, ok, tt.want, tt.plus, tt.ok)
		}
	}
	if rest, ok := CutInternationalPrefix("00447400123456"); !ok || rest != "447400123456" {
		t.Errorf("CutInternationalPrefix: %q %v", rest, ok)
	}
}

// The fast path takes every ASCII separator: a slash between digits reads
// as the library reads it.
func TestSeparatorsFastPath(t *testing.T) {
	n := NewNormalizer("GB")
	a, err := n.Normalize("07400/123456")
	if err != nil || a.E164 != "+447400123456" {
		t.Errorf("Normalize with a slash: %+v, %v", a, err)
	}
}
