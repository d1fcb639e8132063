package state

import (
	"context"
	"testing"
	"time"
)

// A campaign's delivery summary counts, on both engines, each recipient
// once by its latest report (a pending one never over a final one): sent
// ones as delivered, undelivered or pending (no report yet is pending), those in doubt apart (how many
// with no report at all), anomalies and unmatched reports on their own,
// by country, with the provider's reasons grouped.
func TestDeliverySummary(t *testing.T) { eachBackend(t, testDeliverySummary) }

func testDeliverySummary(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.loc(t)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	_, now := testClock(t0)
	const (
		gb1, gb2, gb3 = "+447400123401", "+447400123402", "+447400123403"
		us1, us2, us3 = "+14155550101", "+14155550102", "+14155550103"
		fr1           = "+33612345678"
	)
	s := openShared(t, loc, "spring", now)
	sentWithIDs(t, s, "b1", gb1, gb2, gb3, us1)
	_, err := s.AdmitIntent(ctx, intent("b2", us2, us3))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b2", Outcome{Status: InDoubt, Reason: "timeout"}))
	_, err = s.AdmitIntent(ctx, intent("b3", fr1))
	must(t, err)
	must(t, s.RecordOutcome(ctx, "b3", Outcome{Status: Failed, Reason: "refused"}))

	if n, err := s.Anomalies(ctx); err != nil || n != 0 {
		t.Fatalf("anomalies before any report: %d, %v", n, err)
	}
	before, err := s.DeliverySummary(ctx)
	must(t, err)
	if before.Reported || before.Pending != 4 || before.InDoubtWithoutReport != 2 {
		t.Errorf("before any report: %+v, want not reported, 4 pending, 2 in doubt without report", before)
	}

	r := openReceiver(t, loc, t0.Add(time.Hour))
	at := t0.Add(time.Minute)
	_, err = r.Record(ctx, []Report{
		{ProviderID: "m-" + gb1, Delivery: Pending, ProviderStatus: "ENROUTE", At: at},
		{ProviderID: "m-" + gb1, Delivery: Delivered, ProviderStatus: "DELIVERED", At: at.Add(time.Second)}, // the latest counts
		{ProviderID: "m-" + gb2, Delivery: Undelivered, ProviderStatus: "UNDELIVERED", Reason: "absent subscriber", At: at},
		{ProviderID: "m-" + gb2, Delivery: Pending, At: at.Add(time.Minute)}, // a late pending after a final answer: kept, not counted over it
		{ProviderID: "m-" + us1, Delivery: Undelivered, ProviderStatus: "UNDELIVERED", Reason: "absent subscriber", At: at},
		{Phone: us2, Delivery: Pending, ProviderStatus: "ENROUTE", At: at},     // in doubt, with a report that proves nothing
		{Phone: fr1, Delivery: Delivered, ProviderStatus: "DELIVERED", At: at}, // recorded failed: an anomaly
		{ProviderID: "m-nobody", Delivery: Delivered, At: at},
	}, nil)
	must(t, err)
	s.Close()

	ro, err := OpenSharedReadOnly(ctx, MustParseLocation(loc), "spring")
	must(t, err)
	defer ro.Close()
	sum, err := ro.DeliverySummary(ctx)
	must(t, err)
	want := DeliveryCounts{Delivered: 1, Undelivered: 2, Pending: 1, InDoubt: 2, InDoubtWithoutReport: 1}
	if !sum.Reported || sum.DeliveryCounts != want || sum.Anomalies != 1 || sum.Unmatched != 1 {
		t.Errorf("summary %+v (anomalies %d, unmatched %d), want %+v, 1 anomaly, 1 unmatched", sum.DeliveryCounts, sum.Anomalies, sum.Unmatched, want)
	}
	if gb, us := sum.ByCountry["GB"], sum.ByCountry["US"]; gb == nil || us == nil ||
		*gb != (DeliveryCounts{Delivered: 1, Undelivered: 1, Pending: 1}) ||
		*us != (DeliveryCounts{Undelivered: 1, InDoubt: 2, InDoubtWithoutReport: 1}) {
		t.Errorf("by country: GB %+v, US %+v", gb, us)
	}
	if c := sum.Countries(); len(c) != 2 || c[0] != "GB" && c[0] != "US" {
		t.Errorf("countries %v: want GB and US (FR's only recipient failed)", c)
	}
	if sum.Reasons["absent subscriber"] != 2 || len(sum.Reasons) != 1 || !sum.UndeliveredPhones[gb2] || !sum.UndeliveredPhones[us1] || len(sum.UndeliveredPhones) != 2 {
		t.Errorf("reasons %v, undelivered %v", sum.Reasons, sum.UndeliveredPhones)
	}
	if n, err := ro.Anomalies(ctx); err != nil || n != 1 {
		t.Errorf("anomalies: %d, %v; want 1", n, err)
	}
}
