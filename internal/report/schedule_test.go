package report

import (
	"testing"
	"time"

	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/plan"
)

// TestLabelNamesEachZonesTime: zones that open at the same instant at
// different hours are each named with their own, earliest first; zones
// that share an hour share its mention.
func TestLabelNamesEachZonesTime(t *testing.T) {
	at := time.Date(2026, 3, 8, 12, 30, 0, 0, time.UTC)
	s := &plan.Schedule{At: at}
	w := plan.When{Opening: window.Opening{Reason: window.ReasonWindow, At: at.Add(30 * time.Minute), Zone: "America/Chicago", Local: "08:00"}}
	for _, c := range []struct {
		zones, locals []string
		want          string
	}{
		{[]string{"America/Chicago", "America/New_York"}, []string{"08:00", "09:00"},
			"window opens 08:00 America/Chicago, 09:00 America/New_York, in 30 min"},
		{[]string{"America/Detroit", "America/New_York", "America/Puerto_Rico"}, []string{"09:00", "09:00", "09:00"},
			"window opens 09:00 America/Detroit, America/New_York, America/Puerto_Rico, in 30 min"},
		{[]string{"America/Detroit", "America/New_York", "America/Puerto_Rico"}, []string{"08:00", "08:00", "07:00"},
			"window opens 07:00 America/Puerto_Rico, 08:00 America/Detroit, America/New_York, in 30 min"},
		{[]string{"A/a", "B/b", "C/c", "D/d"}, []string{"09:00", "08:00", "09:00", "07:00"},
			"window opens 07:00 D/d, 08:00 B/b, 09:00 A/a and 1 more zone, in 30 min"},
	} {
		w.Zones, w.Locals = c.zones, c.locals
		if got := label(s, w); got != c.want {
			t.Errorf("%v at %v:\n got %s\nwant %s", c.zones, c.locals, got, c.want)
		}
	}
}
