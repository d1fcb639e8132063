package window

import (
	"fmt"
	"time"

	"github.com/smsform/smsform/internal/words"
)

// Describe words an opening as seen at now, for plan and apply output:
// "window opens 09:00 America/New_York, in 3 h 10 min".
func (o Opening) Describe(now time.Time) string {
	switch o.Reason {
	case ReasonNow:
		return "now"
	case ReasonWindow:
		return fmt.Sprintf("window opens %s %s, in %s", o.Local, o.Zone, words.Wait(o.At.Sub(now)))
	case ReasonNotBefore:
		return fmt.Sprintf("campaign starts %s (not_before), in %s", o.At.UTC().Format(time.RFC3339), words.Wait(o.At.Sub(now)))
	case ReasonEnded:
		return "not_after has passed, or passes before their window opens"
	case ReasonNever:
		return fmt.Sprintf("their window is not open in all of their zones at once within %d days", int(Horizon.Hours()/24))
	}
	return string(o.Reason)
}
