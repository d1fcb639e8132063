package e164

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// benchInput is a number as it arrives in a list, with the region it is read
// under.
type benchInput struct{ raw, region string }

// benchNumbers is a realistic list: mobile numbers from 14 countries with
// their last digits varied (about 1% broken), mostly in E.164, some written
// with spaces, and a share of British numbers in national format read with
// region GB.
func benchNumbers(n int) []benchInput {
	regions := []string{"GB", "US", "DE", "FR", "IT", "ES", "NL", "IN", "BR", "NG", "AU", "JP", "MX", "ZA"}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]benchInput, 0, n)
	for len(out) < n {
		region := regions[rng.IntN(len(regions))]
		ex := phonenumbers.GetExampleNumberForType(region, phonenumbers.MOBILE)
		nsn := []byte(phonenumbers.GetNationalSignificantNumber(ex))
		for i := max(len(nsn)-4, 2); i < len(nsn); i++ {
			nsn[i] = byte('0' + rng.IntN(10))
		}
		if rng.IntN(100) == 0 {
			nsn = nsn[:len(nsn)-3] // broken: too short
		}
		cc := strconv.Itoa(int(ex.GetCountryCode()))
		switch {
		case region == "GB" && rng.IntN(2) == 0:
			out = append(out, benchInput{"0" + string(nsn), "GB"})
		case rng.IntN(10) == 0:
			num, _ := phonenumbers.Parse("+"+cc+string(nsn), "")
			out = append(out, benchInput{phonenumbers.Format(num, phonenumbers.INTERNATIONAL), ""})
		default:
			out = append(out, benchInput{"+" + cc + string(nsn), ""})
		}
	}
	return out
}

func naiveNormalize(raw, region string) (Number, bool) {
	num, err := phonenumbers.Parse(raw, region)
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return Number{}, false
	}
	return Number{
		E164:          phonenumbers.Format(num, phonenumbers.E164),
		FixedLineOnly: phonenumbers.GetNumberType(num) == phonenumbers.FIXED_LINE,
		Region:        phonenumbers.GetRegionCodeForNumber(num),
	}, true
}

// BenchmarkNormalize compares Normalize with the plain phonenumbers calls it
// must agree with, per number.
func BenchmarkNormalize(b *testing.B) {
	inputs := benchNumbers(4096)
	norm := map[string]*Normalizer{"": NewNormalizer(""), "GB": NewNormalizer("GB")}
	b.Run("phonenumbers", func(b *testing.B) {
		i := 0
		for b.Loop() {
			in := inputs[i%len(inputs)]
			naiveNormalize(in.raw, in.region)
			i++
		}
	})
	b.Run("smsform", func(b *testing.B) {
		i := 0
		for b.Loop() {
			in := inputs[i%len(inputs)]
			norm[in.region].Normalize(in.raw)
			i++
		}
	})
}
