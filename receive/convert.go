package receive

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nyaruka/phonenumbers"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/state"
)

// intl reads numbers written in international form: a report names no
// region to read a national one in, unless its mapping says (national).
var intl = e164.NewNormalizer("")

// phone is the E.164 form of a number as a provider wrote it in a report
// or a reply: with the + ("+447700900123", spaces and dashes allowed),
// without it ("447700900123", as providers often store numbers), or after
// the 00 international prefix, or as a tel: URI. "" when it is none of
// these, or not a valid number.
//
// A national form ("07700 900123", a US provider's "4155550123") names no
// country: without a region (the mapping's default_region) it is read as
// none, since guessing one could tie the report to someone else, or a STOP
// to a stranger; "4155550123" read as international is no number, and
// "6045550123" is one in Malaysia. With a region, a number without + or
// 00 is read as inRegion says.
func phone(raw, region string) string {
	raw = strings.TrimSpace(raw)
	if len(raw) > 4 && strings.EqualFold(raw[:4], "tel:") {
		// An RFC 3966 URI: a global number after tel:, its parameters
		// (;ext=, ;phone-context=) not part of it; a local one ("tel:7042;
		// phone-context=…") is no international form.
		raw, _, _ = strings.Cut(raw[4:], ";")
		if !strings.HasPrefix(raw, "+") {
			return ""
		}
	}
	if raw == "" {
		return ""
	}
	if !strings.HasPrefix(raw, "+") {
		if rest, ok := strings.CutPrefix(raw, "00"); ok {
			raw = rest
		} else if region != "" {
			return inRegion(raw, region)
		} else if strings.HasPrefix(raw, "0") || strings.HasPrefix(raw, "(") {
			// National ("07700 900123", "(201) 555-0135": an area code
			// in brackets is no country code): no country to read it in.
			return ""
		}
		raw = "+" + raw
	}
	n, err := intl.Normalize(raw)
	if err != nil {
		return ""
	}
	return n.E164
}

// inRegion reads raw, a number without + or 00, for a mapping whose
// default_region is region. It may be national there ("4155550123",
// "01701234567") or international without its + ("491701234567", as
// most providers store numbers), and in most countries both readings can
// be numbers: a German provider's "491701234567" is +49 1701234567, and
// also a valid German number +49 491701234567 read nationally. So:
//
//   - with the region's trunk prefix (0) or a bracketed area code, it is
//     national;
//   - starting with the region's own country code, it is international
//     when that reading is a number;
//   - otherwise the reading that is a number is taken; when both are and
//     differ, only in the North American plan (+1), whose national
//     numbers are exactly ten digits never starting with 0 or 1, is the
//     national reading sure. Elsewhere it is none: a STOP read as the
//     wrong number would opt out a stranger and leave its sender messaged,
//     so such a reply is refused, saying why.
func inRegion(raw, region string) string {
	national := ""
	if n, err := e164.NewNormalizer(region).Normalize(raw); err == nil {
		national = n.E164
	}
	if strings.HasPrefix(raw, "0") || strings.HasPrefix(raw, "(") {
		return national
	}
	international := ""
	if n, err := intl.Normalize("+" + raw); err == nil {
		international = n.E164
	}
	cc := strconv.Itoa(phonenumbers.GetCountryCodeForRegion(region))
	switch {
	case strings.HasPrefix(international, "+"+cc): // country codes are prefix-free
		return international
	case national == "" || national == international:
		return international
	case international == "" || cc == "1":
		return national
	}
	return ""
}

// deliveries are the state's words for what a mapping read.
var deliveries = [...]state.Delivery{mapping.Pending: state.Pending, mapping.Delivered: state.Delivered, mapping.Undelivered: state.Undelivered}

// stateReports turns what the mapping read into what the state records.
func stateReports(rs []mapping.Report, region string) []state.Report {
	out := make([]state.Report, len(rs))
	for i, r := range rs {
		out[i] = stateReport(r, region)
	}
	return out
}

// stateReport is r as the state records it, its number read in region
// where it has no country code.
func stateReport(r mapping.Report, region string) state.Report {
	p := phone(r.Number, region)
	return state.Report{ProviderID: r.ID, Phone: p, Unreadable: p == "" && strings.TrimSpace(r.Number) != "",
		Delivery: deliveries[r.Delivery], ProviderStatus: r.Status, Reason: r.Reason, At: r.At}
}

// stateReplies turns what the mapping read into what the state records. A
// reply whose number cannot be read names nobody to opt out: the body is
// refused, naming the reply.
func stateReplies(rs []mapping.Reply, m *mapping.Replies) ([]state.Reply, error) {
	out := make([]state.Reply, len(rs))
	for i, r := range rs {
		p := phone(r.Number, m.DefaultRegion)
		if p == "" {
			where := "the body"
			if m.List != nil {
				where = fmt.Sprintf("element %d of %s", i, m.List)
			}
			if m.DefaultRegion != "" {
				return nil, fmt.Errorf("%s: the number at %s is no phone number in international form or of %s, or reads as one of %s and as another number in international form without its +, and naming the wrong one would opt out a stranger", where, m.Number, m.DefaultRegion, m.DefaultRegion)
			}
			return nil, fmt.Errorf("%s: the number at %s is not a phone number in international form (a national one needs provider.replies.default_region)", where, m.Number)
		}
		out[i] = state.Reply{ProviderID: r.ID, Phone: p, Text: r.Text, At: r.At}
	}
	return out, nil
}

// cleaner makes a provider's text fit to keep: ids and statuses without
// control characters; words without them, and without anything that may
// be a phone number (a provider's words are shown to people).
type cleaner struct{}

func (cleaner) ID(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

func (cleaner) Words(s string) string {
	return e164.MaskAny(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s))
}
