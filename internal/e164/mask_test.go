package e164

import (
	"fmt"
	"strings"
	"testing"
)

// TestMaskIn: a recipient's number is masked in every form a template or
// a list may print it, other digits stay, and the form stays visible.
func TestMaskIn(t *testing.T) {
	const uk, us = "+447400123459", "+14155550101"
	for _, tt := range []struct {
		text string
		nums []string
		want string
	}{
		{"Your number +447400123459.", []string{uk}, "Your number +•••••••••459."},
		{"Your number 447400123459", []string{uk}, "Your number •••••••••459"}, // {{ slice .phone 1 }}
		{"Your number 7400123459", []string{uk}, "Your number •••••••459"},     // {{ slice .phone 3 }}
		{"call 07400 123459 now", []string{uk}, "call ••••• •••459 now"},       // national form
		{"+44 (0) 7400-123.459", []string{uk}, "+•• (•) ••••-•••.459"},         // grouped
		{"+44 7400 123 459", []string{uk}, "+•• •••• ••• 459"},                 // spaces
		{"ending 123459", []string{uk}, "ending •••459"},                       // six digits of it
		{"ending 23459", []string{uk}, "ending 23459"},                         // five: fine
		{"ending 3459", []string{uk}, "ending 3459"},                           // last four: fine
		{"(415) 555-0101", []string{us}, "(•••) •••-•101"},                     // US national
		{"hotline 0800 765 4321, +447400123459", []string{uk}, "hotline 0800 765 4321, +•••••••••459"},
		{"order 2026-11-23, code 987654", []string{uk, us}, "order 2026-11-23, code 987654"},
		{"no digits", []string{uk}, "no digits"},
		{"7400123459", nil, "7400123459"},
	} {
		if got := MaskIn(tt.text, tt.nums...); got != tt.want {
			t.Errorf("MaskIn(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestMaskInMany: a batch of many recipients masks each one's number, and
// runs past the 64th are masked whatever they hold.
func TestMaskInMany(t *testing.T) {
	var nums []string
	var text strings.Builder
	for i := range 100 {
		n := fmt.Sprintf("+4474001%05d", i)
		nums = append(nums, n)
		text.WriteString(n[1:] + " x ")
	}
	got := MaskIn(text.String(), nums...)
	for _, r := range digitRuns(got, 4) {
		t.Errorf("%q is left whole in %s", got[r.start:r.end], got)
	}
}

func TestMaskAny(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"recipient 447400123459 is blocked", "recipient •••••••••459 is blocked"},
		{"recipient +44 7400 123459 is blocked", "recipient +•• •••• •••459 is blocked"},
		{"HTTP 503 at 2026-11-23 14:00:05, retry in 30 s", "HTTP 503 at 2026-11-23 14:00:05, retry in 30 s"},
		{"request 1234567 refused", "request 1234567 refused"},
		{"dial tcp 192.168.100.200:443: connection refused", "dial tcp 192.168.100.200:443: connection refused"},
	} {
		if got := MaskAny(tt.in); got != tt.want {
			t.Errorf("MaskAny(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestMaskInvalid: two invalid values that differ can be told apart; what
// is not a digit shows the mistake.
func TestMaskInvalid(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"447400123459", "4474••••••59"},
		{"07400 123459", "0740• ••••59"},
		{"+44 74OO 123459", "+44 74OO ••••59"},
		{"12345", "12345"},
		{"not-a-number", "not-a-number"},
	} {
		if got := MaskInvalid(tt.in); got != tt.want {
			t.Errorf("MaskInvalid(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzMaskIn(f *testing.F) {
	f.Add("Your number 07400 123459", "+447400123459")
	f.Add("+44 (0) 7400-123.459 and 2026-11-23", "+447400123459")
	f.Fuzz(func(t *testing.T, text, number string) {
		got := MaskIn(text, number)
		if len([]rune(got)) != len([]rune(text)) {
			t.Fatalf("MaskIn changed the length: %q -> %q", text, got)
		}
		n, err := NewNormalizer("GB").Normalize(number)
		if err != nil {
			return
		}
		// Once masked, no run of the text holds windowDigits digits of the
		// number in a row.
		theirs := map[uint32]bool{}
		eachWindow(appendDigits(nil, n.E164), func(w uint32) { theirs[w] = true })
		for _, r := range digitRuns(got, windowDigits) {
			eachWindow(r.digits, func(w uint32) {
				if theirs[w] {
					t.Fatalf("MaskIn(%q, %q) = %q still holds %q", text, number, got, got[r.start:r.end])
				}
			})
		}
		if again := MaskIn(got, number); again != got {
			t.Fatalf("masking twice changed it: %q -> %q", got, again)
		}
	})
}

func TestMaskAnyAfterDate(t *testing.T) {
	in := "at 2026-11-23 447400123459 refused"
	if got, want := MaskAny(in), "at 2026-11-23 •••••••••459 refused"; got != want {
		t.Errorf("MaskAny(%q) = %q, want %q", in, got, want)
	}
}

// TestMaskerTellsNumbersApart: within one output two different numbers
// never read the same, and one number always reads the same (issue 35.9).
func TestMaskerTellsNumbersApart(t *testing.T) {
	m := NewMasker()
	a, b, c := "+12025550001", "+12025556001", "+12025557001"
	got := []string{m.Mask(a), m.Mask(b), m.Mask(a), m.Mask(c), m.Mask(b), m.Mask("+447400123459")}
	want := []string{"+1 20•• •••001", "+1 20•• •••001 #2", "+1 20•• •••001", "+1 20•• •••001 #3", "+1 20•• •••001 #2", "+44 74•• •••459"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %q, want %q", i, got[i], want[i])
		}
	}
	if x, y := m.Invalid("447400123459"), m.Invalid("447400999959"); x == y {
		t.Errorf("two invalid values read the same: %q", x)
	}
	var nilMasker *Masker
	if nilMasker.Mask(a) != Mask(a) {
		t.Error("a nil Masker is Mask")
	}
}

// TestSortedMaskerIsSmall: a sorted list of numbers gets the same tags as
// any order would, and the Masker keeps only the masks of one shown
// prefix.
func TestSortedMaskerIsSmall(t *testing.T) {
	sorted, any := NewSortedMasker(), NewMasker()
	seen := map[string]string{}
	for hi := range 3 {
		for lo := range 2000 {
			n := fmt.Sprintf("+1202%d55%04d", hi, lo)
			got, want := sorted.Mask(n), any.Mask(n)
			if got != want {
				t.Fatalf("%s: sorted %q, any order %q", n, got, want)
			}
			if other, dup := seen[got]; dup {
				t.Fatalf("%s and %s both read %q", other, n, got)
			}
			seen[got] = n
		}
		if len(sorted.seen) > 1000 {
			t.Fatalf("the sorted Masker holds %d masks", len(sorted.seen))
		}
	}
	if sorted.Mask("+12022550999") != sorted.Mask("+12022550999") {
		t.Error("a repeated number reads differently")
	}
}
