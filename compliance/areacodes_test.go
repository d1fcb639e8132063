package compliance

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/window"
)

var update = flag.Bool("update", false, "rewrite rules/nanp.csv from the phone-number library's data")

// TestAreaCodes derives the area code table again from the phone-number
// library smsform validates numbers with (which area codes have valid
// numbers, in which country; in the US, the state its geocoding names) and
// compares it with rules/nanp.csv. After updating the library, run
// go test ./compliance -run TestAreaCodes -update, and review the diff.
//
// With -short it checks a sample instead: one number of each area code
// listed, and a few of each one not listed (the whole derivation reads
// 640,000 numbers, a minute under the race detector).
func TestAreaCodes(t *testing.T) {
	if testing.Short() && !*update {
		checkAreasSampled(t)
		return
	}
	var b bytes.Buffer
	b.WriteString(nanpHeader)
	norm := e164.NewNormalizer("")
	for npa := 200; npa <= 999; npa++ {
		if region, state, ok := deriveArea(norm, npa); ok {
			fmt.Fprintf(&b, "%d,%s,%s\n", npa, region, state)
		}
	}
	const file = "rules/nanp.csv"
	if *update {
		if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Errorf("%s differs from the library's data; run go test ./compliance -run TestAreaCodes -update and review the diff:\n%s",
			file, firstDiff(string(have), b.String()))
	}
}

const nanpHeader = `# The area codes of the North American Numbering Plan (+1) in service: the country
# (ISO 3166 code) and, in the United States, the state (postal code; empty for a
# code that is not geographic, such as 800).
# source: the region and geocoding data of libphonenumber 9.0.32 (Google), as
#   github.com/nyaruka/phonenumbers v1.8.1 ships it: https://github.com/google/libphonenumber
# effective: 2026-07-15 (the date of that release)
# Written by TestAreaCodes (go test ./compliance -run TestAreaCodes -update).
npa,region,state
`

// deriveArea finds the country of an area code from its valid numbers, one
// per exchange, and in the US its state from the library's geocoding of up
// to 40 of them (a state's name, or "City, ST"); false when the code has no
// valid number.
func deriveArea(norm *e164.Normalizer, npa int) (region, state string, ok bool) {
	regions, states := map[string]int{}, map[string]int{}
	geocoded := 0
	for exch := 200; exch <= 999; exch++ {
		num, err := norm.Normalize(fmt.Sprintf("+1%d%d4567", npa, exch))
		if err != nil {
			continue
		}
		regions[num.Region]++
		if num.Region != "US" || geocoded == 40 {
			continue
		}
		geocoded++
		n, err := phonenumbers.Parse(num.E164, "")
		if err != nil {
			continue
		}
		desc, _ := phonenumbers.GetGeocodingForNumber(n, "en")
		if s := stateOf(desc); s != "" {
			states[s]++
		}
	}
	if len(regions) == 0 {
		return "", "", false
	}
	region = most(regions)
	if region != "US" {
		return region, "", true
	}
	return region, most(states), true
}

func checkAreasSampled(t *testing.T) {
	areas, err := readAreas()
	if err != nil {
		t.Fatal(err)
	}
	norm := e164.NewNormalizer("")
	for npa := 200; npa <= 999; npa++ {
		a := areas[npa]
		if a.region == "" {
			for exch := 200; exch <= 999; exch += 97 {
				if num, err := norm.Normalize(fmt.Sprintf("+1%d%d4567", npa, exch)); err == nil {
					t.Errorf("area code %d is not in the table, but %s is valid (%s)", npa, e164.Mask(num.E164), num.Region)
				}
			}
			continue
		}
		num, ok := firstValid(norm, npa)
		if !ok {
			t.Errorf("area code %d (%s) is in the table but has no valid number", npa, a.region)
			continue
		}
		if num.Region != a.region {
			t.Errorf("area code %d: the table says %s, the library %s", npa, a.region, num.Region)
		}
		if a.region != "US" {
			continue
		}
		n, _ := phonenumbers.Parse(num.E164, "")
		desc, _ := phonenumbers.GetGeocodingForNumber(n, "en")
		if s := stateOf(desc); s != a.state {
			t.Errorf("area code %d: the table says state %q, the library's geocoding %q (%s)", npa, a.state, s, desc)
		}
	}
}

func firstValid(norm *e164.Normalizer, npa int) (e164.Number, bool) {
	for exch := 200; exch <= 999; exch++ {
		if num, err := norm.Normalize(fmt.Sprintf("+1%d%d4567", npa, exch)); err == nil {
			return num, true
		}
	}
	return e164.Number{}, false
}

// stateNames maps the library's English names of US states to postal codes.
var stateNames = map[string]string{
	"Alabama": "AL", "Alaska": "AK", "Arizona": "AZ", "Arkansas": "AR", "California": "CA",
	"Colorado": "CO", "Connecticut": "CT", "Delaware": "DE", "Florida": "FL", "Georgia": "GA",
	"Hawaii": "HI", "Idaho": "ID", "Illinois": "IL", "Indiana": "IN", "Iowa": "IA", "Kansas": "KS",
	"Kentucky": "KY", "Louisiana": "LA", "Maine": "ME", "Maryland": "MD", "Massachusetts": "MA",
	"Michigan": "MI", "Minnesota": "MN", "Mississippi": "MS", "Missouri": "MO", "Montana": "MT",
	"Nebraska": "NE", "Nevada": "NV", "New Hampshire": "NH", "New Jersey": "NJ", "New Mexico": "NM",
	"New York": "NY", "North Carolina": "NC", "North Dakota": "ND", "Ohio": "OH", "Oklahoma": "OK",
	"Oregon": "OR", "Pennsylvania": "PA", "Rhode Island": "RI", "South Carolina": "SC",
	"South Dakota": "SD", "Tennessee": "TN", "Texas": "TX", "Utah": "UT", "Vermont": "VT",
	"Virginia": "VA", "Washington D.C.": "DC", "Washington State": "WA", "West Virginia": "WV",
	"Wisconsin": "WI", "Wyoming": "WY",
}

// stateOf reads a state from a geocoding description: a state's name, or
// "City, ST"; "" for anything else ("United States").
func stateOf(desc string) string {
	if c, ok := stateNames[desc]; ok {
		return c
	}
	if _, tail, ok := strings.Cut(desc, ", "); ok {
		for _, c := range stateNames {
			if c == tail {
				return c
			}
		}
		return stateNames[tail]
	}
	return ""
}

// most is the key counted most often, the first in order on a tie.
func most(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d: file %q, library %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("the file has %d lines, the library's table %d", len(al), len(bl))
}

// TestEveryStateNumberHasZones: every area code the table gives a state has
// numbers whose time zones the window package finds and loads, so that no
// recipient under a state's hours is held back for want of a zone.
func TestEveryStateNumberHasZones(t *testing.T) {
	areas, err := readAreas()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := window.Compile(window.Spec{From: "08:00", To: "21:00"})
	if err != nil {
		t.Fatal(err)
	}
	f := sc.Finder()
	norm := e164.NewNormalizer("")
	checked := 0
	for npa, a := range areas {
		if a.state == "" {
			continue
		}
		num, ok := firstValid(norm, npa)
		if !ok {
			t.Errorf("area code %d (%s) has no valid number", npa, a.state)
			continue
		}
		if z, _ := f.Zones(num.E164); z == nil || len(z.Names()) == 0 {
			t.Errorf("area code %d (%s): %s has no time zone that loads", npa, a.state, e164.Mask(num.E164))
		}
		checked++
	}
	if checked < 300 {
		t.Errorf("only %d area codes with a state checked", checked)
	}
}
