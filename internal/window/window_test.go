package window

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nyaruka/phonenumbers"
)

func mustCompile(t *testing.T, s Spec) *Schedule {
	t.Helper()
	sc, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func mustZones(t *testing.T, sc *Schedule, names ...string) *Zones {
	t.Helper()
	z, err := sc.Zones(names)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var weekdays = []string{"mon", "tue", "wed", "thu", "fri"}

// TestNext holds Open and Next to moments worked out by hand, across
// daylight-saving changes and day boundaries.
func TestNext(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		zones  []string
		now    string
		reason Reason
		at     string // RFC 3339, when the reason has an instant
		local  string
		zone   string
	}{
		{name: "open", spec: Spec{From: "09:00", To: "20:00"}, zones: []string{"Europe/Paris"},
			now: "2026-11-23T08:00:00Z", reason: ReasonNow},
		{name: "before from, same day", spec: Spec{From: "09:00", To: "20:00"}, zones: []string{"America/New_York"},
			now: "2026-11-23T10:50:00Z", reason: ReasonWindow, at: "2026-11-23T14:00:00Z", local: "09:00", zone: "America/New_York"},
		{name: "to is exclusive", spec: Spec{From: "09:00", To: "20:00"}, zones: []string{"UTC"},
			now: "2026-11-23T20:00:00Z", reason: ReasonWindow, at: "2026-11-24T09:00:00Z", local: "09:00", zone: "UTC"},
		{name: "from is inclusive", spec: Spec{From: "09:00", To: "20:00"}, zones: []string{"UTC"},
			now: "2026-11-23T09:00:00Z", reason: ReasonNow},
		{name: "friday evening waits for monday", spec: Spec{Days: weekdays, From: "09:00", To: "17:00"}, zones: []string{"Asia/Tokyo"},
			now: "2026-11-27T09:00:00Z", reason: ReasonWindow, at: "2026-11-30T00:00:00Z", local: "09:00", zone: "Asia/Tokyo"},
		{name: "sunday 23:59 local is sunday", spec: Spec{Days: []string{"mon"}, From: "00:00", To: "24:00"}, zones: []string{"Europe/Berlin"},
			now: "2026-11-29T22:59:00Z", reason: ReasonWindow, at: "2026-11-29T23:00:00Z", local: "00:00", zone: "Europe/Berlin"},
		{name: "monday 00:00 local is open all day to 24:00", spec: Spec{Days: []string{"mon"}, From: "00:00", To: "24:00"}, zones: []string{"Europe/Berlin"},
			now: "2026-11-30T22:59:59Z", reason: ReasonNow},
		{name: "tuesday 00:00 local is closed again", spec: Spec{Days: []string{"mon"}, From: "00:00", To: "24:00"}, zones: []string{"Europe/Berlin"},
			now: "2026-11-30T23:00:00Z", reason: ReasonWindow, at: "2026-12-06T23:00:00Z", local: "00:00", zone: "Europe/Berlin"},
		// 2026-03-08: New York springs forward at 02:00 EST to 03:00 EDT.
		{name: "US spring forward: 09:00 is EDT", spec: Spec{From: "09:00", To: "20:00"}, zones: []string{"America/New_York"},
			now: "2026-03-08T05:00:00Z", reason: ReasonWindow, at: "2026-03-08T13:00:00Z", local: "09:00", zone: "America/New_York"},
		{name: "US spring forward: a window opening in the skipped hour opens at 03:00", spec: Spec{From: "02:30", To: "05:00"}, zones: []string{"America/New_York"},
			now: "2026-03-08T06:00:00Z", reason: ReasonWindow, at: "2026-03-08T07:00:00Z", local: "03:00", zone: "America/New_York"},
		{name: "US spring forward: the night before is still EST", spec: Spec{From: "20:00", To: "21:00"}, zones: []string{"America/New_York"},
			now: "2026-03-07T12:00:00Z", reason: ReasonWindow, at: "2026-03-08T01:00:00Z", local: "20:00", zone: "America/New_York"},
		// 2026-04-05: Sydney falls back at 03:00 AEDT to 02:00 AEST; 2026-10-04 springs forward at 02:00 AEST to 03:00 AEDT.
		{name: "Sydney fall back: 09:00 is AEST", spec: Spec{From: "09:00", To: "17:00"}, zones: []string{"Australia/Sydney"},
			now: "2026-04-04T12:00:00Z", reason: ReasonWindow, at: "2026-04-04T23:00:00Z", local: "09:00", zone: "Australia/Sydney"},
		{name: "Sydney spring forward: 09:00 is AEDT", spec: Spec{From: "09:00", To: "17:00"}, zones: []string{"Australia/Sydney"},
			now: "2026-10-03T12:00:00Z", reason: ReasonWindow, at: "2026-10-03T22:00:00Z", local: "09:00", zone: "Australia/Sydney"},
		{name: "Sydney spring forward: window in the skipped hour", spec: Spec{From: "02:15", To: "04:00"}, zones: []string{"Australia/Sydney"},
			now: "2026-10-03T14:00:00Z", reason: ReasonWindow, at: "2026-10-03T16:00:00Z", local: "03:00", zone: "Australia/Sydney"},
		// Several zones: open only when open in all; the last to open decides.
		{name: "two zones: the later one decides", spec: Spec{From: "09:00", To: "20:00"}, zones: []string{"America/Boise", "America/Los_Angeles"},
			now: "2026-11-23T16:30:00Z", reason: ReasonWindow, at: "2026-11-23T17:00:00Z", local: "09:00", zone: "America/Los_Angeles"},
		{name: "two zones: open in one only is closed", spec: Spec{From: "09:00", To: "20:00"}, zones: []string{"Australia/Adelaide", "Australia/Perth"},
			now: "2026-11-22T23:00:00Z", reason: ReasonWindow, at: "2026-11-23T01:00:00Z", local: "09:00", zone: "Australia/Perth"},
		{name: "two zones: both open", spec: Spec{From: "09:00", To: "20:00"}, zones: []string{"Australia/Adelaide", "Australia/Perth"},
			now: "2026-11-23T02:00:00Z", reason: ReasonNow},
		{name: "zones 12 hours apart never share a short window", spec: Spec{From: "09:00", To: "12:00"}, zones: []string{"Asia/Tokyo", "America/New_York"},
			now: "2026-11-23T02:00:00Z", reason: ReasonNever},
		// Campaign bounds.
		{name: "not_before first", spec: Spec{NotBefore: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)},
			now: "2026-11-23T02:00:00Z", reason: ReasonNotBefore, at: "2026-12-01T08:00:00Z"},
		{name: "not_before then window", spec: Spec{From: "09:00", To: "20:00", NotBefore: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}, zones: []string{"America/Chicago"},
			now: "2026-11-23T02:00:00Z", reason: ReasonWindow, at: "2026-12-01T15:00:00Z", local: "09:00", zone: "America/Chicago"},
		{name: "not_after passed", spec: Spec{NotAfter: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)},
			now: "2026-11-23T00:00:00Z", reason: ReasonEnded},
		{name: "not_after before the window opens", spec: Spec{From: "09:00", To: "20:00", NotAfter: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}, zones: []string{"America/New_York"},
			now: "2026-11-23T02:00:00Z", reason: ReasonEnded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := mustCompile(t, tt.spec)
			z := mustZones(t, sc, tt.zones...)
			now := at(t, tt.now)
			got := sc.Next(z, now)
			want := Opening{Reason: tt.reason, Local: tt.local, Zone: tt.zone}
			if tt.at != "" {
				want.At = at(t, tt.at)
			}
			if got.Reason != want.Reason || !got.At.Equal(want.At) || got.Local != want.Local || got.Zone != want.Zone {
				t.Fatalf("Next(%s) = %+v, want %+v", tt.now, got, want)
			}
			if open := sc.Open(z, now); open != (tt.reason == ReasonNow) {
				t.Errorf("Open(%s) = %v", tt.now, open)
			}
			if got.Reason == ReasonWindow || got.Reason == ReasonNotBefore {
				if !sc.Open(z, got.At) {
					t.Errorf("not open at the opening %s", got.At)
				}
				if sc.Open(z, got.At.Add(-time.Second)) {
					t.Errorf("open a second before the opening %s", got.At)
				}
			}
		})
	}
}

