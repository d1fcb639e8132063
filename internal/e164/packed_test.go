package e164

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

func TestPack(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"+447400123456", true}, {"+1", true}, {"+999999999999999", true}, {"+390612345678", true},
		{"+3906000000000", true},
		{"", false}, {"+", false}, {"447400123456", false}, {"+0123", false}, {"+1234567890123456", false},
		{"+44 7400", false}, {"+44a", false}, {"++44", false},
	} {
		k, ok := Pack(tc.in)
		if ok != tc.ok {
			t.Errorf("Pack(%q) ok = %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if k == 0 || k>>60 != 0 {
			t.Errorf("Pack(%q) = %#x: 0 or past 60 bits", tc.in, uint64(k))
		}
		if got := k.String(); got != tc.in {
			t.Errorf("Pack(%q).String() = %q", tc.in, got)
		}
		if got := k.Digits(); got != len(tc.in)-1 {
			t.Errorf("Pack(%q).Digits() = %d", tc.in, got)
		}
	}
}

// TestPackedOrder checks that packed numbers sort as their strings do,
// prefixes and trailing zeros included.
func TestPackedOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var phones []string
	for range 5000 {
		n := 1 + r.IntN(maxDigits)
		b := []byte{'+', byte('1' + r.IntN(9))}
		for range n - 1 {
			b = append(b, byte('0'+r.IntN(10)))
		}
		phones = append(phones, string(b))
		phones = append(phones, string(b)+"0") // a prefix of the next
	}
	keys := make([]Packed, 0, len(phones))
	for _, p := range phones {
		if k, ok := Pack(p); ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var strs []string
	for _, p := range phones {
		if _, ok := Pack(p); ok {
			strs = append(strs, p)
		}
	}
	slices.Sort(strs)
	for i := range keys {
		if keys[i].String() != strs[i] {
			t.Fatalf("at %d: packed order gives %s, string order %s", i, keys[i], strs[i])
		}
	}
}

// TestMap checks the map against a Go map through growth, for numbers that
// pack and strings that do not.
func TestMap(t *testing.T) {
	m := NewMap[int32](0)
	want := map[string]int32{}
	for i := range 100_000 {
		phone := "+44740" + strconv.Itoa(1_000_000+i*7%100_003)
		if i%1000 == 0 {
			phone = "legacy-" + strconv.Itoa(i%3000)
		}
		v, added := m.Ref(phone)
		if _, had := want[phone]; had == added {
			t.Fatalf("Ref(%q) added = %v, but present before: %v", phone, added, had)
		}
		*v += int32(i)
		want[phone] += int32(i)
	}
	if m.Len() != len(want) {
		t.Errorf("Len = %d, want %d", m.Len(), len(want))
	}
	for phone, w := range want {
		if got, ok := m.Get(phone); !ok || got != w {
			t.Fatalf("Get(%q) = %d, %v; want %d", phone, got, ok, w)
		}
	}
	for _, absent := range []string{"+447409999999", "legacy-x", "+1"} {
		if _, ok := m.Get(absent); ok {
			t.Errorf("Get(%q) found an absent number", absent)
		}
	}
	if _, ok := NewMap[bool](0).GetPacked(1); ok {
		t.Error("an empty map found something")
	}
	if got := Packed(0x0558000000000000).String(); got != "+447" {
		t.Errorf("String of a hand-packed number: %q", got)
	}
}

// AddPacked adds what it is given, once each, beside what the map has,
// whatever order and repeats it is given them in, and grows the map when
// they do not fit.
func TestMapAddPacked(t *testing.T) {
	m := NewMap[int32](0)
	had, _ := Pack("+447400000001")
	v, _ := m.RefPacked(had)
	*v = 7
	var ks []Packed
	want := map[Packed]bool{had: true}
	for i := range 50_000 {
		k, _ := Pack("+44740" + strconv.Itoa(1_000_000+i*7919%60_013))
		ks = append(ks, k)
		want[k] = true
	}
	ks = append(ks, ks[:1000]...) // some twice
	ks = append(ks, had)          // and one the map holds
	m.AddPacked(ks)
	if m.Len() != len(want) {
		t.Errorf("Len = %d, want %d", m.Len(), len(want))
	}
	for k := range want {
		if _, ok := m.GetPacked(k); !ok {
			t.Fatalf("%s added but not found", k)
		}
	}
	if got, _ := m.GetPacked(had); got != 7 {
		t.Errorf("the value of a number the map held became %d, want 7", got)
	}
	absent, _ := Pack("+447409999999")
	if _, ok := m.GetPacked(absent); ok {
		t.Error("found a number never added")
	}
}

func BenchmarkMapRef(b *testing.B) {
	keys := make([]Packed, 1<<20)
	for i := range keys {
		keys[i], _ = Pack("+4474" + strconv.Itoa(10_000_000+i*13))
	}
	b.ResetTimer()
	for b.Loop() {
		m := NewMap[int32](0)
		for _, k := range keys {
			v, _ := m.RefPacked(k)
			*v = 1
		}
	}
}

func TestStrict(t *testing.T) {
	for _, tc := range []struct {
		in, canon string
		notE164   bool
		invalid   bool
	}{
		{in: "+447400123459", canon: "+447400123459"},
		{in: "+4407400123459", canon: "+447400123459"}, // the national 0 kept
		{in: "+44 7400 123459", notE164: true},
		{in: "+0447400123459", notE164: true},
		{in: "447400123459", notE164: true},
		{in: "+12", invalid: true},
	} {
		canon, err := Strict(tc.in)
		switch {
		case tc.notE164:
			if !errors.Is(err, ErrNotE164) {
				t.Errorf("Strict(%q) = %q, %v; want ErrNotE164", tc.in, canon, err)
			}
		case tc.invalid:
			if err == nil || errors.Is(err, ErrNotE164) {
				t.Errorf("Strict(%q) = %q, %v; want the number refused", tc.in, canon, err)
			}
		case err != nil || canon != tc.canon:
			t.Errorf("Strict(%q) = %q, %v; want %q", tc.in, canon, err, tc.canon)
		}
	}
}
