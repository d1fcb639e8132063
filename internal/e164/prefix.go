package e164

// Prefix returns the number's first n digits as an integer (+12025550101:
// Prefix(4) is 1202), and false when it has fewer than n digits or n is not
// between 1 and 15. It reads the packed digits in place: rules kept by
// calling code or area code look a number up without making its string.
func (k Packed) Prefix(n int) (int, bool) {
	if n < 1 || n > maxDigits {
		return 0, false
	}
	v := 0
	for i := range n {
		d := int(k>>(4*(maxDigits-1-i))) & 0xf
		if d == 0 {
			return 0, false
		}
		v = v*10 + d - 1
	}
	return v, true
}
