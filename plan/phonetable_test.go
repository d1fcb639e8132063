package plan

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestPhoneKey(t *testing.T) {
	for _, phone := range []string{"+1", "+447400123456", "+393123456789", "+9999999999999999999"} {
		k, ok := phoneKey(phone)
		if !ok || k == 0 || keyPhone(k) != phone {
			t.Errorf("phoneKey(%q) = %d, %v; back: %q", phone, k, ok, keyPhone(k))
		}
	}
	// Each of these would collide with a packed number, or not fit.
	for _, phone := range []string{"", "+", "447400123456", "+0447400123456", "+44 7400", "+44740012345x", "+99999999999999999999"} {
		if k, ok := phoneKey(phone); ok {
			t.Errorf("phoneKey(%q) = %d, want none", phone, k)
		}
	}
}

// TestPhoneTable checks the table against a Go map: numbers added in
// random order through several growths, runs of neighbours (as lists
// hold), numbers phoneKey does not take, and lookups of numbers never added.
func TestPhoneTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var phones []string
	for i := range 20_000 {
		phones = append(phones, "+"+strconv.FormatUint(1+rng.Uint64N(999_999_999_999_999), 10))
		phones = append(phones, keyPhone(447400000000+uint64(i))) // a run
	}
	phones = append(phones, "not-e164", "+0123", "")
	var tab phoneTable
	want := map[string]int32{}
	for i, phone := range phones {
		v, added := tab.ref(phone)
		_, had := want[phone]
		if added == had {
			t.Fatalf("ref(%q) added = %v, already there = %v", phone, added, had)
		}
		if added {
			*v = int32(i)
			want[phone] = int32(i)
		} else if *v != want[phone] {
			t.Fatalf("ref(%q) = %d, want %d", phone, *v, want[phone])
		}
	}
	for phone, w := range want {
		if v, ok := tab.get(phone); !ok || v != w {
			t.Errorf("get(%q) = %d, %v, want %d", phone, v, ok, w)
		}
	}
	if tab.n+len(tab.other) != len(want) {
		t.Errorf("%d numbers, want %d", tab.n+len(tab.other), len(want))
	}
	for _, phone := range []string{"+447400020000", "+1", "other", "+0"} {
		if v, ok := tab.get(phone); ok {
			t.Errorf("get(%q) = %d, never added", phone, v)
		}
	}
	var empty phoneTable
	if _, ok := empty.get("+447400123456"); ok {
		t.Error("an empty table has a number")
	}
}

// BenchmarkPhoneTable adds a million numbers and looks each up, as a
// resumed plan of a million recipients does.
func BenchmarkPhoneTable(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, 1_000_000)
	phones := make([]string, len(keys))
	for i := range keys {
		keys[i] = 447_000_000_000 + rng.Uint64N(1_000_000_000)
		phones[i] = keyPhone(keys[i])
	}
	b.ReportAllocs()
	for b.Loop() {
		var tab phoneTable
		for i, phone := range phones {
			v, _ := tab.ref(phone)
			*v = int32(i)
		}
		for _, k := range keys {
			if _, ok := tab.getKey(k); !ok {
				b.Fatal("lost a number")
			}
		}
	}
}
