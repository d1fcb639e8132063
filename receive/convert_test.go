package receive

import (
	"strings"
	"testing"

	"github.com/smsform/smsform/internal/mapping"
)

// TestPhone: numbers are read in the international forms providers echo,
// and a national one (which names no country) is read as none.
func TestPhone(t *testing.T) {
	for raw, want := range map[string]string{
		"+447400123456":            "+447400123456",
		"447400123456":             "+447400123456",
		"00447400123456":           "+447400123456",
		" +44 7400 123456 ":        "+447400123456",
		"+1 (415) 555-0101":        "+14155550101",
		"33612340016":              "+33612340016",
		"07400123456":              "",
		"(201) 555-0135":           "",
		"0":                        "",
		"+447700":                  "",
		"ACME":                     "",
		"":                         "",
		"+44740012345645678901234": "",
		"tel:+44-7400-123456":      "+447400123456",
		"TEL:+447400123456;ext=12": "+447400123456",
		"tel:7042;phone-context=x": "",
		"tel:":                     "",
		"tel:447400123456":         "",
	} {
		if got := phone(raw, ""); got != want {
			t.Errorf("phone(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestPhoneInRegion: with a mapping's default_region, a national number
// is read in that country, first: a US provider's ten digits are no
// number, or someone in another country, read as international. The
// international forms read as before, and so does a number that is none in
// the region.
func TestPhoneInRegion(t *testing.T) {
	for _, c := range []struct{ raw, region, want string }{
		{"4155550123", "", ""},
		{"6045550123", "", "+6045550123"}, // Malaysia: why a region is needed
		{"4155550123", "US", "+14155550123"},
		{"6045550123", "US", "+16045550123"},
		{"(604) 555-0123", "CA", "+16045550123"},
		{"14155550123", "US", "+14155550123"},
		{"011447400123456", "US", "+447400123456"},
		{"447400123456", "US", "+447400123456"},
		{"+447400123456", "US", "+447400123456"},
		{"00447400123456", "US", "+447400123456"},
		{"07400123456", "GB", "+447400123456"},
		{"7400123456", "GB", "+447400123456"},
		{"447400123456", "GB", "+447400123456"},
		{"14155550123", "GB", "+14155550123"},
		{"07400123456", "US", ""},
		{"555", "US", ""},
		{"(201) 555-0135", "US", "+12015550135"},
		{"(555) 12", "US", ""},
		// Where national numbers vary in length, a number written in
		// international form without its + is also a national one: the
		// region's own country code makes it international; a reading that
		// is a number either way is none (a STOP read as the wrong number
		// opts out a stranger).
		{"491701234567", "DE", "+491701234567"},
		{"4915112345678", "DE", "+4915112345678"},
		{"01701234567", "DE", "+491701234567"},
		{"447400123456", "DE", ""},
		{"33612345678", "AT", ""},
		{"33612345678", "IT", ""},
		{"4369912345678", "AT", "+4369912345678"},
		{"tel:4155550123", "US", ""},
	} {
		if got := phone(c.raw, c.region); got != c.want {
			t.Errorf("phone(%q, %q) = %q, want %q", c.raw, c.region, got, c.want)
		}
	}
}

// TestCleaner: ids and statuses lose control characters; a provider's
// words lose them too, and anything that may be a phone number.
func TestCleaner(t *testing.T) {
	var c cleaner
	if got := c.ID("msg\x00-1\n7\x7f"); got != "msg-17" {
		t.Errorf("ID = %q", got)
	}
	got := c.Words("Absent subscriber +447400123456\r\nretry 2026-03-01")
	if strings.Contains(got, "900123") || strings.ContainsAny(got, "\r\n") || !strings.Contains(got, "Absent subscriber") || !strings.Contains(got, "2026-03-01") {
		t.Errorf("Words = %q", got)
	}
}

// TestStateReportUnreadable: a report whose number cannot be read says so,
// for the reason it is unmatched; one with no number does not.
func TestStateReportUnreadable(t *testing.T) {
	for number, want := range map[string]bool{"07400123456": true, "+447700": true, "": false, " ": false, "+447400123456": false} {
		r := stateReport(mapping.Report{ID: "m-1", Number: number}, "")
		if r.Unreadable != want || (r.Phone == "") != (number != "+447400123456") {
			t.Errorf("number %q: unreadable %v, phone %q; want unreadable %v", number, r.Unreadable, r.Phone, want)
		}
	}
}
