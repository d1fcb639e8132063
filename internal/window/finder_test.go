package window

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// TestFinderCacheAgrees: a Finder that has seen many numbers (and answers
// from what it keeps, by area code for most +1 numbers) gives each number
// the zones a new Finder and the library give it, unknown zones and the
// fallback included. The numbers cover every +1 area code, several
// exchanges each.
func TestFinderCacheAgrees(t *testing.T) {
	sc := mustCompile(t, Spec{From: "08:00", To: "21:00", Fallback: "Europe/Paris"})
	var numbers []string
	for i := range 8000 {
		numbers = append(numbers, fmt.Sprintf("+1%03d%03d4567", 200+i%800, 200+i*7%800))
	}
	numbers = append(numbers, "+80012345678", "+447400123456", "+918123456789", "+61891234567", "+8821234567")
	shared := sc.Finder()
	for round := range 2 {
		for _, n := range numbers {
			got, gotFB := shared.Zones(n)
			want, wantFB := sc.Finder().Zones(n)
			if !slices.Equal(got.Names(), want.Names()) || gotFB != wantFB {
				t.Fatalf("round %d, %s: %v (fallback %v), a new Finder says %v (%v)", round, n, got.Names(), gotFB, want.Names(), wantFB)
			}
			// The library's list, named as the number's country knows its
			// zones: what a Finder gives without any cache.
			lib, _ := phonenumbers.GetTimezonesForPrefix(n)
			_, country := callingCountry(n)
			if want := sc.principalZones(country, lib); !gotFB && !slices.Equal(got.Names(), want) {
				t.Fatalf("%s: %v, the library's %v named by %s is %v", n, got.Names(), lib, country, want)
			}
		}
	}
}
