package apply

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/state"
)

// strs are status values of words.
func strs(ws ...string) []mapping.Value {
	vs := make([]mapping.Value, len(ws))
	for i, w := range ws {
		vs[i] = mapping.StringValue(w)
	}
	return vs
}

func ptr(s string) *rawjson.Pointer {
	p := rawjson.MustPointer(s)
	return &p
}

// bulk is the mapping of a provider answering
// {"messages":[{"to":…,"messageId":…,"status":{"groupName":…,"description":…}}]}.
func bulk() *mapping.Results {
	return &mapping.Results{Others: mapping.InDoubt, Lists: []mapping.List{{
		List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/to"), Status: ptr("/status/groupName"), ID: ptr("/messageId"),
		Reason: ptr("/status/description"), Sent: strs("PENDING", "ACCEPTED"), Retry: strs("THROTTLED"), Duplicate: strs("DUPLICATE"),
		Failed: strs("REJECTED"), Where: "smsform.yaml:7"}}}
}

// byPhone is parts as phone → "status: reason".
func byPhone(parts []Part) map[string]string {
	out := map[string]string{}
	for _, p := range parts {
		for _, ph := range p.Phones {
			out[ph] = p.Status.String() + ": " + p.Reason
		}
	}
	return out
}

func TestStatusOfResults(t *testing.T) {
	phones := []string{"+447400900001", "+447400900002", "+447400900003", "+447400900004", "+447400900005", "+14155550106", "+447400900007",
		"+447400900008", "+447400900009"}
	m := bulk()
	el := func(number, status, reason string) mapping.Element {
		v := mapping.StringValue(status)
		e := mapping.Element{Number: number, Status: status, Reason: reason, Outcome: m.Lists[0].OutcomeOf(v), ID: "id-" + number}
		if status == "" {
			e.NoStatus, e.Outcome = "absent", mapping.Unrecognised
		}
		return e
	}
	answer := mapping.Answer{Complete: true, Elements: []mapping.Element{
		el("447400900001", "PENDING", ""),                                     // without the +
		el("00447400900002", "REJECTED", "blocked"),                           // 00
		el("07400 900003", "THROTTLED", ""),                                   // national
		el("+44 7400-900004", "DUPLICATE", "seen it"),                         // separators
		el("+447400900005", "", ""),                                           // no status
		el("+14155550106", "ACCEPTED", ""), el("14155550106", "REJECTED", ""), // disagree
		el("+447400900999", "PENDING", ""),                                             // not in the batch
		el("+447400900008", "Accepted", "queued"), el("+447400900009", "Accepted", ""), // a status nobody named: in doubt, never failed
		// +447400900007 not mentioned
	}}
	v := StatusOfResults(m, phones, answer)
	got := byPhone(v.Parts)
	unknown := `in_doubt: the provider answered status "Accepted", which provider.results (smsform.yaml:7) does not name: in doubt until you list it under sent, failed, retry or duplicate`
	want := map[string]string{
		"+447400900001": "sent: ",
		"+447400900002": "failed: refused by the provider: REJECTED: blocked",
		"+447400900003": "unsent: status THROTTLED",
		"+447400900004": "in_doubt: " + duplicateReason + ": DUPLICATE: seen it",
		"+447400900005": "in_doubt: " + reasonNoStatus + " (absent at /status/groupName)",
		"+14155550106":  "in_doubt: " + reasonConflicting,
		"+447400900007": "in_doubt: " + reasonNotListed,
		"+447400900008": unknown + " (the provider's words: queued)",
		"+447400900009": unknown,
	}
	for ph, w := range want {
		if got[ph] != w {
			t.Errorf("%s: %q, want %q", ph, got[ph], w)
		}
	}
	if len(got) != len(phones) {
		t.Errorf("%d phones in parts, want %d", len(got), len(phones))
	}
	if len(v.Unrecognised) != 1 || v.Unrecognised[0] != (UnknownStatus{Status: "Accepted", Where: "smsform.yaml:7", Recipients: 2}) {
		t.Errorf("unrecognised %+v, want Accepted twice", v.Unrecognised)
	}
	// Each recipient keeps its message's id, in the order of its part.
	for _, p := range v.Parts {
		if p.Status == state.Sent && (len(p.IDs) != 1 || p.IDs[0] != "id-447400900001") {
			t.Errorf("sent part ids %q", p.IDs)
		}
		if p.Reason == reasonNotListed && (len(p.IDs) != 0) {
			t.Errorf("a recipient nobody listed has ids %q", p.IDs)
		}
	}
	none := byPhone(StatusOfResults(m, phones, mapping.Answer{Problem: "the answer is not JSON"}).Parts)
	for _, ph := range phones {
		if !strings.HasPrefix(none[ph], "in_doubt: "+reasonNoList) {
			t.Errorf("no list: %s is %q, want in doubt", ph, none[ph])
		}
	}
}

