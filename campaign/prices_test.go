package campaign

import (
	"strings"
	"testing"
)

const pricesHead = okHead + "recipients:\n  - numbers: [\"+447400123459\"]\nprices: prices.csv\n"

func TestPricesLoad(t *testing.T) {
	table := "# example prices, made up\ncountry,prefix,price_per_segment,currency\nGB,,0.0350,EUR\nGB,+4474,0.05,EUR\nGB,+447400,0.07,EUR\nUS,,0.0079,EUR\n\nCA,+1416,0.01,EUR\n"
	c, err := Load(writeCase(t, pricesHead, map[string][]byte{"prices.csv": []byte(table)}))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Prices
	if p == nil || p.Currency != "EUR" || len(p.Rows) != 5 {
		t.Fatalf("prices = %+v", p)
	}
	if got := c.Files(); len(got) != 2 || !strings.HasSuffix(got[1], "prices.csv") {
		t.Errorf("Files() = %v, want the price table after the campaign (a saved plan checks it)", got)
	}
	tests := []struct {
		number, region string
		want           string // the price, "" for none
	}{
		{"+447700900123", "GB", "0.035"}, // the country's row
		{"+447412345678", "GB", "0.05"},  // a prefix row wins over it
		{"+447400123459", "GB", "0.07"},  // the longest prefix wins
		{"+14155550101", "US", "0.0079"}, // +1 is shared: the region decides
		{"+14165550123", "CA", "0.01"},   // a prefix row without a country row
		{"+14185550123", "CA", ""},       // the rest of CA has no price
		{"+447781123456", "GG", ""},      // +44 but Guernsey: GB's rows do not apply
		{"+33612345678", "FR", ""},       // no row at all
	}
	for _, tt := range tests {
		i, ok := p.Lookup(tt.number, tt.region)
		got := ""
		if ok {
			got = p.Rows[i].Price.String()
		}
		if got != tt.want {
			t.Errorf("Lookup(%s, %s) = %q, want %q", tt.number, tt.region, got, tt.want)
		}
	}
}

func TestPricesErrors(t *testing.T) {
	const h = "country,prefix,price_per_segment,currency\n"
	tests := []struct {
		name, table string
		want        []string // "line: field: words" pieces, one per error
		hint        string
	}{
		{"empty", "", []string{"prices.csv: price table is empty"}, "header"},
		{"header only", h, []string{"prices.csv:1: price table has no prices"}, "GB,,0.035,EUR"},
		{"misspelt column", "country,prefix,price_per_segmnt,currency\nGB,,1,EUR\n", []string{"prices.csv:1: price_per_segmnt: unknown column", "prices.csv:1: price_per_segment: column is missing"}, `did you mean "price_per_segment"`},
		{"lower-case country", h + "gb,,0.03,EUR\n", []string{`prices.csv:2: country: "gb" is not a known ISO 3166 country code`}, "capitals: GB"},
		{"unknown country", h + "XX,,0.03,EUR\n", []string{`prices.csv:2: country: "XX" is not a known`}, "two-letter"},
		{"prefix with spaces", h + "GB,+44 74,0.03,EUR\n", []string{`prices.csv:2: prefix: "+44 74" is not a number prefix in E.164 form`}, "+4474"},
		{"prefix of another country", h + "GB,+3374,0.03,EUR\n", []string{"prices.csv:2: prefix: prefix +3374 is not a GB range (GB numbers start with +44)"}, "country"},
		{"decimal comma", h + "GB,,\"0,03\",EUR\n", []string{`prices.csv:2: price_per_segment: "0,03" is not a decimal number`}, "dot: 0.03"},
		{"currency sign", h + "GB,,€0.03,EUR\n", []string{`prices.csv:2: price_per_segment: "€0.03" is not a decimal number`}, "currency goes in its own column"},
		{"negative", h + "GB,,-0.03,EUR\n", []string{"prices.csv:2: price_per_segment: -0.03 is negative"}, ""},
		{"exponent", h + "GB,,3e-2,EUR\n", []string{`prices.csv:2: price_per_segment: "3e-2" is not a decimal number`}, "0.035"},
		{"two currencies", h + "GB,,0.03,EUR\nUS,,0.01,USD\n", []string{"prices.csv:3: currency: USD differs from the table's currency, EUR (line 2)"}, "one table holds one currency"},
		{"lower-case currency", h + "GB,,0.03,eur\n", []string{`prices.csv:3: currency`[:0] + `prices.csv:2: currency: "eur" is not a currency code`}, "capitals: EUR"},
		{"country twice", h + "GB,,0.03,EUR\nGB,,0.04,EUR\n", []string{"prices.csv:3: country: GB has a price already (line 2)"}, "remove one"},
		{"prefix twice", h + "GB,+4474,0.03,EUR\nGB,+4474,0.04,EUR\n", []string{"prices.csv:3: prefix: prefix +4474 has a price already (line 2)"}, "remove one"},
		{"missing field", h + "GB,0.03,EUR\n", []string{"prices.csv:2: row has 3 fields, the header 4"}, "leave prefix empty"},
		{"several errors, in file order", h + "gb,,0.03,EUR\nFR,,x,EUR\n", []string{"prices.csv:2: country", "prices.csv:3: price_per_segment"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeCase(t, pricesHead, map[string][]byte{"prices.csv": []byte(tt.table)}))
			if err == nil {
				t.Fatal("Load accepted the table")
			}
			errs := allErrors(t, err)
			if len(errs) != len(tt.want) {
				t.Fatalf("%d errors, want %d:\n%v", len(errs), len(tt.want), err)
			}
			for i, e := range errs {
				if !strings.HasSuffix(e.File, "prices.csv") {
					t.Errorf("error %q names %s, not the price table", e, e.File)
				}
				got := e.Error()[strings.LastIndex(e.File, "/")+1:]
				if !strings.HasPrefix(got, tt.want[i]) {
					t.Errorf("error %d = %q, want it to start %q", i, got, tt.want[i])
				}
			}
			if !strings.Contains(errs[0].Hint, tt.hint) {
				t.Errorf("hint = %q, want it to say %q", errs[0].Hint, tt.hint)
			}
		})
	}
}

