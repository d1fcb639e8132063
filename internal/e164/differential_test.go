package e164

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// TestDifferential holds Normalize to the verdicts of plain phonenumbers
// (Parse, IsValidNumber, Format(E164), GetNumberType) over numbers generated
// from the example numbers of every region and type the library knows, then
// mutated the ways lists get numbers wrong. It checks 200,000 numbers (make
// fuzz runs it so), 20,000 with -short or -race, and 5,000 under make test
// (both), where it was the longest test of a fresh clone.
func TestDifferential(t *testing.T) {
	n := 200_000
	switch {
	case testing.Short() && raceEnabled:
		n = 5_000
	case testing.Short() || raceEnabled:
		n = 20_000
	}
	cases := differentialCases(n)
	regions := []string{"", "GB", "US", "DE", "IT", "IN", "BR", "CA", "AU", "FR", "RU", "KZ", "AR", "MX", "CN", "JP", "NG", "SN", "gb", "ZZ"}
	normalizers := map[string]*Normalizer{}
	for _, r := range regions {
		normalizers[r] = NewNormalizer(r)
	}
	for r := range phonenumbers.GetSupportedRegions() {
		normalizers[r] = NewNormalizer(r)
	}

	var (
		mu      sync.Mutex
		diffs   []string
		valid   int
		checked int
		wg      sync.WaitGroup
	)
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			var local []string
			localValid, localChecked := 0, 0
			for i := w; i < len(cases); i += workers {
				c := cases[i]
				for _, region := range []string{"", c.region} {
					want, wantOK := naiveNormalize(c.raw, region)
					norm := normalizers[region]
					if norm == nil {
						norm = NewNormalizer(region)
					}
					got, err := norm.Normalize(c.raw)
					localChecked++
					if wantOK {
						localValid++
					}
					var inv *InvalidError
					switch {
					case wantOK && err != nil:
						local = append(local, fmt.Sprintf("Normalize(%q) with region %q: %v, want %+v", c.raw, region, err, want))
					case !wantOK && err == nil:
						local = append(local, fmt.Sprintf("Normalize(%q) with region %q = %+v, want invalid", c.raw, region, got))
					case wantOK && got != want:
						local = append(local, fmt.Sprintf("Normalize(%q) with region %q = %+v, want %+v", c.raw, region, got, want))
					case err != nil && (!errors.As(err, &inv) || inv.Reason == ""):
						local = append(local, fmt.Sprintf("Normalize(%q) with region %q: error %v is not an *InvalidError with a reason", c.raw, region, err))
					}
				}
			}
			mu.Lock()
			diffs = append(diffs, local...)
			valid += localValid
			checked += localChecked
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(diffs)
	for i, d := range diffs {
		if i == 30 {
			t.Errorf("... and %d more", len(diffs)-30)
			break
		}
		t.Error(d)
	}
	t.Logf("%d numbers, %d comparisons, %d valid, %d differences", len(cases), checked, valid, len(diffs))
	if valid < checked/5 || valid > checked*4/5 {
		t.Errorf("%d of %d comparisons valid: the generated mix should hold both valid and invalid numbers", valid, checked)
	}
}

// differentialCase is a raw number and a default region to read it with
// (besides "").
type differentialCase struct{ raw, region string }

var allTypes = []phonenumbers.PhoneNumberType{
	phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.FIXED_LINE_OR_MOBILE,
	phonenumbers.TOLL_FREE, phonenumbers.PREMIUM_RATE, phonenumbers.SHARED_COST,
	phonenumbers.VOIP, phonenumbers.PERSONAL_NUMBER, phonenumbers.PAGER,
	phonenumbers.UAN, phonenumbers.VOICEMAIL,
}

