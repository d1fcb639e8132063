package e164

import (
	"fmt"
	"testing"
)

// BenchmarkMaskIn: a body that prints its recipient's number, alone in its
// batch (a personalised campaign), and a body with a hotline shared by a
// batch of 1,000.
func BenchmarkMaskIn(b *testing.B) {
	b.Run("personalised", func(b *testing.B) {
		for b.Loop() {
			MaskIn("Hi Ann, your number is +447400123459, call 0800 765 4321", "+447400123459")
		}
	})
	b.Run("no digits", func(b *testing.B) {
		for b.Loop() {
			MaskIn("Hi Ann, the spring sale starts today. Reply STOP to opt out.", "+447400123459")
		}
	})
	nums := make([]string, 1000)
	for i := range nums {
		nums[i] = fmt.Sprintf("+4474001%05d", i)
	}
	b.Run("batch of 1000", func(b *testing.B) {
		for b.Loop() {
			MaskIn("The spring sale starts today: call 0800 765 4321. Reply STOP to opt out.", nums...)
		}
	})
}
