package window

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestParseWeek(t *testing.T) {
	tests := []struct {
		in, want string // want "": the same as in
	}{
		{"mon-sun 08:00-21:00", ""},
		{"mon-sat 09:00-21:00, sun 12:00-21:00", ""},
		{"sun 12:00-21:00, mon-sat 09:00-21:00", "mon-sat 09:00-21:00, sun 12:00-21:00"},
		{"mon 09:00-17:00, wed 09:00-17:00", ""},
		{"mon-fri 00:00-24:00", ""},
		{"closed", ""},
	}
	for _, tt := range tests {
		w, err := ParseWeek(tt.in)
		if err != nil {
			t.Errorf("ParseWeek(%q): %v", tt.in, err)
			continue
		}
		want := tt.want
		if want == "" {
			want = tt.in
		}
		if got := w.String(); got != want {
			t.Errorf("ParseWeek(%q).String() = %q, want %q", tt.in, got, want)
		}
	}
	for _, bad := range []string{"", "mon", "mon 9-17", "sat-mon 09:00-17:00", "xyz 09:00-17:00",
		"mon 17:00-09:00", "mon 09:00-17:00, mon 10:00-11:00", "mon-fri 09:00-25:00"} {
		if _, err := ParseWeek(bad); err == nil {
			t.Errorf("ParseWeek(%q) accepted it", bad)
		}
	}
}

func TestSpecWeekAndIntersect(t *testing.T) {
	w := Spec{Days: []string{"mon", "sun"}, From: "07:00", To: "20:30"}.Week()
	if got := w.String(); got != "mon 07:00-20:30, sun 07:00-20:30" {
		t.Errorf("Week() = %q", got)
	}
	if got := (Spec{}).Week(); got != AllDay() {
		t.Errorf("a spec without a window: %v", got)
	}
	tx, _ := ParseWeek("mon-sat 09:00-21:00, sun 12:00-21:00")
	got := w.Intersect(tx).String()
	if got != "mon 09:00-20:30, sun 12:00-20:30" {
		t.Errorf("Intersect = %q", got)
	}
	if !w.Narrower(tx) || AllDay().Intersect(tx) != tx || tx.Narrower(AllDay()) {
		t.Error("Narrower is wrong")
	}
	short, _ := ParseWeek("sun 10:00-11:00")
	if !short.Intersect(tx).Closed() {
		t.Errorf("Sunday 10-11 within Texas's hours should be closed, got %s", short.Intersect(tx))
	}
}

// TestNarrow: a narrowed schedule is open exactly when both the campaign's
// window and the hours are, and Next finds its first opening, over random
// schedules, hours and moments (the same brute-force walk as
// TestNextProperty).
func TestNarrow(t *testing.T) {
	zones := []string{"America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles",
		"Pacific/Honolulu", "Asia/Kolkata", "Europe/London"}
	runs := 200
	if testing.Short() {
		runs = 40
	}
	rng := rand.New(rand.NewPCG(38, 2026))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range runs {
		spec := randomSpec(rng, base)
		sc := mustCompile(t, spec)
		hours := randomWeek(rng)
		n := sc.Narrow(hours)
		if n != sc.Narrow(hours) {
			t.Fatal("Narrow made two schedules of the same hours")
		}
		z := mustZones(t, sc, zones[rng.IntN(len(zones))])
		now := base.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Minute)
		for m := now; m.Before(now.Add(48 * time.Hour)); m = m.Add(37 * time.Minute) {
			inHours := hoursOpen(hours, z.locs[0], m)
			if got, want := n.Open(z, m), sc.Open(z, m) && inHours; got != want {
				t.Fatalf("run %d: %+v within %s at %s: Open = %v, want %v", i, spec, hours, m, got, want)
			}
		}
		got := n.Next(z, now)
		if got.Reason == ReasonNow {
			continue
		}
		end := now.Add(Horizon + time.Minute)
		if got.Reason == ReasonWindow || got.Reason == ReasonNotBefore {
			end = got.At
			if !n.Open(z, got.At) {
				t.Fatalf("run %d: Next gave %s, which is closed", i, got.At)
			}
		}
		for m := now; m.Before(end); m = m.Truncate(time.Minute).Add(time.Minute) {
			if !spec.NotAfter.IsZero() && !m.Before(spec.NotAfter) {
				break
			}
			if n.Open(z, m) {
				t.Fatalf("run %d: %+v within %s at %s: open at %s, before Next's %+v", i, spec, hours, now, m, got)
			}
		}
	}
}

func hoursOpen(w Week, loc *time.Location, t time.Time) bool {
	l := t.In(loc)
	sp := w[l.Weekday()]
	m := int16(l.Hour()*60 + l.Minute())
	return sp.From <= m && m < sp.To
}

func randomWeek(rng *rand.Rand) Week {
	var w Week
	for d := range w {
		if rng.IntN(5) == 0 {
			continue
		}
		from := rng.IntN(20*60) / 30 * 30
		w[d] = Span{int16(from), int16(min(from+30+rng.IntN(12*60)/30*30, 24*60))}
	}
	return w
}
