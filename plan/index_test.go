package plan

import (
	"strings"
	"testing"

	"github.com/smsform/smsform/internal/e164"
)

// TestIndex finds keys through slots that hold only ids and a tag: keys that
// share a hash, or its tag, or its slot, are told apart by their keys, and
// the table grows without losing any.
func TestIndex(t *testing.T) {
	var keys []uint64
	hash := func(k uint64) uint64 { return hashNumber(e164.Packed(k % 1000)) } // twenty keys a hash
	var x index
	for i := range 20_000 {
		k := uint64(i) * 7919
		if _, ok := x.find(hash(k), func(id int32) bool { return keys[id] == k }); ok {
			t.Fatalf("key %d found before it was added", k)
		}
		if err := x.add(hash(k), int32(len(keys)), func(id int32) uint64 { return hash(keys[id]) }); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	for id, k := range keys {
		got, ok := x.find(hash(k), func(id int32) bool { return keys[id] == k })
		if !ok || got != int32(id) {
			t.Fatalf("key %d: id %d, %v; want %d", k, got, ok, id)
		}
	}
	if len(x.slots) < len(keys)*4/3 {
		t.Fatalf("%d slots for %d keys: fuller than three quarters", len(x.slots), len(keys))
	}
	err := x.add(1, maxIDs, nil)
	if err == nil || !strings.Contains(err.Error(), "split the campaign") {
		t.Fatalf("id past the limit: %v", err)
	}
}

func TestColumnExtend(t *testing.T) {
	var c column[int32]
	c.append(7)
	c.extend(blockLen + 5)
	c.append(9)
	if c.len() != blockLen+7 || c.at(0) != 7 || c.at(1) != 0 || c.at(blockLen+5) != 0 || c.at(blockLen+6) != 9 {
		t.Errorf("len %d, values %d %d %d %d", c.len(), c.at(0), c.at(1), c.at(blockLen+5), c.at(blockLen+6))
	}
	*c.ptr(blockLen) = 3
	if c.at(blockLen) != 3 {
		t.Error("ptr does not write where at reads")
	}
}
