package words

import (
	"math"
	"testing"

	"github.com/shopspring/decimal"
)

func TestWords(t *testing.T) {
	d := decimal.RequireFromString
	for _, tt := range []struct{ got, want string }{
		{Count(0), "0"},
		{Count(1310), "1,310"},
		{Count(10_000_000), "10,000,000"},
		{Count(999), "999"},
		{Count(1000), "1,000"},
		{Count(-1234567), "-1,234,567"},
		{Count(math.MinInt64), "-9,223,372,036,854,775,808"},
		{Plural(1, "batch", "batches"), "batch"},
		{Plural(0, "batch", "batches"), "batches"},
		{Plural(2, "batch", "batches"), "batches"},
		{N(1, "recipient", "recipients"), "1 recipient"},
		{N(2768, "segment", "segments"), "2,768 segments"},
		{Money("EUR", d("45.85")), "EUR 45.85"},
		{Money("EUR", d("1")), "EUR 1.00"},
		{Money("EUR", d("45.850")), "EUR 45.85"},
		{Money("EUR", d("1234567.5")), "EUR 1,234,567.50"},
		{Money("EUR", d("-1234.5")), "EUR -1,234.50"},
		{Money("USD", d("0.0079")), "USD 0.0079"},
		{Money("JPY", d("1200")), "JPY 1,200"},
		{Money("JPY", d("3.5")), "JPY 3.5"},
		{Money("KWD", d("2.5")), "KWD 2.500"},
		{Money("", d("12.5")), "12.50"},
		{Money("credits", d("12")), "credits 12.00"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestAmountsAlike: amounts written together have the decimals of the one
// that needs the most, and never fewer than the currency's.
func TestAmountsAlike(t *testing.T) {
	d := decimal.RequireFromString
	total, part, budget := d("184.125"), d("31.2208"), d("200")
	a := NewAmounts("EUR", total, part, budget)
	got := []string{a.Money(total), a.Money(part), a.Money(budget), a.Number(d("0"))}
	want := []string{"EUR 184.1250", "EUR 31.2208", "EUR 200.0000", "0.0000"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("amount %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if a := NewAmounts("EUR", d("10"), d("0.5")); a.Money(d("10")) != "EUR 10.00" {
		t.Errorf("two decimals are EUR's: got %q", a.Money(d("10")))
	}
}