func TestBudgetKeys(t *testing.T) {
	prices := map[string][]byte{"prices.csv": []byte("country,prefix,price_per_segment,currency\nGB,,0.035,EUR\n")}
	c, err := Load(writeCase(t, pricesHead+"budget:\n  max_total: 12.50\n  max_segments_per_message: 2\n  max_recipients: 1000\nempty_variables: error\n", prices))
	if err != nil {
		t.Fatal(err)
	}
	if c.Budget.MaxTotal == nil || c.Budget.MaxTotal.String() != "12.5" || c.Budget.MaxSegmentsPerMessage != 2 || c.Budget.MaxRecipients != 1000 || c.EmptyVariables != "error" {
		t.Fatalf("budget = %+v, empty_variables %q", c.Budget, c.EmptyVariables)
	}
	// max_total is read from its text: 0.1 + 0.2 stays exact.
	c, err = Load(writeCase(t, pricesHead+"budget:\n  max_total: \"0.30000000000000000001\"\n", prices))
	if err != nil || c.Budget.MaxTotal.String() != "0.30000000000000000001" {
		t.Fatalf("max_total = %v, %v", c.Budget.MaxTotal, err)
	}

	bad := []struct{ name, yaml, want string }{
		{"max_total without prices", okHead + "recipients:\n  - numbers: [\"+447400123459\"]\nbudget:\n  max_total: 10\n", ":8: budget.max_total: a cost budget needs a price table"},
		{"max_total not a number", pricesHead + "budget:\n  max_total: ten euros\n", ":9: budget.max_total: must be an amount of money"},
		{"max_total with a comma", pricesHead + "budget:\n  max_total: \"10,50\"\n", ":9: budget.max_total: must be an amount of money"},
		{"max_total negative", pricesHead + "budget:\n  max_total: -1\n", ":9: budget.max_total: must be an amount of money"},
		{"max_segments zero", pricesHead + "budget:\n  max_segments_per_message: 0\n", ":9: budget.max_segments_per_message: 0 is too small"},
		{"max_recipients text", pricesHead + "budget:\n  max_recipients: many\n", ":9: budget.max_recipients: must be a whole number"},
		{"unknown budget key", pricesHead + "budget:\n  max_cost: 1\n", ":9: budget.max_cost: unknown key"},
		{"empty_variables", pricesHead + "empty_variables: ignore\n", `:8: empty_variables: "ignore" is not one of: warn, error`},
		{"prices not csv", okHead + "recipients:\n  - numbers: [\"+447400123459\"]\nprices: prices.txt\n", `:7: prices: "prices.txt" is not a .csv file`},
		{"prices missing", okHead + "recipients:\n  - numbers: [\"+447400123459\"]\nprices: nope.csv\n", ":7: prices: price table"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeCase(t, tt.yaml, prices))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
