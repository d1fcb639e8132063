package cli

import (
	"errors"
	"strings"
	"testing"
)

func TestParseLimit(t *testing.T) {
	for _, tc := range []struct {
		flag   string
		toSend int
		want   int
		bad    bool
	}{
		{"", 1000, 0, false},
		{"500", 1000, 500, false},
		{"500", 10, 500, false}, // more than there is: the run sends it all
		{"1%", 1204, 12, false}, // rounded down
		{"1%", 50, 1, false},    // at least one
		{"2.5%", 1000, 25, false},
		{"100%", 7, 7, false},
		{"0", 0, 0, true},
		{"-3", 0, 0, true},
		{"0%", 0, 0, true},
		{"101%", 0, 0, true},
		{"150%", 0, 0, true},
		{"NaN%", 0, 0, true},
		{"ten", 0, 0, true},
		{"5%%", 0, 0, true},
	} {
		l, err := parseLimit(tc.flag)
		switch {
		case tc.bad && !errors.Is(err, ErrUsage):
			t.Errorf("--limit %q: %v, want a usage error", tc.flag, err)
		case !tc.bad && err != nil:
			t.Errorf("--limit %q: %v", tc.flag, err)
		case !tc.bad && l.of(tc.toSend) != tc.want:
			t.Errorf("--limit %q of %d: %d, want %d", tc.flag, tc.toSend, l.of(tc.toSend), tc.want)
		}
	}
	// A percentage out of range is not called "neither a number nor a
	// percentage".
	if _, err := parseLimit("150%"); err == nil || !strings.Contains(err.Error(), "at most 100") {
		t.Errorf("--limit 150%%: %v", err)
	}
}
