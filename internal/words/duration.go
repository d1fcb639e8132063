package words

import (
	"fmt"
	"strings"
	"time"
)

// Duration writes d the way smsform reads a duration back, so that a
// person can copy it into a file or a flag: Go's form ([time.ParseDuration])
// without the zero units Go appends, "24h" rather than "24h0m0s", "1h30m",
// "90s", "250ms". It never writes days: a campaign's durations (a
// frequency cap's per:, a request timeout) are Go durations, and a hint
// must name a value they take.
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Wait writes how long until something happens, for a person to read
// rather than type, to the minute: "3 h 10 min", "2 d 4 h", "45 min",
// "less than a minute". A plan's schedule, apply's waits and the time a
// run has left are all written with it.
func Wait(d time.Duration) string {
	if d < time.Minute {
		return "less than a minute"
	}
	d = d.Round(time.Minute)
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case days > 0 && hours > 0:
		return fmt.Sprintf("%d d %d h", days, hours)
	case days > 0:
		return fmt.Sprintf("%d d", days)
	case hours > 0 && mins > 0:
		return fmt.Sprintf("%d h %d min", hours, mins)
	case hours > 0:
		return fmt.Sprintf("%d h", hours)
	}
	return fmt.Sprintf("%d min", mins)
}
