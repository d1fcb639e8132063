package e164

import "errors"

// Packed is a number in E.164 form ("+" and 1 to 15 digits, the first not 0)
// packed into 60 bits: each digit plus one in four bits, the first digit
// highest, zeros after the last. Packed numbers compare as their strings do,
// no number packs to 0, and the top four bits are free. Plan and the state
// hold numbers this way (8 bytes instead of a string's 16 and its text) and
// keep sets of them in a [Map]; [Strict] checks a number's form with it.
type Packed uint64

// maxDigits is E.164's longest number.
const maxDigits = 15

// Pack packs s, reporting false unless it is "+" and 1 to 15 digits, the
// first not 0. It checks the form only: [Normalizer] says whether the
// number exists.
func Pack(s string) (Packed, bool) {
	if len(s) < 2 || len(s) > 1+maxDigits || s[0] != '+' || s[1] == '0' {
		return 0, false
	}
	var k Packed
	for i := 1; i <= maxDigits; i++ {
		k <<= 4
		if i < len(s) {
			d := s[i] - '0'
			if d > 9 {
				return 0, false
			}
			k |= Packed(d) + 1
		}
	}
	return k, true
}

// String returns the number in E.164 form.
func (k Packed) String() string {
	var buf [1 + maxDigits]byte
	return string(k.Append(buf[:0]))
}

// Append appends the number in E.164 form to b.
func (k Packed) Append(b []byte) []byte {
	b = append(b, '+')
	for shift := 4 * (maxDigits - 1); shift >= 0; shift -= 4 {
		d := byte(k>>shift) & 0xf
		if d == 0 {
			break
		}
		b = append(b, '0'+d-1)
	}
	return b
}

// Digits returns how many digits the number has.
func (k Packed) Digits() int {
	n := 0
	for shift := 4 * (maxDigits - 1); shift >= 0 && byte(k>>shift)&0xf != 0; shift -= 4 {
		n++
	}
	return n
}

// Map maps numbers to values of type V: open addressing with linear probing
// over slots that hold the packed number and its value side by side, so a
// lookup costs one cache miss and nothing is allocated per entry. A million
// numbers take a fraction of what a Go map of strings does. Strings that do
// not pack (a state written by hand, say) go to an ordinary map beside it.
//
// Get may run on several goroutines at once while nothing changes the map.
type Map[V any] struct {
	slots []mapSlot[V] // a power of two long; key 0 is empty
	shift uint         // 64 - log2(len(slots))
	n     int
	other map[string]*V
}

type mapSlot[V any] struct {
	key Packed
	val V
}

// NewMap returns a map with room for n numbers before it grows.
func NewMap[V any](n int) *Map[V] {
	m := &Map[V]{}
	m.resize(n)
	return m
}

// Len is the number of entries.
func (m *Map[V]) Len() int { return m.n + len(m.other) }

// Ref returns phone's value, adding phone with V's zero value if it is new,
// and whether it was. The pointer is good until the next Ref.
func (m *Map[V]) Ref(phone string) (v *V, added bool) {
	if k, ok := Pack(phone); ok {
		return m.RefPacked(k)
	}
	if v, ok := m.other[phone]; ok {
		return v, false
	}
	if m.other == nil {
		m.other = make(map[string]*V)
	}
	v = new(V)
	m.other[phone] = v
	return v, true
}

// RefPacked is Ref of a packed number.
func (m *Map[V]) RefPacked(k Packed) (v *V, added bool) {
	if 4*(m.n+1) > 3*len(m.slots) {
		m.resize(m.n + 1) // doubles: a load of a half again
	}
	i := m.find(k)
	s := &m.slots[i]
	if s.key == k {
		return &s.val, false
	}
	s.key = k
	m.n++
	return &s.val, true
}

// AddPacked adds the numbers ks, each with V's zero value if it is new. It
// puts them in the order of their slots first (a pass of a counting sort
// on the top bits of their hash), so that the table is filled walking it
// rather than missing the cache at each number: a million numbers in a
// quarter of the time of as many RefPacked.
func (m *Map[V]) AddPacked(ks []Packed) {
	if 4*(m.n+len(ks)) > 3*len(m.slots) {
		m.resize(m.n + len(ks))
	}
	const bits = 12 // 4,096 runs, each within a few pages of the table
	var start [1<<bits + 1]int
	for _, k := range ks {
		start[hash(k)>>(64-bits)+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	ordered := make([]Packed, len(ks))
	for _, k := range ks {
		h := hash(k) >> (64 - bits)
		ordered[start[h]] = k
		start[h]++
	}
	for _, k := range ordered {
		m.RefPacked(k)
	}
}

// Get returns phone's value, if phone is in the map.
func (m *Map[V]) Get(phone string) (V, bool) {
	if k, ok := Pack(phone); ok {
		return m.GetPacked(k)
	}
	if v, ok := m.other[phone]; ok {
		return *v, true
	}
	var zero V
	return zero, false
}

// GetPacked is Get of a packed number.
func (m *Map[V]) GetPacked(k Packed) (V, bool) {
	if m.n > 0 {
		if s := &m.slots[m.find(k)]; s.key == k {
			return s.val, true
		}
	}
	var zero V
	return zero, false
}

// find returns the slot of k: where it is, or the empty slot where it would
// go. Multiplying by 2^64/φ (Fibonacci hashing) and keeping the top bits
// sends numbers that differ in their last digits, as the numbers of a list
// often do, far apart.
func (m *Map[V]) find(k Packed) int {
	mask := len(m.slots) - 1
	for i := int(hash(k) >> m.shift); ; i = (i + 1) & mask {
		if s := &m.slots[i]; s.key == k || s.key == 0 {
			return i
		}
	}
}

func hash(k Packed) uint64 { return uint64(k) * 0x9e3779b97f4a7c15 }

// resize makes room for n numbers at a load of at most a half, and puts the
// present ones back.
func (m *Map[V]) resize(n int) {
	size, shift := 1024, uint(64-10)
	for size < 2*n {
		size, shift = size*2, shift-1
	}
	old := m.slots
	m.slots, m.shift = make([]mapSlot[V], size), shift
	for _, s := range old {
		if s.key != 0 {
			m.slots[m.find(s.key)] = s
		}
	}
}

// ErrNotE164 is Strict's error for a string that is not "+" and 1 to 15
// digits, the first not 0.
var ErrNotE164 = errors.New("not an E.164 number (+ then up to 15 digits, the first not 0)")

// Strict checks a number that must already be written in E.164, as an API
// request or a sender must: it returns ErrNotE164 when s is not of that
// form, the Normalizer's error when no such number exists, and otherwise
// the number as E.164 writes it, which the caller compares with s (a
// national prefix kept after the country code writes it otherwise).
func Strict(s string) (string, error) {
	if _, ok := Pack(s); !ok {
		return "", ErrNotE164
	}
	num, err := NewNormalizer("").Normalize(s)
	if err != nil {
		return "", err
	}
	return num.E164, nil
}

// Each calls fn with every entry's value, in no order. fn must not change
// the map.
func (m *Map[V]) Each(fn func(v V)) {
	for i := range m.slots {
		if m.slots[i].key != 0 {
			fn(m.slots[i].val)
		}
	}
	for _, v := range m.other {
		fn(*v)
	}
}