func TestCompileRefuses(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
	}{
		{"from after to", Spec{From: "20:00", To: "09:00"}},
		{"from equals to", Spec{From: "09:00", To: "09:00"}},
		{"unknown day", Spec{Days: []string{"monday"}, From: "09:00", To: "10:00"}},
		{"bad time", Spec{From: "9:00", To: "10:00"}},
		{"24:00 as from", Spec{From: "24:00", To: "24:00"}},
		{"minutes", Spec{From: "09:60", To: "10:00"}},
		{"sign", Spec{From: "+9:00", To: "10:00"}},
		{"unknown zone", Spec{From: "09:00", To: "10:00", Fallback: "Mars/Olympus"}},
		{"Local", Spec{From: "09:00", To: "10:00", Fallback: "Local"}},
		{"fallback without window", Spec{Fallback: "UTC"}},
		{"bounds reversed", Spec{NotBefore: time.Unix(100, 0), NotAfter: time.Unix(50, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Compile(tt.spec); err == nil {
				t.Errorf("Compile(%+v) accepted it", tt.spec)
			}
		})
	}
}

func TestFinder(t *testing.T) {
	sc := mustCompile(t, Spec{From: "09:00", To: "20:00"})
	withFallback := mustCompile(t, Spec{From: "09:00", To: "20:00", Fallback: "Europe/Paris"})
	tests := []struct {
		phone    string
		want     []string // nil: unknown
		fallback []string
	}{
		{"+12125550101", []string{"America/New_York"}, []string{"America/New_York"}},
		{"+12085550100", []string{"America/Boise", "America/Los_Angeles"}, []string{"America/Boise", "America/Los_Angeles"}},
		{"+61891234567", []string{"Australia/Adelaide", "Australia/Perth"}, []string{"Australia/Adelaide", "Australia/Perth"}},
		// GB's principal zone, not Guernsey's or the Isle of Man's, which
		// keep its clock; India's by its current name (issue 40.5, 35.11).
		{"+447700900123", []string{"Europe/London"}, nil},
		{"+918123456789", []string{"Asia/Kolkata"}, nil},
		{"+80012345678", nil, []string{"Europe/Paris"}},
		{"+8821234567", nil, []string{"Europe/Paris"}},
	}
	f, ff := sc.Finder(), withFallback.Finder()
	for _, tt := range tests {
		t.Run(tt.phone, func(t *testing.T) {
			z, fb := f.Zones(tt.phone)
			if got := z.Names(); !equal(got, tt.want) || fb {
				t.Errorf("Zones = %v (fallback %v), want %v", got, fb, tt.want)
			}
			z, fb = ff.Zones(tt.phone)
			want := tt.fallback
			if want == nil {
				want = tt.want
			}
			if got := z.Names(); !equal(got, want) || fb != (tt.want == nil) {
				t.Errorf("with fallback: Zones = %v (fallback %v), want %v", got, fb, want)
			}
		})
	}
	// One Zones per distinct list, whatever the number.
	a, _ := f.Zones("+12125550101")
	b, _ := f.Zones("+12125550199")
	if a != b {
		t.Error("two New York numbers got two Zones values")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestNextProperty checks Next against a brute-force walk over random
// schedules, zone sets and moments: the opening it gives is open, and no
// minute between the moment and the opening is.
func TestNextProperty(t *testing.T) {
	zones := []string{"America/New_York", "America/Los_Angeles", "America/Sao_Paulo", "Europe/London", "Europe/Paris",
		"Asia/Kolkata", "Asia/Kathmandu", "Asia/Tokyo", "Australia/Sydney", "Australia/Adelaide", "Australia/Perth",
		"Pacific/Auckland", "America/St_Johns", "Africa/Lagos", "UTC"}
	runs := 300
	if testing.Short() {
		runs = 60
	}
	rng := rand.New(rand.NewPCG(12, 2026))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range runs {
		spec := randomSpec(rng, base)
		sc := mustCompile(t, spec)
		n := 1 + rng.IntN(3)
		var names []string
		for range n {
			names = append(names, zones[rng.IntN(len(zones))])
		}
		z := mustZones(t, sc, names...)
		now := base.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Second)
		got := sc.Next(z, now)
		end := now.Add(Horizon + time.Minute)
		if got.Reason == ReasonWindow || got.Reason == ReasonNotBefore {
			end = got.At
			if !sc.Open(z, got.At) {
				t.Fatalf("run %d: %+v %v at %s: Next gave %s, which is closed", i, spec, names, now, got.At)
			}
		}
		if got.Reason == ReasonNow {
			if !sc.Open(z, now) {
				t.Fatalf("run %d: Next says now but Open says no", i)
			}
			continue
		}
		// Every minute boundary before the opening is closed (zones change
		// offset on whole minutes).
		for m := now; m.Before(end); m = m.Truncate(time.Minute).Add(time.Minute) {
			if !spec.NotAfter.IsZero() && !m.Before(spec.NotAfter) {
				break
			}
			if sc.Open(z, m) {
				t.Fatalf("run %d: %+v %v at %s: open at %s, before Next's %+v", i, spec, names, now, m, got)
			}
		}
	}
}

func randomSpec(rng *rand.Rand, base time.Time) Spec {
	var s Spec
	if rng.IntN(4) > 0 {
		from := rng.IntN(23*60) / 15 * 15
		to := from + 15 + rng.IntN(24*60-from-15+1)/15*15
		s.From = clock(from)
		s.To = clock(min(to, 24*60))
		for _, d := range DayNames() {
			if rng.IntN(3) > 0 {
				s.Days = append(s.Days, d)
			}
		}
		if len(s.Days) == 0 {
			s.Days = []string{DayNames()[rng.IntN(7)]}
		}
	}
	if rng.IntN(3) == 0 {
		s.NotBefore = base.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Minute)
	}
	if rng.IntN(3) == 0 {
		s.NotAfter = base.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Minute)
		if !s.NotBefore.IsZero() && !s.NotBefore.Before(s.NotAfter) {
			s.NotAfter = s.NotBefore.Add(48 * time.Hour)
		}
	}
	return s
}

