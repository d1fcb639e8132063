// Package words writes quantities for people the way every smsform output
// does: counts with thousands separators ([Count]), a noun in the singular or
// the plural ([Plural], [N]), amounts of money written exactly ([Money],
// [Amounts]), durations as a person types them ([Duration]) or reads them
// ([Wait]), and text from outside made visible ([Visible]). Plans use it for
// their warnings, apply for its errors, the reports for everything they
// show: one way to write a number or a duration, whichever output it is
// read in.
package words

import (
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
	"golang.org/x/text/currency"
)

// Count writes n with thousands separators: 1,310.
func Count(n int) string {
	if n < 0 {
		return "-" + grouped(strconv.FormatUint(uint64(-int64(n)), 10))
	}
	return grouped(strconv.Itoa(n))
}

// grouped puts a comma between each group of three of digits, from the
// right: the one way counts and amounts are written.
func grouped(digits string) string {
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// N writes a count and its noun: "1 recipient", "1,310 recipients".
func N(n int, one, many string) string {
	return Count(n) + " " + Plural(n, one, many)
}

// Amounts writes the amounts of money of one output in one currency, each
// with the same number of decimals: the currency's minor units (2 for EUR,
// 0 for JPY, 3 for KWD), or more when one of the amounts needs them to be
// written exactly (a price of EUR 0.0079 a segment). Amounts are never
// rounded: money that is shown is money that is charged.
type Amounts struct {
	currency string
	places   int32
}

// NewAmounts returns how the amounts ds (and any other written with it) of
// currency are written; currency may be "" (an amount with no currency).
func NewAmounts(cur string, ds ...decimal.Decimal) Amounts {
	a := Amounts{currency: cur, places: minorUnits(cur)}
	for _, d := range ds {
		// The decimals d needs: its exponent, less trailing zeros.
		if exp := -d.Exponent(); exp > a.places {
			if s := strings.TrimRight(d.StringFixed(exp), "0"); len(s) > 0 {
				if _, frac, ok := strings.Cut(s, "."); ok {
					a.places = max(a.places, int32(len(frac)))
				}
			}
		}
	}
	return a
}

// Money writes d with the currency: "EUR 1,245.85".
func (a Amounts) Money(d decimal.Decimal) string {
	if a.currency == "" {
		return a.Number(d)
	}
	return a.currency + " " + a.Number(d)
}

// Number writes d without the currency: "1,245.85".
func (a Amounts) Number(d decimal.Decimal) string {
	s := d.StringFixed(a.places)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(grouped(whole))
	if hasFrac {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// Money writes one amount on its own: "EUR 12.50". Amounts written
// together (a total and its parts) take one [Amounts], so that they have
// the same decimals.
func Money(cur string, d decimal.Decimal) string { return NewAmounts(cur, d).Money(d) }

// minorUnits is how many decimals cur has (ISO 4217); 2 when it is not a
// currency ISO 4217 knows.
func minorUnits(cur string) int32 {
	u, err := currency.ParseISO(cur)
	if err != nil {
		return 2
	}
	scale, _ := currency.Standard.Rounding(u)
	return int32(scale)
}
