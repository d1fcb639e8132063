package e164

import "testing"

func TestPrefix(t *testing.T) {
	tests := []struct {
		number string
		n      int
		want   int
		ok     bool
	}{
		{"+12025550101", 1, 1, true},
		{"+12025550101", 4, 1202, true},
		{"+12025550101", 11, 12025550101, true},
		{"+12025550101", 12, 0, false},
		{"+918123456789", 2, 91, true},
		{"+447700900123", 0, 0, false},
		{"+123456789012345", 15, 123456789012345, true},
		{"+123456789012345", 16, 0, false},
		{"+10", 2, 10, true},
	}
	for _, tt := range tests {
		k, ok := Pack(tt.number)
		if !ok {
			t.Fatalf("Pack(%q) failed", tt.number)
		}
		got, gotOK := k.Prefix(tt.n)
		if got != tt.want || gotOK != tt.ok {
			t.Errorf("%s.Prefix(%d) = %d, %v; want %d, %v", tt.number, tt.n, got, gotOK, tt.want, tt.ok)
		}
	}
}
