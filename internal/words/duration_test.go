package words

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{24 * time.Hour, "24h"},
		{48 * time.Hour, "48h"},
		{90 * 24 * time.Hour, "2160h"},
		{90 * time.Minute, "1h30m"},
		{time.Minute, "1m"},
		{90 * time.Second, "1m30s"},
		{time.Hour + time.Second, "1h0m1s"},
		{45 * time.Second, "45s"},
		{250 * time.Millisecond, "250ms"},
		{0, "0s"},
	} {
		if got := Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestDurationReadsBack: what Duration writes is what a campaign's
// duration fields and flags parse, to the same value.
func TestDurationReadsBack(t *testing.T) {
	for _, d := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 90 * 24 * time.Hour,
		3*time.Hour + 7*time.Minute, 2*time.Hour + 3*time.Second, 1500 * time.Millisecond, time.Microsecond} {
		back, err := time.ParseDuration(Duration(d))
		if err != nil || back != d {
			t.Errorf("Duration(%v) = %q reads back as %v, %v", d, Duration(d), back, err)
		}
	}
}

func TestWait(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "less than a minute"},
		{30 * time.Second, "less than a minute"},
		{45 * time.Minute, "45 min"},
		{3*time.Hour + 10*time.Minute, "3 h 10 min"},
		{3*time.Hour + 10*time.Minute + 29*time.Second, "3 h 10 min"},
		{3 * time.Hour, "3 h"},
		{50 * time.Hour, "2 d 2 h"},
		{48 * time.Hour, "2 d"},
	} {
		if got := Wait(tt.d); got != tt.want {
			t.Errorf("Wait(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
