package e164

import (
	"errors"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		raw, region string
		want        Number
		reason      string // "" means valid
	}{
		{raw: "+447400123456", want: Number{E164: "+447400123456", Region: "GB"}},
		{raw: "+44 7400 123456", want: Number{E164: "+447400123456", Region: "GB"}},
		{raw: "+44 (0)7400-123.456", want: Number{E164: "+447400123456", Region: "GB"}},
		{raw: "07400 123456", region: "GB", want: Number{E164: "+447400123456", Region: "GB"}},
		{raw: "447400123456", region: "GB", want: Number{E164: "+447400123456", Region: "GB"}},
		{raw: "0044 7400 123456", region: "GB", want: Number{E164: "+447400123456", Region: "GB"}},
		{raw: "+447400123456", region: "US", want: Number{E164: "+447400123456", Region: "GB"}},
		{raw: "+442079460958", want: Number{E164: "+442079460958", FixedLineOnly: true, Region: "GB"}},
		{raw: "+12015550123", want: Number{E164: "+12015550123", Region: "US"}}, // fixed line or mobile
		{raw: "+14165550123", want: Number{E164: "+14165550123", Region: "CA"}}, // +1 shared: the region is the number's
		{raw: "+447781123456", want: Number{E164: "+447781123456", Region: "GG"}},
		{raw: "(201) 555-0123", region: "US", want: Number{E164: "+12015550123", Region: "US"}},
		{raw: "+393123456789", want: Number{E164: "+393123456789", Region: "IT"}},
		{raw: "+390612345678", want: Number{E164: "+390612345678", FixedLineOnly: true, Region: "IT"}}, // Italian leading zero
		{raw: "+80012345678", want: Number{E164: "+80012345678", Region: "001"}},
		{raw: "+44 7400 123456 ext. 12", want: Number{E164: "+447400123456", Region: "GB"}},
		{raw: "07400123456", reason: reasonNotE164},
		{raw: "07400 123456", reason: reasonNotE164},
		{raw: "+999123456", reason: "unknown country code"},
		{raw: "hello", region: "GB", reason: "not a phone number"},
		{raw: "", region: "GB", reason: "not a phone number"},
		{raw: "+4412", reason: "too short"},
		{raw: "+4", reason: "not a phone number"},
		{raw: "+44740012345678901234", reason: "too long"},
		{raw: "+441234", reason: "not a valid number for GB"},
		{raw: "+441000000000", reason: "not a valid number for GB"},
		{raw: "+80099", reason: "too short"},
	}
	for _, tt := range tests {
		t.Run(tt.raw+"@"+tt.region, func(t *testing.T) {
			got, err := NewNormalizer(tt.region).Normalize(tt.raw)
			if tt.reason == "" {
				if err != nil || got != tt.want {
					t.Errorf("Normalize(%q) = %+v, %v; want %+v", tt.raw, got, err, tt.want)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Reason != tt.reason {
				t.Errorf("Normalize(%q) = %+v, %v; want reason %q", tt.raw, got, err, tt.reason)
			}
		})
	}
}

func TestMask(t *testing.T) {
	tests := []struct{ in, want string }{
		{"+447700900123", "+44 77•• •••123"},
		{"+14155552671", "+1 41•• •••671"},
		{"+353851234567", "+353 85•• ••567"},
		{"+4930123456", "+49 30•• •456"},     // 8-digit national number
		{"+390612345678", "+39 06•• •••678"}, // leading zero kept as a digit
		{"+2901234", "+290 ••34"},            // short national number: last 2 only
		{"+4412345", "+44 •••45"},
		{"07700 900123", "••••••••••23"}, // not E.164: all but the last 2
		{"+999123456", "••••••••56"},     // unknown calling code
		{"+44", "•44"},
		{"ab", "ab"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Mask(tt.in); got != tt.want {
			t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestValidRegion(t *testing.T) {
	tests := []struct {
		region string
		want   bool
	}{
		{"GB", true}, {"US", true}, {"IT", true},
		{"gb", false}, {"", false}, {"001", false}, {"ZZ", false}, {"UK", false},
	}
	for _, tt := range tests {
		if got := ValidRegion(tt.region); got != tt.want {
			t.Errorf("ValidRegion(%q) = %v, want %v", tt.region, got, tt.want)
		}
	}
}
