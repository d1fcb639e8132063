package state

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// TestKnown drives known with random changes, some rolled back, against a
// plain map.
func TestKnown(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	k := newKnown(0)
	ref := map[string]Status{}
	phone := func() string {
		if rng.IntN(10) == 0 {
			return fmt.Sprintf("other-%d", rng.IntN(500))
		}
		return fmt.Sprintf("+44%d", rng.IntN(20000))
	}
	for round := range 300 {
		saved := maps.Clone(ref)
		mark := k.mark()
		for range rng.IntN(200) {
			p := phone()
			switch rng.IntN(3) {
			case 0:
				c := Status(rng.IntN(4))
				k.set(p, c)
				ref[p] = c
			case 1:
				c := k.check(p)
				if c != ref[p] {
					t.Fatalf("round %d: check(%s) = %d, want %d", round, p, c, ref[p])
				}
				if c != Sent && c != InDoubt {
					ref[p] = InDoubt
				}
			case 2:
				if c := k.get(p); c != ref[p] {
					t.Fatalf("round %d: get(%s) = %d, want %d", round, p, c, ref[p])
				}
			}
		}
		if rng.IntN(3) == 0 {
			k.rollback(mark)
			ref = saved
		} else {
			k.commit()
		}
		for p, c := range ref {
			if got := k.get(p); got != c {
				t.Fatalf("round %d: %s is %d, want %d", round, p, got, c)
			}
		}
	}
	if n := k.statuses.Len(); n <= 1024 {
		t.Errorf("the map never grew (%d numbers)", n)
	}
}
