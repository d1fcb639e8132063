package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// deliveryFixture is a campaign's delivery in two countries, with a
// reason that carries a number and a bidi control (text from outside), a
// country without a price, anomalies and unmatched reports.
func deliveryFixture() Delivery {
	return Delivery{
		Campaign: "spring-sale",
		Summary: state.DeliverySummary{
			DeliveryCounts: state.DeliveryCounts{Delivered: 1200, Undelivered: 35, Pending: 15, InDoubt: 4, InDoubtWithoutReport: 3},
			Reported:       true, Anomalies: 2, Unmatched: 1,
			ByCountry: map[string]*state.DeliveryCounts{
				"GB": {Delivered: 1000, Undelivered: 30, Pending: 10, InDoubt: 4, InDoubtWithoutReport: 3},
				"FR": {Delivered: 200, Undelivered: 5, Pending: 5},
			},
			Reasons: map[string]int{"absent subscriber": 30, "blocked for +447400123401 \u202e": 5},
		},
		Cost: &plan.Spent{Currency: "EUR", Total: decimal.RequireFromString("1.2"),
			ByCountry: []plan.CountryCost{{Country: "GB", Recipients: 30, Segments: 30, Cost: decimal.RequireFromString("1.2")}},
			Unpriced:  []plan.CountryCount{{Country: "FR", Recipients: 5, Segments: 10}}},
	}
}

func TestGoldenDelivery(t *testing.T) {
	d := deliveryFixture()
	for _, f := range []struct {
		ext   string
		write func(*bytes.Buffer) error
	}{
		{"table.txt", func(b *bytes.Buffer) error { return WriteDeliveryTable(b, d) }},
		{"md", func(b *bytes.Buffer) error { return WriteDeliveryMarkdown(b, d) }},
		{"json", func(b *bytes.Buffer) error { return WriteDeliveryJSON(b, d) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		// Counts only: no number, whole or masked, and no raw control.
		if strings.Contains(out, "+447400123401") || strings.Contains(out, "\u202e") {
			t.Errorf("%s shows a number or a raw bidi control:\n%s", f.ext, out)
		}
		checkGolden(t, filepath.Join("testdata", "golden", "delivery."+f.ext), b.Bytes())
	}
}

func TestDeliveryLines(t *testing.T) {
	s := state.DeliverySummary{DeliveryCounts: state.DeliveryCounts{Delivered: 1310, Undelivered: 2, Pending: 0}, Anomalies: 1}
	if got, want := DeliverySoFar(s), "Delivery so far: 1,310 delivered, 2 undelivered, 0 pending (1 anomaly)."; got != want {
		t.Errorf("DeliverySoFar = %q, want %q", got, want)
	}
	if w := AnomalyWarning(0, "c.yaml"); w != "" {
		t.Errorf("no anomaly, warning %q", w)
	}
	if w := AnomalyWarning(3, "c.yaml"); !strings.Contains(w, "3 messages") || !strings.Contains(w, "smsform reports show c.yaml") {
		t.Errorf("warning %q: want the count and the next step", w)
	}
}
