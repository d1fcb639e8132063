// Package words writes quantities for people the way every smsform output
// does: counts with thousands separators, a noun in the singular or the
// plural, amounts of money written exactly. Plans use it for their
// warnings, the reports for everything they show.
package words

import (
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/shopspring/decimal"
)

// Count writes n with thousands separators: 1,310.
func Count(n int) string { return humanize.Comma(int64(n)) }

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Money writes an amount as "EUR 12.50": exact, with at least two
// decimals; with no currency, the amount alone.
func Money(currency string, d decimal.Decimal) string {
	s := d.String()
	if _, frac, _ := strings.Cut(s, "."); len(frac) < 2 {
		s = d.StringFixed(2)
	}
	if currency == "" {
		return s
	}
	return currency + " " + s
}
