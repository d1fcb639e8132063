package plan

import "hash/maphash"

// bodyIndex finds the group of a body: an open-addressing table of group
// numbers, which for a million distinct bodies is a fraction of the size
// of a map keyed by the bodies.
type bodyIndex struct {
	seed  maphash.Seed
	slots []uint32 // group+1, 0 for empty; the length is a power of two
	n     int
}

// find returns the group of body among bodies, the groups' bodies.
func (x *bodyIndex) find(body string, bodies []string) (int, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := uint64(len(x.slots) - 1)
	for i := maphash.String(x.seed, body) & mask; ; i = (i + 1) & mask {
		g := x.slots[i]
		if g == 0 {
			return 0, false
		}
		if bodies[g-1] == body {
			return int(g - 1), true
		}
	}
}

// note records that bodies[gi], not found, is group gi's.
func (x *bodyIndex) note(gi int, bodies []string) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow(bodies)
	}
	x.insert(gi, bodies[gi])
	x.n++
}

func (x *bodyIndex) insert(gi int, body string) {
	mask := uint64(len(x.slots) - 1)
	i := maphash.String(x.seed, body) & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = uint32(gi + 1)
}

func (x *bodyIndex) grow(bodies []string) {
	if x.slots == nil {
		x.seed = maphash.MakeSeed()
		x.slots = make([]uint32, 1024)
		return
	}
	old := x.slots
	x.slots = make([]uint32, 2*len(old))
	for _, g := range old {
		if g != 0 {
			x.insert(int(g-1), bodies[g-1])
		}
	}
}
