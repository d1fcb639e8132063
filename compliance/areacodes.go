package compliance

import (
	"encoding/csv"
	"fmt"
	"strconv"
)

// area is what rules/nanp.csv says of one area code of the +1 plan.
type area struct {
	region string // ISO 3166: "US", "CA", "PR"; "" for a code not in the table
	state  string // the US state's postal code; "" when not geographic
}

// areaTable is every area code, indexed by the code itself (200-999), so
// that a number's state is one array read.
type areaTable [1000]area

// readAreas reads rules/nanp.csv.
func readAreas() (*areaTable, error) {
	const file = "rules/nanp.csv"
	f, err := files.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.Comment = '#'
	cr.FieldsPerRecord = 3
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("compliance/%s: %w", file, err)
	}
	if len(rows) < 2 || rows[0][0] != "npa" || rows[0][1] != "region" || rows[0][2] != "state" {
		return nil, fmt.Errorf("compliance/%s: the header must be npa,region,state", file)
	}
	t := &areaTable{}
	for i, row := range rows[1:] {
		npa, err := strconv.Atoi(row[0])
		switch {
		case err != nil || npa < 200 || npa > 999:
			return nil, fmt.Errorf("compliance/%s: row %d: %q is not an area code", file, i+2, row[0])
		case len(row[1]) != 2 || row[2] != "" && (len(row[2]) != 2 || row[1] != "US"):
			return nil, fmt.Errorf("compliance/%s: row %d: want a two-letter country and, in the US, a two-letter state", file, i+2)
		case t[npa].region != "":
			return nil, fmt.Errorf("compliance/%s: row %d: area code %d is listed twice", file, i+2, npa)
		}
		t[npa] = area{region: row[1], state: row[2]}
	}
	return t, nil
}

// states returns the states the table names.
func (t *areaTable) states() map[string]bool {
	s := map[string]bool{}
	for _, a := range t {
		if a.state != "" {
			s[a.state] = true
		}
	}
	return s
}