func clock(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// TestFinderKnowsEveryRegion: the zones phonenumbers gives for the example
// numbers of every region all load from Go's embedded database, so no
// recipient is held back because the two disagree on a name.
func TestFinderKnowsEveryRegion(t *testing.T) {
	sc := mustCompile(t, Spec{From: "09:00", To: "20:00"})
	f := sc.Finder()
	regions := phonenumbers.GetSupportedRegions()
	if len(regions) < 200 {
		t.Fatalf("only %d regions", len(regions))
	}
	known := 0
	for region := range regions {
		for _, typ := range []phonenumbers.PhoneNumberType{phonenumbers.MOBILE, phonenumbers.FIXED_LINE} {
			n := phonenumbers.GetExampleNumberForType(region, typ)
			if n == nil {
				continue
			}
			e164 := phonenumbers.Format(n, phonenumbers.E164)
			names, _ := phonenumbers.GetTimezonesForPrefix(e164)
			if len(names) == 1 && names[0] == phonenumbers.UNKNOWN_TIMEZONE {
				continue
			}
			z, _ := f.Zones(e164)
			if z == nil {
				t.Errorf("%s (%s): zones %v do not all load", region, e164, names)
				continue
			}
			known++
		}
	}
	if known < 300 {
		t.Errorf("only %d example numbers with a known zone", known)
	}
}
