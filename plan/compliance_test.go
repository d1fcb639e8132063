package plan

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/internal/window"
)

// A Florida (Miami), a Georgia (Atlanta), a Texas (Dallas) and a Canadian
// (Toronto) number, and a UK one.
const usList = "phone,name\n+13052345678,Ann\n+14042345678,Ben\n+12142345678,Cy\n+14162345678,Di\n+447400123459,Ed\n"

func usCampaign(t *testing.T, keys, body string) *campaign.Campaign {
	t.Helper()
	return testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\n"+keys+"body: "+body+"\n", map[string]string{"l.csv": usList})
}

func mustPlan(t *testing.T, c *campaign.Campaign) *Plan {
	t.Helper()
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// hoursOf maps each recipient to its batch's hours ("-" for none).
func hoursOf(p *Plan) map[string]string {
	got := map[string]string{}
	for _, b := range p.AllBatches() {
		for _, r := range b.Recipients {
			got[r] = b.Hours
			if b.Hours == "" {
				got[r] = "-"
			}
		}
	}
	return got
}

func verdict(t *testing.T, p *Plan, id string) RuleVerdict {
	t.Helper()
	for _, v := range p.Compliance.Rules {
		if v.ID == id {
			return v
		}
	}
	t.Fatalf("no verdict for %s", id)
	return RuleVerdict{}
}

// TestComplianceHours: without a send window the law's hours are each
// recipient's window; a Florida number at 20:30 its time waits until 8:00
// while a Georgia number is sent; a Texas number waits until noon on a
// Sunday; numbers the rules do not concern need no zone.
func TestComplianceHours(t *testing.T) {
	p := mustPlan(t, usCampaign(t, "compliance: [us]\n", "Sale today, {{ .name }}. Reply STOP to opt out"))
	want := map[string]string{
		"+13052345678":  "mon-sun 08:00-20:00",
		"+14042345678":  "mon-sun 08:00-21:00",
		"+12142345678":  "mon-sat 09:00-21:00, sun 12:00-21:00",
		"+14162345678":  "-",
		"+447400123459": "-",
	}
	got := hoursOf(p)
	for n, h := range want {
		if got[n] != h {
			t.Errorf("%s: hours %q, want %q", n, got[n], h)
		}
	}
	if s := p.Summary; s.ToSend != 5 || s.NoTimezone != 0 || !p.Timed() || !p.HasLawHours() {
		t.Errorf("summary %+v, timed %v", s, p.Timed())
	}
	// Tuesday 20:30 in Miami and Atlanta (Eastern), 19:30 in Dallas.
	if err := p.ScheduleAt(time.Date(2026, 12, 2, 1, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	now, waiting := whenOf(p)
	if !strings.Contains(now, "+14042345678") || !strings.Contains(now, "+12142345678") || strings.Contains(now, "+13052345678") {
		t.Errorf("sent now: %s", now)
	}
	if waiting["+13052345678"] != "08:00 America/New_York" {
		t.Errorf("Florida waits for %q, want 08:00 America/New_York", waiting["+13052345678"])
	}
	// Sunday 10:00 in Dallas: Texas waits until noon, Georgia (11:00) goes.
	if err := p.ScheduleAt(time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	now, waiting = whenOf(p)
	if waiting["+12142345678"] != "12:00 America/Chicago" || !strings.Contains(now, "+14042345678") {
		t.Errorf("Sunday: now %s, waiting %v", now, waiting)
	}
	// Without a window every hours rule sets its recipients' hours.
	if v := verdict(t, p, "us-tcpa-hours"); v.Verdict != VerdictNarrowed || v.Recipients != 3 || v.Narrowed != 3 {
		t.Errorf("us-tcpa-hours: %+v", v)
	}
	if v := verdict(t, p, "us-fl-cap"); v.Verdict != VerdictAtSend || v.Recipients != 1 {
		t.Errorf("us-fl-cap: %+v", v)
	}
	if v := verdict(t, p, "us-ok-hours"); v.Verdict != VerdictPass || v.Recipients != 0 {
		t.Errorf("us-ok-hours: %+v", v)
	}
	if v := verdict(t, p, "us-opt-out"); v.Verdict != VerdictPass || v.Recipients != 5 || v.Source == "" || v.Date != "2023-05-01" {
		t.Errorf("us-opt-out: %+v", v)
	}
}

// whenOf returns the recipients a plan's schedule sends now, and for the
// others the local time and zone their window opens.
func whenOf(p *Plan) (now string, waiting map[string]string) {
	waiting = map[string]string{}
	for i, b := range p.AllBatches() {
		w := p.Schedule.Batch(i)
		for _, r := range b.Recipients {
			if w.Reason == window.ReasonNow {
				now += r + " "
			} else {
				waiting[r] = w.Local + " " + w.Zone
			}
		}
	}
	return now, waiting
}

// TestComplianceNarrows: a send window wider than the law's is narrowed per
// recipient, and the verdicts say by which rule for how many; a narrower
// one is kept.
func TestComplianceNarrows(t *testing.T) {
	wide := mustPlan(t, usCampaign(t, "compliance: [us]\nsend_window: {from: \"09:00\", to: \"21:00\"}\n", "Sale. Reply STOP to opt out"))
	if v := verdict(t, wide, "us-fl-hours"); v.Verdict != VerdictNarrowed || v.Narrowed != 1 || v.NarrowedTo != "mon-sun 09:00-20:00" {
		t.Errorf("us-fl-hours: %+v", v)
	}
	// A window of weekdays stays one: what the rule leaves of it is said,
	// not the rule's hours of every day.
	weekdays := mustPlan(t, usCampaign(t, "compliance: [us]\nsend_window: {days: [mon, tue, wed, thu, fri], from: \"07:00\", to: \"21:00\"}\n", "Sale. Reply STOP to opt out"))
	if v := verdict(t, weekdays, "us-tcpa-hours"); v.Verdict != VerdictNarrowed || v.Hours != "mon-sun 08:00-21:00" || v.NarrowedTo != "mon-fri 08:00-21:00" {
		t.Errorf("us-tcpa-hours of a weekdays window: %+v", v)
	}
	if v := verdict(t, weekdays, "us-fl-hours"); v.NarrowedTo != "mon-fri 08:00-20:00" {
		t.Errorf("us-fl-hours of a weekdays window: %+v", v)
	}
	if v := verdict(t, wide, "us-tcpa-hours"); v.Verdict != VerdictPass || v.Recipients != 3 {
		t.Errorf("us-tcpa-hours with 09:00-21:00: %+v", v)
	}
	// 20:30 in Miami: closed for Florida, open for Georgia, as the window
	// alone would not say.
	if err := wide.ScheduleAt(time.Date(2026, 12, 2, 1, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if now, _ := whenOf(wide); strings.Contains(now, "+13052345678") || !strings.Contains(now, "+14042345678") {
		t.Errorf("sent now: %s", now)
	}
	// With a window every recipient needs a zone, the UK one too.
	if got := hoursOf(wide)["+447400123459"]; got != "-" {
		t.Errorf("UK number: %q", got)
	}
	narrow := mustPlan(t, usCampaign(t, "compliance: [us]\nsend_window: {days: [mon, tue, wed, thu, fri], from: \"10:00\", to: \"18:00\"}\n", "Sale. Reply STOP to opt out"))
	for _, v := range narrow.Compliance.Rules {
		if v.Verdict == VerdictNarrowed {
			t.Errorf("a 10:00-18:00 window on weekdays was narrowed by %s", v.ID)
		}
	}
	// Every day, Texas's Sunday noon narrows it for the Texas number.
	daily := mustPlan(t, usCampaign(t, "compliance: [us]\nsend_window: {from: \"10:00\", to: \"18:00\"}\n", "Sale. Reply STOP to opt out"))
	if v := verdict(t, daily, "us-tx-hours"); v.Verdict != VerdictNarrowed || v.Narrowed != 1 {
		t.Errorf("us-tx-hours with a daily 10:00-18:00: %+v", v)
	}
}

// TestComplianceBodies: a marketing body without opt-out words fails the
// plan naming each row, the rule and its source; the plan comes back with
// the verdicts.
func TestComplianceBodies(t *testing.T) {
	c := usCampaign(t, "compliance: [us]\n", "Sale today, {{ .name }}")
	p, err := Compute(context.Background(), c, nil)
	var ce *ComplianceError
	if !errors.As(err, &ce) || p == nil {
		t.Fatalf("Compute = %v, want a ComplianceError and the plan", err)
	}
	if ce.Failed != 5 || len(ce.Unwrap()) != 5 {
		t.Errorf("%d failed, %d named", ce.Failed, len(ce.Unwrap()))
	}
	first := ce.Unwrap()[0].(*campaign.Error)
	for _, want := range []string{"l.csv:2: body:", "us-opt-out", "CTIA Messaging Principles", "2023-05-01", "STOP"} {
		if !strings.Contains(first.Error(), want) {
			t.Errorf("%q lacks %q", first.Error(), want)
		}
	}
	if first.Hint == "" || ce.Unwrap()[1].(*campaign.Error).Hint != "" {
		t.Errorf("the rule's fix should be the first row's hint only: %q, %q", first.Hint, ce.Unwrap()[1].(*campaign.Error).Hint)
	}
	if strings.Contains(err.Error(), "Ann") {
		t.Errorf("the error quotes a variable: %v", err)
	}
	if v := verdict(t, p, "us-opt-out"); v.Verdict != VerdictFail || v.Failed != 5 || v.Fix == "" {
		t.Errorf("us-opt-out: %+v", v)
	}
	// A body shared by everyone is named once, at the campaign file.
	_, err = Compute(context.Background(), usCampaign(t, "compliance: [uk]\n", "Sale today"), nil)
	if !errors.As(err, &ce) || len(ce.Unwrap()) != 1 || ce.Failed != 5 || !strings.Contains(err.Error(), "c.yaml:7: body:") || !strings.Contains(err.Error(), "regulation 22") {
		t.Errorf("a shared body: %v", err)
	}
	// Transactional campaigns are not held to the marketing rules.
	p = mustPlan(t, usCampaign(t, "kind: transactional\ncompliance: [us]\n", "Your code is 1234"))
	if v := verdict(t, p, "us-opt-out"); v.Verdict != VerdictNotApplicable {
		t.Errorf("transactional us-opt-out: %+v", v)
	}
	if p.HasLawHours() || hoursOf(p)["+13052345678"] != "-" {
		t.Errorf("a transactional campaign got the law's hours")
	}
}

func TestComplianceDLT(t *testing.T) {
	list := "phone,name,code\n+918123456789,Asha,1234\n+918123456790," + strings.Repeat("x", 31) + ",1\n+918123456791,Ravi,1\n"
	c := testharness.LoadCampaign(t, header+`recipients:
  - file: l.csv
compliance: [in]
dlt:
  template_id: "1107161234567890123"
  template: "Dear {#var#}, your code is {#var#}."
body: "{{ if eq .name \"Ravi\" }}Hi{{ else }}Dear{{ end }} {{ .name }}, your code is {{ .code }}."
`, map[string]string{"l.csv": list})
	_, err := Compute(context.Background(), c, nil)
	var ce *ComplianceError
	if !errors.As(err, &ce) || ce.Failed != 2 {
		t.Fatalf("Compute = %v, want 2 rows failing", err)
	}
	msg := err.Error()
	for _, want := range []string{"l.csv:3: body:", "variable 1 of the template is 31 characters, longer than 30", "l.csv:4: body:",
		`does not start with the template's text "Dear "`, "in-dlt-template", "TCCCPR 2018"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "l.csv:2:") {
		t.Errorf("the matching row failed: %s", msg)
	}
}

func TestComplianceGSM7(t *testing.T) {
	list := "phone,name\n+447400123459,Ann\n+447400123460,Zoë\n"
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\ncompliance: [gsm7]\nkind: transactional\nbody: \"Hi {{ .name }}, it’s ready\"\n",
		map[string]string{"l.csv": list})
	_, err := Compute(context.Background(), c, nil)
	var ce *ComplianceError
	if !errors.As(err, &ce) || ce.Failed != 2 {
		t.Fatalf("Compute = %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "l.csv:2: body:") || !strings.Contains(msg, "(U+2019) at position 11") || !strings.Contains(msg, "gsm7-only") {
		t.Errorf("error: %s", msg)
	}
}

// TestEachTimingAgrees: what schedule reads of a plan's groups is what its
// batches say.
func TestEachTimingAgrees(t *testing.T) {
	c := testharness.LoadCampaign(t, header+windowNumbers+"compliance: [us]\nbatch_size: 1\nsend_window: {from: \"09:00\", to: \"20:00\"}\nbody: \"hi. Reply STOP\"\n", nil)
	p := mustPlan(t, c)
	all := p.AllBatches()
	n := 0
	err := p.eachTiming(func(i int, b Batch) error {
		n++
		if i >= len(all) || !slices.Equal(b.Zones, all[i].Zones) || b.Hours != all[i].Hours || len(b.Recipients) != len(all[i].Recipients) {
			t.Errorf("batch %d: %v %q %d, the batch says %+v", i, b.Zones, b.Hours, len(b.Recipients), all[i])
		}
		return nil
	})
	if err != nil || n != len(all) || n < 5 {
		t.Errorf("%d batches timed of %d: %v", n, len(all), err)
	}
}

// TestComplianceZonesOpenTogether: batches of zones whose offsets differ
// may open at the same instant, each at its own hour; the group names each
// zone with its own. At 13:00 UTC on 2026-03-08 (daylight saving time
// started that night) the law opens 08:00 in Pensacola (+1 850, Central)
// and Connecticut's 09:00 in New Haven (+1 203, Eastern).
func TestComplianceZonesOpenTogether(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\ncompliance: [us]\nbody: \"Sale. Reply STOP to opt out\"\n",
		map[string]string{"l.csv": "phone\n+18502345678\n+12032345678\n"})
	p := mustPlan(t, c)
	if err := p.ScheduleAt(time.Date(2026, 3, 8, 12, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if len(p.Schedule.Groups) != 1 {
		t.Fatalf("groups %+v, want one", p.Schedule.Groups)
	}
	w := p.Schedule.Groups[0]
	if !w.At.Equal(time.Date(2026, 3, 8, 13, 0, 0, 0, time.UTC)) ||
		!slices.Equal(w.Zones, []string{"America/Chicago", "America/New_York"}) || !slices.Equal(w.Locals, []string{"08:00", "09:00"}) {
		t.Errorf("opens at %v in %v at %v, want 13:00 UTC, 08:00 America/Chicago and 09:00 America/New_York", w.At, w.Zones, w.Locals)
	}
	if w.SameLocal() != "" {
		t.Errorf("SameLocal = %q, want none", w.SameLocal())
	}
}

// TestHoursSets: only the rule sets with hours rules for the campaign's
// kind decide when it goes.
func TestHoursSets(t *testing.T) {
	p := mustPlan(t, usCampaign(t, "compliance: [gsm7, us, uk]\n", "Sale today. Reply STOP to opt out"))
	if got := p.Compliance.HoursSets(); !slices.Equal(got, []string{"us"}) {
		t.Errorf("HoursSets = %v, want [us] of %v", got, p.Compliance.Sets)
	}
	p = mustPlan(t, usCampaign(t, "kind: transactional\ncompliance: [us]\n", "Your code is 1234"))
	if got := p.Compliance.HoursSets(); len(got) != 0 {
		t.Errorf("transactional: HoursSets = %v, want none", got)
	}
}