// TestOneRecipientNoNumber: the answer to one recipient may name no number
// (Vonage's refusals): its element is about that recipient.
func TestOneRecipientNoNumber(t *testing.T) {
	m := bulk()
	v := StatusOfResults(m, []string{"+447400900001"}, mapping.Answer{Complete: true, Elements: []mapping.Element{
		{Status: "REJECTED", Outcome: mapping.Failed, Reason: "unroutable"}}})
	if got := byPhone(v.Parts); got["+447400900001"] != "failed: refused by the provider: REJECTED: unroutable" {
		t.Errorf("%q", got)
	}
	v = StatusOfResults(m, []string{"+447400900001", "+447400900002"}, mapping.Answer{Complete: true, Elements: []mapping.Element{
		{Status: "REJECTED", Outcome: mapping.Failed}}})
	if got := byPhone(v.Parts); got["+447400900001"] != "in_doubt: "+reasonNotListed {
		t.Errorf("two recipients: %q", got)
	}
}

// TestOthers: with others: sent, a recipient no list names is sent only
// when the answer was read whole; otherwise in doubt.
func TestOthers(t *testing.T) {
	phones := []string{"+447400900001", "+447400900002"}
	m := &mapping.Results{Others: mapping.Sent, Lists: []mapping.List{{List: rawjson.MustPointer("/invalid_number"), Number: rawjson.Pointer{},
		Outcome: mapping.Failed, Optional: true}}}
	refused := mapping.Element{Number: "447400900002", Outcome: mapping.Failed}
	for _, tt := range []struct {
		complete bool
		want     string
	}{{true, "sent: "}, {false, "in_doubt: " + reasonOthersHeld}} {
		got := byPhone(StatusOfResults(m, phones, mapping.Answer{Complete: tt.complete, Elements: []mapping.Element{refused}}).Parts)
		if got["+447400900001"] != tt.want || got["+447400900002"] != "failed: refused by the provider: listed at /invalid_number" {
			t.Errorf("complete %v: %q", tt.complete, got)
		}
	}
}

// TestMatchNumbers: a national form matches only when one number of the
// batch reads so; two countries' numbers that look alike match neither.
func TestMatchNumbers(t *testing.T) {
	match := matchNumbers([]string{"+447400900123", "+33612345678", "+4915123456789"})
	for raw, want := range map[string]int{
		"+447400900123": 0, "447400900123": 0, "0044 7400 900123": 0, "07400 900123": 0, "(0)7400-900123": 0,
		"33612345678": 1, "06 12 34 56 78": 1, "015123456789": 2, "+49 151 23456789": 2,
		"7400900123": 0, "1234": -1, "+447400900124": -1, "sms:+447400900123": -1, "": -1, "00": -1, "+": -1,
	} {
		// Where the number stands in the answer only says which of the
		// batch's numbers to try first: never what it matches.
		for at := -1; at <= 3; at++ {
			i, ok := match(at, raw)
			if want < 0 && ok || want >= 0 && (!ok || i != want) {
				t.Errorf("match(%d, %q) = %d, %v; want %d", at, raw, i, ok, want)
			}
		}
	}
	// The same national number in two countries of one batch names nobody.
	twin := matchNumbers([]string{"+447400123459", "+497400123459"})
	if _, ok := twin(0, "07400123459"); ok {
		t.Errorf("an ambiguous national number was matched")
	}
}

