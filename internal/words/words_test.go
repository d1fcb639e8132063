package words

import (
	"testing"

	"github.com/shopspring/decimal"
)

func TestWords(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Count(0), "0"},
		{Count(1310), "1,310"},
		{Count(10_000_000), "10,000,000"},
		{Plural(1, "batch", "batches"), "batch"},
		{Plural(0, "batch", "batches"), "batches"},
		{Plural(2, "batch", "batches"), "batches"},
		{Money("EUR", decimal.RequireFromString("45.85")), "EUR 45.85"},
		{Money("EUR", decimal.RequireFromString("1")), "EUR 1.00"},
		{Money("USD", decimal.RequireFromString("0.0079")), "USD 0.0079"},
		{Money("", decimal.RequireFromString("12.5")), "12.50"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
