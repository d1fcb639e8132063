package words

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven cha…"},
		{"ééééé", 5, "ééééé"}, // 10 bytes, 5 characters: not cut
		{"éééééé", 5, "ééééé…"},
		{"日本語のテキスト", 3, "日本語…"},
		{"", 0, ""},
		{"a", 0, "…"},
	} {
		if got := Clip(tt.s, tt.n); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// FuzzClip: whatever the text and length, Clip never splits a character
// (valid UTF-8 stays valid), keeps at most n characters of s, and returns
// s itself when it fits.
func FuzzClip(f *testing.F) {
	f.Add("héllo wörld 日本", 4)
	f.Add("\xff\xfe broken", 2)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1000 {
			return
		}
		got := Clip(s, n)
		if utf8.RuneCountInString(s) <= n {
			if got != s {
				t.Fatalf("Clip(%q, %d) = %q, want it whole", s, n, got)
			}
			return
		}
		kept, ok := strings.CutSuffix(got, "…")
		if !ok || !strings.HasPrefix(s, kept) || utf8.RuneCountInString(kept) != n {
			t.Fatalf("Clip(%q, %d) = %q", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Clip(%q, %d) = %q: a character split", s, n, got)
		}
	})
}