// differentialCases generates n cases deterministically.
func differentialCases(n int) []differentialCase {
	rng := rand.New(rand.NewPCG(20260101, 7))
	type seed struct {
		num    *phonenumbers.PhoneNumber
		region string
	}
	var seeds []seed
	var regions []string
	for r := range phonenumbers.GetSupportedRegions() {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	for _, r := range regions {
		for _, typ := range allTypes {
			if ex := phonenumbers.GetExampleNumberForType(r, typ); ex != nil {
				seeds = append(seeds, seed{ex, r})
			}
		}
	}
	var nonGeo []int
	for cc := range phonenumbers.GetSupportedGlobalNetworkCallingCodes() {
		nonGeo = append(nonGeo, cc)
	}
	slices.Sort(nonGeo)
	for _, cc := range nonGeo {
		if ex := phonenumbers.GetExampleNumberForNonGeoEntity(cc); ex != nil {
			seeds = append(seeds, seed{ex, "001"})
		}
	}
	otherRegions := []string{"GB", "US", "DE", "IT", "IN", "BR", "CA", "AU", "FR", "RU", "KZ", "AR", "MX", "CN", "JP", "NG", "SN", "gb", "ZZ"}

	cases := make([]differentialCase, 0, n)
	for len(cases) < n {
		s := seeds[rng.IntN(len(seeds))]
		cc := strconv.Itoa(int(s.num.GetCountryCode()))
		nsn := phonenumbers.GetNationalSignificantNumber(s.num)
		region := s.region
		if region == "001" || rng.IntN(4) == 0 {
			region = otherRegions[rng.IntN(len(otherRegions))]
		}
		if rng.IntN(10) == 0 {
			region = regions[rng.IntN(len(regions))]
		}
		// Mutate the national significant number.
		nsn = mutateDigits(rng, nsn)
		var raw string
		switch k := rng.IntN(16); k {
		case 0, 1, 2, 3:
			raw = "+" + cc + nsn
		case 4:
			raw = cc + nsn // without +
		case 5:
			raw = "00" + cc + nsn
		case 6:
			raw = "011" + cc + nsn
		case 7, 8:
			// national format of the (mutated) number, as the library writes it
			num, err := phonenumbers.Parse("+"+cc+nsn, "ZZ")
			if err != nil {
				raw = "0" + nsn
				break
			}
			raw = phonenumbers.Format(num, phonenumbers.NATIONAL)
			region = phonenumbers.GetRegionCodeForNumber(num)
			if region == "" || rng.IntN(5) == 0 {
				region = otherRegions[rng.IntN(len(otherRegions))]
			}
		case 9:
			num, err := phonenumbers.Parse("+"+cc+nsn, "ZZ")
			if err != nil {
				raw = "+" + cc + " " + nsn
				break
			}
			raw = phonenumbers.Format(num, phonenumbers.INTERNATIONAL)
		case 10:
			raw = nsn
		case 11:
			raw = "0" + nsn
		case 12:
			// unknown or odd calling codes
			bad := []string{"0", "00", "999", "888", "2" + strconv.Itoa(rng.IntN(100)), "3" + strconv.Itoa(rng.IntN(100)), "6" + strconv.Itoa(rng.IntN(100)), "80", "87", "1"}
			raw = "+" + bad[rng.IntN(len(bad))] + nsn
		case 13:
			raw = "+" + cc + "0" + nsn // trunk prefix kept after the code
		case 14:
			raw = randomDigits(rng, 1+rng.IntN(18))
			if rng.IntN(2) == 0 {
				raw = "+" + raw
			}
		case 15:
			raw = "+" + cc + nsn + oddSuffix(rng)
		}
		if rng.IntN(3) == 0 {
			raw = decorate(rng, raw)
		}
		cases = append(cases, differentialCase{raw: raw, region: region})
	}
	return cases
}

func randomDigits(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + rng.IntN(10))
	}
	return string(b)
}

// mutateDigits leaves most numbers as they are or varies their last digits
// (still mostly valid), and breaks the rest.
func mutateDigits(rng *rand.Rand, nsn string) string {
	b := []byte(nsn)
	switch rng.IntN(10) {
	case 0, 1, 2: // unchanged
	case 3, 4, 5: // vary the subscriber digits
		for i := max(len(b)-4, 1); i < len(b); i++ {
			b[i] = byte('0' + rng.IntN(10))
		}
	case 6: // vary any digit
		if len(b) > 0 {
			b[rng.IntN(len(b))] = byte('0' + rng.IntN(10))
		}
	case 7: // truncate
		if len(b) > 1 {
			b = b[:rng.IntN(len(b))]
		}
	case 8: // extend
		for range 1 + rng.IntN(4) {
			b = append(b, byte('0'+rng.IntN(10)))
		}
	case 9: // leading zeros
		b = append([]byte(strings.Repeat("0", 1+rng.IntN(3))), b...)
	}
	return string(b)
}

// decorate writes the number as people do: separators, brackets, blanks.
func decorate(rng *rand.Rand, raw string) string {
	seps := []string{" ", "-", ".", "(", ")", "  ", " - ", "/", "\u00a0", "\t"}
	var b strings.Builder
	if rng.IntN(8) == 0 {
		b.WriteString(" ")
	}
	for i, r := range raw {
		if i > 0 && rng.IntN(4) == 0 {
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		b.WriteRune(r)
	}
	if rng.IntN(8) == 0 {
		b.WriteString(seps[rng.IntN(len(seps))])
	}
	return b.String()
}

// oddSuffix is an extension, a letter or other noise at the end.
func oddSuffix(rng *rand.Rand) string {
	s := []string{" ext. 123", "x12", "#", ";ext=5", ",,12", " ~ 3", "a", "ABC", "tel:", ";phone-context=+44", "\uff10", "٣"}
	return s[rng.IntN(len(s))]
}

func TestDifferentialExamples(t *testing.T) {
	// Every example number of every type in every region, as E.164 and in
	// national format for its region.
	for r := range phonenumbers.GetSupportedRegions() {
		norm := NewNormalizer(r)
		for _, typ := range allTypes {
			ex := phonenumbers.GetExampleNumberForType(r, typ)
			if ex == nil {
				continue
			}
			for _, raw := range []string{phonenumbers.Format(ex, phonenumbers.E164), phonenumbers.Format(ex, phonenumbers.NATIONAL)} {
				want, wantOK := naiveNormalize(raw, r)
				got, err := norm.Normalize(raw)
				if wantOK != (err == nil) || got != want {
					t.Errorf("Normalize(%q) with region %q = %+v, %v; want %+v, valid %v", raw, r, got, err, want, wantOK)
				}
			}
		}
	}
}
