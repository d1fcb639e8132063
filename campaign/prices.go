package campaign

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/nyaruka/phonenumbers"
	"github.com/shopspring/decimal"

	"github.com/smsform/smsform/internal/e164"
)

// Prices is a price table: what one SMS segment costs, per country and per
// number prefix (a carrier's range), in one currency. Amounts are decimal
// (github.com/shopspring/decimal): exact in base 10, so that a million
// segments at 0.035 cost exactly 35,000.
type Prices struct {
	File     string // as written in the campaign file
	Path     string // File resolved against the campaign's folder
	Currency string // ISO 4217, upper case, the same on every row
	Rows     []PriceRow

	byCountry map[string]int // country -> its row without a prefix
	byPrefix  map[string]int // "+4474" -> its row
	minPrefix int            // the shortest and longest prefix, in bytes with the +
	maxPrefix int
	curLine   int // the line that set Currency
}

// PriceRow is one line of a price table.
type PriceRow struct {
	Country string          // ISO 3166 alpha-2, upper case
	Prefix  string          // "" for the whole country, or "+" and digits
	Price   decimal.Decimal // per segment, in the table's currency
	Line    int             // in the price file
}

// Lookup returns the index in Rows of the row that prices a number (in
// E.164) of region (the number's country, see e164.Number.Region): the
// longest prefix row of that country the number starts with, else the
// country's row. It reports false when neither exists. It does not allocate
// and is safe for concurrent use.
func (p *Prices) Lookup(number, region string) (int, bool) {
	for n := min(p.maxPrefix, len(number)); n >= p.minPrefix && n > 1; n-- {
		if i, ok := p.byPrefix[number[:n]]; ok && p.Rows[i].Country == region {
			return i, true
		}
	}
	i, ok := p.byCountry[region]
	return i, ok
}

// Limits of a price table: a world of countries and carrier ranges is a few
// thousand rows; anything much bigger is not a price table.
const (
	maxPriceFile = 4 << 20
	maxPriceRows = 50_000
)

// priceColumns is the header a price table must have (in any order).
var priceColumns = []string{"country", "prefix", "price_per_segment", "currency"}

var (
	prefixRE   = regexp.MustCompile(`^\+[1-9][0-9]{0,14}$`)
	priceRE    = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
	countryRE  = regexp.MustCompile(`^[A-Z]{2}$`)
)

// loadPrices reads and checks the price table named on line of the campaign
// file. Every problem becomes an *Error naming the price file, its line and
// column, added to l.
func (l *loader) loadPrices(c *Campaign, file string, line int) *Prices {
	p := &Prices{File: file, Path: file, byCountry: map[string]int{}, byPrefix: map[string]int{}}
	if !filepath.IsAbs(p.Path) {
		p.Path = filepath.Join(c.Dir, file)
	}
	if ext := strings.ToLower(filepath.Ext(file)); ext != ".csv" {
		l.add(line, "prices", "save the price table as CSV with the header country,prefix,price_per_segment,currency", "%s is not a .csv file", Quote(file))
		return nil
	}
	if err := checkReadable(p.Path); err != "" {
		l.add(line, "prices", "paths are relative to the campaign file's folder, "+c.Dir, "price table %s: %s", p.Path, err)
		return nil
	}
	before := len(l.errs)
	p.read(func(line int, field, hint, format string, args ...any) {
		l.addErr(&Error{File: Plain(p.Path), Line: line, Field: Plain(field), Msg: fmt.Sprintf(format, args...), Hint: hint})
	})
	if len(l.errs) > before {
		return nil
	}
	return p
}

// read fills p from its file, reporting each problem to bad.
func (p *Prices) read(bad func(line int, field, hint, format string, args ...any)) {
	data, err := readLimited(p.Path, maxPriceFile)
	switch {
	case err != nil:
		bad(0, "", "", "%s", fileProblem(err))
		return
	case len(data) > maxPriceFile:
		bad(0, "", "a price table has a row per country or carrier range", "file is larger than %d bytes", maxPriceFile)
		return
	case bytes.IndexByte(data, 0) >= 0:
		bad(lineAt(data, bytes.IndexByte(data, 0)), "", "export the table as CSV (UTF-8)", "file holds binary data (a NUL byte), not CSV text")
		return
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#' // so that a table can say where its prices come from, and when
	r.ReuseRecord = true

	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		bad(0, "", "the first line is the header: country,prefix,price_per_segment,currency", "price table is empty")
		return
	}
	if err != nil {
		bad(csvLine(err), "", "", "invalid CSV: %v", csvCause(err))
		return
	}
	headerLine, _ := r.FieldPos(0)
	col, ok := priceHeader(slices.Clone(header), headerLine, bad)
	if !ok {
		return
	}
	r.FieldsPerRecord = len(header)
	rows := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
				rows++
				bad(pe.StartLine, "", "every row has the four fields of the header; leave prefix empty for a whole country (GB,,0.035,EUR)",
					"row has %d fields, the header %d", len(rec), len(header))
				continue
			}
			bad(csvLine(err), "", "", "invalid CSV: %v", csvCause(err))
			return
		}
		line, _ := r.FieldPos(0)
		if blank(rec) {
			continue
		}
		rows++
		if len(p.Rows) == maxPriceRows {
			bad(line, "", "", "price table has more than %d rows", maxPriceRows)
			return
		}
		field := func(name string) string { return strings.TrimSpace(rec[col[name]]) }
		row, ok := p.checkRow(line, field("country"), field("prefix"), field("price_per_segment"), field("currency"), bad)
		if ok {
			p.add(row, bad)
		}
	}
	if rows == 0 {
		bad(headerLine, "", "add a row per country: GB,,0.035,EUR", "price table has no prices")
	}
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

