package plan

import (
	"fmt"

	"github.com/smsform/smsform/internal/words"
)

// index finds the id of a key whose value is kept elsewhere (a number in
// the recipients' column, a body's hash in the bodies'): an open-addressing
// table of four-byte slots, which for ten million keys is a quarter of a
// table that holds them. A slot holds id+1 in its low idBits and the top
// bits of the key's hash above, so that most slots that hold another key
// are passed over without reading that key.
type index struct {
	slots []uint32 // 0: empty; the length is a power of two
	n     int
}

const (
	idBits = 27
	idMask = 1<<idBits - 1
	// maxIDs is how many keys an index holds: more distinct recipients,
	// or bodies, than one plan handles.
	maxIDs = idMask - 1
)

func tagOf(h uint64) uint32 { return uint32(h>>(64-(32-idBits))) << idBits }

// find returns the id of the key of hash h for which same(id) is true.
func (x *index) find(h uint64, same func(id int32) bool) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := uint64(len(x.slots) - 1)
	tag := tagOf(h)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return 0, false
		}
		if s&^idMask == tag && same(int32(s&idMask)-1) {
			return int32(s&idMask) - 1, true
		}
	}
}

// add records id, not found, as the key of hash h; hashOf gives the hash of
// any id added before, to grow the table.
func (x *index) add(h uint64, id int32, hashOf func(id int32) uint64) error {
	if id >= maxIDs {
		return fmt.Errorf("more than %s distinct recipients or bodies in one plan: split the campaign", words.Count(maxIDs))
	}
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow(hashOf)
	}
	x.insert(h, id)
	x.n++
	return nil
}

func (x *index) insert(h uint64, id int32) {
	mask := uint64(len(x.slots) - 1)
	i := h & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = tagOf(h) | uint32(id+1)
}

// grow doubles the table, putting back the ids in order: they are read
// from their column one after the other rather than at random.
func (x *index) grow(hashOf func(id int32) uint64) {
	size := 1024
	if x.slots != nil {
		size = 2 * len(x.slots)
	}
	x.slots = make([]uint32, size)
	for id := range int32(x.n) {
		x.insert(hashOf(id), id)
	}
}
