package plan

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
)

// windowNumbers are recipients in Europe, the Americas and Asia, one of
// them in a prefix that spans two zones and one with no zone at all.
const windowNumbers = `recipients:
  - numbers: ["+12125550101", "+33612345678", "+819012345678", "+12125550102", "+12085550100", "+14155550101", "+447400123459", "+80012345678", "+33612345679"]
`

func TestComputeSplitsByZone(t *testing.T) {
	c := testharness.LoadCampaign(t, header+windowNumbers+"send_window: {days: [mon, tue, wed, thu, fri], from: \"09:00\", to: \"20:00\"}\nbody: hi\n", nil)
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, b := range p.AllBatches() {
		got[strings.Join(b.Zones, ",")] += strings.Join(b.Recipients, " ")
	}
	want := map[string]string{
		"America/New_York":                  "+12125550101 +12125550102",
		"Europe/Paris":                      "+33612345678 +33612345679",
		"Asia/Tokyo":                        "+819012345678",
		"America/Boise,America/Los_Angeles": "+12085550100",
		"America/Los_Angeles":               "+14155550101",
		"Europe/London":                     "+447400123459", // GB's principal zone (issue 40.5)
	}
	if len(got) != len(want) {
		t.Errorf("batches by zones = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("zones %s: %q, want %q", k, got[k], v)
		}
	}
	s := p.Summary
	if s.NoTimezone != 1 || s.ToSend != 8 || s.Recipients != 9 || s.Batches != 6 {
		t.Errorf("summary %+v, want 1 without a zone, 8 to send in 6 batches", s)
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "has no known time zone: held back") {
		t.Errorf("no warning for the number without a zone: %q", p.Warnings)
	}

	// The same inputs give the same batches, whatever the moment.
	again, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.AllBatches() {
		if p.AllBatches()[i].ID != again.AllBatches()[i].ID {
			t.Fatalf("batch %d: id %s then %s", i, p.AllBatches()[i].ID, again.AllBatches()[i].ID)
		}
	}

	// A fallback zone takes in the number without one, with Paris.
	c = testharness.LoadCampaign(t, header+windowNumbers+"send_window: {from: \"09:00\", to: \"20:00\"}\nfallback_timezone: Europe/Paris\nbody: hi\n", nil)
	if p, err = Compute(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.AllBatches() {
		if strings.Join(b.Zones, ",") == "Europe/Paris" && len(b.Recipients) != 3 {
			t.Errorf("Paris batch with the fallback: %v, want the two Paris numbers and +800", b.Recipients)
		}
	}
	if p.Summary.NoTimezone != 0 || p.Summary.ToSend != 9 {
		t.Errorf("with a fallback: summary %+v", p.Summary)
	}
}

// TestComputeWithoutWindowLooksUpNoZone: a campaign without a send window
// plans as before: no zones, no schedule.
func TestComputeWithoutWindowLooksUpNoZone(t *testing.T) {
	c := testharness.LoadCampaign(t, header+windowNumbers+"body: hi\n", nil)
	p, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.AllBatches()) != 1 || p.AllBatches()[0].Zones != nil || p.Summary.ToSend != 9 {
		t.Fatalf("batches %+v, want one batch of 9 without zones", p.AllBatches())
	}
	if err := p.ScheduleAt(time.Now()); err != nil || p.Schedule != nil {
		t.Errorf("ScheduleAt: %v, %+v; want no schedule", err, p.Schedule)
	}
}

// BenchmarkComputeWindow is BenchmarkCompute with a send window: every
// recipient's zones are looked up and the groups split by them. Compare
// with BenchmarkCompute for what the window costs.
func BenchmarkComputeWindow(b *testing.B) {
	for _, tc := range []struct {
		name         string
		personalised bool
	}{{"personalised", true}, {"shared", false}} {
		b.Run(tc.name, func(b *testing.B) {
			g, err := testharness.Generate(b.TempDir(), testharness.Spec{Name: "bench", Recipients: 100_000, Personalised: tc.personalised, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			f, err := os.OpenFile(g.Campaign, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			_, err = f.WriteString("send_window: {from: \"09:00\", to: \"20:00\"}\nfallback_timezone: UTC\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				b.Fatal(err)
			}
			c, err := campaign.Load(g.Campaign)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compute(context.Background(), c, nil); err != nil {
					b.Fatal(err)
				}
			}
			reportPerRecipient(b, 100_000)
		})
	}
}
