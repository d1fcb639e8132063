package plan

import "strconv"

// phoneKey packs a number in E.164 ("+" and up to 19 digits, the first not
// 0) into an integer, which makes sets of a million numbers far smaller
// and faster than sets of strings. Anything else reports false. No number
// packs to 0.
func phoneKey(phone string) (uint64, bool) {
	if len(phone) < 2 || len(phone) > 20 || phone[0] != '+' || phone[1] == '0' {
		return 0, false
	}
	var k uint64
	for i := 1; i < len(phone); i++ {
		c := phone[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		k = k*10 + uint64(c-'0')
	}
	return k, true
}

// keyPhone is the inverse of phoneKey.
func keyPhone(k uint64) string {
	var buf [21]byte
	return string(strconv.AppendUint(append(buf[:0], '+'), k, 10))
}

// phoneTable maps phone numbers to an int32 each. A plan keeps one entry
// for every distinct number of its lists and exclusions, which serves for
// duplicates, exclusions and, once the state is read, what the state holds:
// one lookup per number and per record instead of one in each of several Go
// maps. It is open addressing with linear probing over slots that hold the
// packed number and its value side by side, so a lookup costs one cache
// miss, and it allocates nothing per entry.
//
// Lookups (get, getKey) may run on several goroutines at once while nothing
// adds.
type phoneTable struct {
	slots []phoneSlot // a power of two long, at most half full; key 0 is empty
	n     int
	other map[string]*int32 // numbers phoneKey does not take (none from a campaign's lists)
}

type phoneSlot struct {
	key uint64
	val int32
}

// ref returns phone's value, adding phone with the value 0 if it is new,
// and whether it was. The pointer is good until the next ref.
func (t *phoneTable) ref(phone string) (v *int32, added bool) {
	k, ok := phoneKey(phone)
	if !ok {
		if v, ok := t.other[phone]; ok {
			return v, false
		}
		if t.other == nil {
			t.other = make(map[string]*int32)
		}
		v = new(int32)
		t.other[phone] = v
		return v, true
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := hashKey(k) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return &s.val, false
		}
		if s.key == 0 {
			s.key = k
			t.n++
			return &s.val, true
		}
	}
}

// get returns phone's value, if phone is in the table.
func (t *phoneTable) get(phone string) (int32, bool) {
	if k, ok := phoneKey(phone); ok {
		return t.getKey(k)
	}
	if v, ok := t.other[phone]; ok {
		return *v, true
	}
	return 0, false
}

// getKey is get of a number phoneKey packed to k.
func (t *phoneTable) getKey(k uint64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := hashKey(k) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return s.val, true
		}
		if s.key == 0 {
			return 0, false
		}
	}
}

func (t *phoneTable) grow() {
	old := t.slots
	t.slots = make([]phoneSlot, max(2*len(old), 1024))
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.key == 0 {
			continue
		}
		i := hashKey(s.key) & mask
		for t.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// hashKey spreads packed numbers over the table. Numbers of a list are
// often runs that differ in their last digits: multiplying by 2^64/φ
// (Fibonacci hashing) sends those far apart, and the rotation brings the
// product's well-mixed high bits down to where the mask takes them.
func hashKey(k uint64) uint64 {
	h := k * 0x9e3779b97f4a7c15
	return h>>32 | h<<32
}