// FuzzStatusOfResults: whatever a provider answers, read by the client and
// mapped here, every recipient gets exactly one outcome, and one is sent
// only if an element naming it says a sent status and none says another.
func FuzzStatusOfResults(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"to":"447400900001","status":{"groupName":"PENDING"}},{"to":"+447400900002","status":{"groupName":"REJECTED"}}]}`,
		`{"messages":[{"to":"07400900001","status":{"groupName":"PENDING"}},{"to":"07400900001","status":{"groupName":"THROTTLED"}}]}`,
		`{"messages":[{"to":447400900001,"status":{"groupName":"ACCEPTED"}}]}`, `{"messages":{}}`, `[]`, `OK`, ``,
		`{"messages":[` + strings.Repeat(`{"to":"+447400900001","status":{"groupName":"PENDING"}},`, 50) + `{}]}`,
		strings.Repeat(`[`, 5000),
	} {
		f.Add([]byte(s))
	}
	phones := []string{"+447400900001", "+447400900002", "+447400900003"}
	m := bulk()
	f.Fuzz(func(t *testing.T, body []byte) {
		// The answer comes through the client as from a provider, without
		// a socket: the fuzzer tries many.
		answer := roundTrip(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(body)), Header: http.Header{}}, nil
		})
		c := &api.Client{BaseURL: "http://provider.test", Results: m, HTTP: &http.Client{Transport: answer}}
		resp, err := c.Send(context.Background(), "tok", api.SendRequest{To: phones})
		if err != nil {
			t.Skip(err)
		}
		parts := StatusOfResults(m, phones, resp.Answer).Parts
		seen := map[string]int{}
		match := matchNumbers(phones)
		for _, p := range parts {
			for _, ph := range p.Phones {
				seen[ph]++
				if p.Status != state.Sent {
					continue
				}
				var says []string
				for _, e := range resp.Answer.Elements {
					if i, ok := match(-1, e.Number); ok && phones[i] == ph {
						says = append(says, e.Status)
					}
				}
				accepted := func(s string) bool { return slices.Contains(m.Lists[0].Sent, mapping.StringValue(s)) }
				if len(says) == 0 || slices.ContainsFunc(says, func(s string) bool { return !accepted(s) }) {
					t.Fatalf("%s recorded sent, but the answer says %q: %s", ph, says, body)
				}
			}
		}
		for _, ph := range phones {
			if seen[ph] != 1 {
				t.Fatalf("%s in %d parts", ph, seen[ph])
			}
		}
	})
}

// roundTrip answers requests without a network.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkStatusOfResults maps a provider's answer for 1,000 recipients,
// listed in the order they were sent and without their +, as bulk APIs
// echo them: what apply adds to each request of 1,000 once the answer is
// read.
func BenchmarkStatusOfResults(b *testing.B) {
	phones := make([]string, 1000)
	a := mapping.Answer{Complete: true, Elements: make([]mapping.Element, len(phones))}
	for i := range phones {
		phones[i] = fmt.Sprintf("+4477009%05d", i)
		a.Elements[i] = mapping.Element{Number: phones[i][1:], Status: "PENDING", Outcome: mapping.Sent}
	}
	m := bulk()
	for b.Loop() {
		if v := StatusOfResults(m, phones, a); len(v.Parts) != 1 || v.Parts[0].Status != state.Sent {
			b.Fatalf("%+v", v.Parts)
		}
	}
}

// TestNamesNobody: an element of the answer that names no recipient of
// the batch (a number that does not read as one, a recipient of another
// batch, a national number two of the batch read as) may be about any
// recipient the answer does not name, so others: sent does not hold for
// them: they are in doubt. Those it names keep their outcome. A recipient
// listed twice is sent only when both say sent.
func TestNamesNobody(t *testing.T) {
	phones := []string{"+447400123459", "+447400123564", "+447400123670"}
	plivo := &mapping.Results{Others: mapping.Sent, Lists: []mapping.List{{List: rawjson.MustPointer("/invalid_number"), Number: rawjson.Pointer{},
		Outcome: mapping.Failed, Optional: true}}}
	// Two lists, the accepted and the refused, and the rest sent.
	two := &mapping.Results{Others: mapping.Sent, Lists: []mapping.List{
		{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/to"), Outcome: mapping.Sent},
		{List: rawjson.MustPointer("/errors"), Number: rawjson.MustPointer("/number"), Outcome: mapping.Failed, Optional: true}}}
	status := bulk()
	status.Others = mapping.Sent
	refused := func(number string) mapping.Element { return mapping.Element{Number: number, Outcome: mapping.Failed} }
	el := func(number, s string) mapping.Element {
		return mapping.Element{Number: number, Status: s, Outcome: status.Lists[0].OutcomeOf(mapping.StringValue(s))}
	}
	const (
		sent     = "sent: "
		failed   = "failed: refused by the provider: listed at /invalid_number"
		held     = "in_doubt: " + reasonOthersHeld
		conflict = "in_doubt: " + reasonConflicting
	)
	for _, tt := range []struct {
		name     string
		m        *mapping.Results
		phones   []string
		elements []mapping.Element
		want     []string // per phone
	}{
		{"a clean answer: the others sent", plivo, phones, []mapping.Element{refused("447400123564")}, []string{sent, failed, sent}},
		{"a number with words in it", plivo, phones, []mapping.Element{refused("447400123564 (invalid)")}, []string{held, held, held}},
		{"one named, one not", plivo, phones, []mapping.Element{refused("447400123564"), refused("447400123670 (invalid)")},
			[]string{held, failed, held}},
		{"a recipient of another batch", plivo, phones, []mapping.Element{refused("447400123999")}, []string{held, held, held}},
		{"a national number two recipients read as", plivo, []string{"+447400123459", "+497400123459", "+447400123670"},
			[]mapping.Element{refused("07400123459")}, []string{held, held, held}},
		{"a request of one: a number not its own", plivo, phones[:1], []mapping.Element{refused("447400123999")}, []string{held}},
		{"a request of one: no number is its own", plivo, phones[:1], []mapping.Element{refused("")}, []string{failed}},
		{"refused twice: failed", plivo, phones, []mapping.Element{refused("447400123564"), refused("+447400123564")}, []string{sent, failed, sent}},
		{"accepted and refused: in doubt", two, phones, []mapping.Element{
			{Number: "447400123459", Outcome: mapping.Sent}, {List: 1, Number: "447400123459", Outcome: mapping.Failed}},
			[]string{conflict, sent, sent}},
		{"sent and retry: in doubt, never sent again", status, phones, []mapping.Element{el("447400123459", "PENDING"), el("447400123459", "THROTTLED")},
			[]string{conflict, sent, sent}},
		{"retry and sent: in doubt", status, phones, []mapping.Element{el("447400123459", "THROTTLED"), el("447400123459", "PENDING")},
			[]string{conflict, sent, sent}},
		{"sent and a status nobody named: in doubt", status, phones, []mapping.Element{el("447400123459", "PENDING"), el("447400123459", "Pending")},
			[]string{conflict, sent, sent}},
		{"sent twice: sent", status, phones, []mapping.Element{el("447400123459", "PENDING"), el("447400123459", "ACCEPTED")},
			[]string{sent, sent, sent}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := byPhone(StatusOfResults(tt.m, tt.phones, mapping.Answer{Complete: true, Elements: tt.elements}).Parts)
			for i, ph := range tt.phones {
				if got[ph] != tt.want[i] {
					t.Errorf("%s: %q, want %q", ph, got[ph], tt.want[i])
				}
			}
			if len(got) != len(tt.phones) {
				t.Errorf("%d phones in parts, want %d", len(got), len(tt.phones))
			}
		})
	}
}
