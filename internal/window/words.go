package window

import (
	"fmt"
	"time"
)

// Describe words an opening as seen at now, for plan and apply output:
// "window opens 09:00 America/New_York, in 3 h 10 min".
func (o Opening) Describe(now time.Time) string {
	switch o.Reason {
	case ReasonNow:
		return "now"
	case ReasonWindow:
		return fmt.Sprintf("window opens %s %s, in %s", o.Local, o.Zone, Wait(o.At.Sub(now)))
	case ReasonNotBefore:
		return fmt.Sprintf("campaign starts %s (not_before), in %s", o.At.UTC().Format(time.RFC3339), Wait(o.At.Sub(now)))
	case ReasonEnded:
		return "not_after has passed, or passes before their window opens"
	case ReasonNever:
		return fmt.Sprintf("their window is not open in all of their zones at once within %d days", int(Horizon.Hours()/24))
	}
	return string(o.Reason)
}

// Wait words a duration for a person, to the minute: "3 h 10 min",
// "2 d 4 h", "less than a minute".
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