func csvLine(err error) int {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.StartLine
	}
	return 0
}

func csvCause(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// priceHeader returns the index of each column of a price table's header.
func priceHeader(header []string, line int, bad func(int, string, string, string, ...any)) (map[string]int, bool) {
	col := map[string]int{}
	ok := true
	for i, h := range header {
		h = strings.TrimSpace(h)
		switch {
		case !slices.Contains(priceColumns, h):
			bad(line, h, unknownHint(h, priceColumns), "unknown column in the header (a price table has %s)", strings.Join(priceColumns, ","))
			ok = false
		case hasKey(col, h):
			bad(line, h, "remove one of them", "column is named twice in the header")
			ok = false
		default:
			col[h] = i
		}
	}
	for _, name := range priceColumns {
		if !hasKey(col, name) {
			bad(line, name, "the header is country,prefix,price_per_segment,currency", "column is missing from the header")
			ok = false
		}
	}
	return col, ok
}

func hasKey(m map[string]int, k string) bool { _, ok := m[k]; return ok }

// checkRow checks the fields of one row on their own.
func (p *Prices) checkRow(line int, country, prefix, price, currency string, bad func(int, string, string, string, ...any)) (PriceRow, bool) {
	ok := true
	switch {
	case country == "":
		bad(line, "country", "write the ISO 3166 code of the country, such as GB or US", "must not be empty")
		ok = false
	case !countryRE.MatchString(country) || !e164.ValidRegion(country):
		hint := "use a two-letter ISO 3166 code such as GB, US or DE"
		if up := strings.ToUpper(country); up != country && e164.ValidRegion(up) {
			hint = "write it in capitals: " + up
		}
		bad(line, "country", hint, "%s is not a known ISO 3166 country code", Quote(country))
		ok = false
	}
	if prefix != "" {
		cc := phonenumbers.GetCountryCodeForRegion(country)
		switch {
		case !prefixRE.MatchString(prefix):
			bad(line, "prefix", "write + and the digits of the range, e.g. +4474, or leave it empty for the whole country",
				"%s is not a number prefix in E.164 form", Quote(prefix))
			ok = false
		case ok && !strings.HasPrefix(prefix, fmt.Sprintf("+%d", cc)):
			bad(line, "prefix", "check the country and the prefix: a prefix row refines its country's price",
				"prefix %s is not a %s range (%s numbers start with +%d)", prefix, country, country, cc)
			ok = false
		}
	}
	var amount decimal.Decimal
	switch {
	case price == "":
		bad(line, "price_per_segment", "write the price of one segment, e.g. 0.035", "must not be empty")
		ok = false
	case strings.HasPrefix(price, "-"):
		bad(line, "price_per_segment", "", "%s is negative", price)
		ok = false
	case strings.Count(price, ",") == 1 && priceRE.MatchString(strings.Replace(price, ",", ".", 1)):
		bad(line, "price_per_segment", "write decimals with a dot: "+Plain(strings.Replace(price, ",", ".", 1))+" (quote nothing)", "%s is not a decimal number", Quote(price))
		ok = false
	case !priceRE.MatchString(price):
		bad(line, "price_per_segment", "write digits and an optional decimal point, e.g. 0.035; the currency goes in its own column",
			"%s is not a decimal number", Quote(price))
		ok = false
	default:
		amount = decimal.RequireFromString(price) // the pattern guarantees it parses
	}
	switch {
	case currency == "":
		bad(line, "currency", "write the ISO 4217 code of the currency, such as EUR or USD", "must not be empty")
		ok = false
	case !currencyRE.MatchString(currency):
		hint := "use a three-letter ISO 4217 code such as EUR, USD or GBP"
		if up := strings.ToUpper(currency); up != currency && currencyRE.MatchString(up) {
			hint = "write it in capitals: " + up
		}
		bad(line, "currency", hint, "%s is not a currency code", Quote(currency))
		ok = false
	case p.Currency != "" && currency != p.Currency:
		bad(line, "currency", "one table holds one currency: convert these prices, or keep another table for that currency",
			"%s differs from the table's currency, %s (line %d)", currency, p.Currency, p.curLine)
		ok = false
	case p.Currency == "":
		p.Currency, p.curLine = currency, line
	}
	return PriceRow{Country: country, Prefix: prefix, Price: amount, Line: line}, ok
}

// add adds a checked row, refusing a second row for the same country or
// prefix: which one would apply?
func (p *Prices) add(row PriceRow, bad func(int, string, string, string, ...any)) {
	i := len(p.Rows)
	if row.Prefix == "" {
		if j, dup := p.byCountry[row.Country]; dup {
			bad(row.Line, "country", "remove one of them", "%s has a price already (line %d)", row.Country, p.Rows[j].Line)
			return
		}
		p.byCountry[row.Country] = i
	} else {
		if j, dup := p.byPrefix[row.Prefix]; dup {
			bad(row.Line, "prefix", "remove one of them", "prefix %s has a price already (line %d)", row.Prefix, p.Rows[j].Line)
			return
		}
		p.byPrefix[row.Prefix] = i
		if p.minPrefix == 0 || len(row.Prefix) < p.minPrefix {
			p.minPrefix = len(row.Prefix)
		}
		p.maxPrefix = max(p.maxPrefix, len(row.Prefix))
	}
	p.Rows = append(p.Rows, row)
}
