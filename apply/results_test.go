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
	"github.com/smsform/smsform/state"
)

// bulk is the mapping of a provider answering
// {"messages":[{"to":…,"status":{"groupName":…,"description":…}}]}.
func bulk() *api.Results {
	reason := api.MustPointer("/status/description")
	return &api.Results{List: api.MustPointer("/messages"), Number: api.MustPointer("/to"), Status: api.MustPointer("/status/groupName"),
		Reason: &reason, Sent: []string{"PENDING", "ACCEPTED"}, Retry: []string{"THROTTLED"}, Duplicate: []string{"DUPLICATE"}}
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
	phones := []string{"+447400900001", "+447400900002", "+447400900003", "+447400900004", "+447400900005", "+14155550106", "+447400900007"}
	results := []api.RecipientResult{
		{Number: "447400900001", Status: "PENDING"},                                               // without the +
		{Number: "00447400900002", Status: "REJECTED", Reason: "blocked"},                         // 00
		{Number: "07400 900003", Status: "THROTTLED"},                                             // national
		{Number: "+44 7400-900004", Status: "DUPLICATE", Reason: "seen it"},                       // separators
		{Number: "+447400900005", Status: ""},                                                     // no status
		{Number: "+14155550106", Status: "ACCEPTED"}, {Number: "14155550106", Status: "REJECTED"}, // disagree
		{Number: "+447400900999", Status: "PENDING"}, // not in the batch
		// +447400900007 not mentioned
	}
	got := byPhone(StatusOfResults(bulk(), phones, api.SendResponse{Results: results}))
	want := map[string]string{
		"+447400900001": "sent: ",
		"+447400900002": "failed: refused by the provider: REJECTED: blocked",
		"+447400900003": "unsent: status THROTTLED",
		"+447400900004": "in_doubt: " + duplicateReason + ": DUPLICATE: seen it",
		"+447400900005": "in_doubt: " + reasonNoStatus,
		"+14155550106":  "in_doubt: " + reasonConflicting,
		"+447400900007": "in_doubt: " + reasonNotListed,
	}
	for ph, w := range want {
		if got[ph] != w {
			t.Errorf("%s: %q, want %q", ph, got[ph], w)
		}
	}
	if len(got) != len(phones) {
		t.Errorf("%d phones in parts, want %d", len(got), len(phones))
	}
	none := byPhone(StatusOfResults(bulk(), phones, api.SendResponse{NoList: "the answer is not JSON"}))
	for _, ph := range phones {
		if !strings.HasPrefix(none[ph], "in_doubt: "+reasonNoList) {
			t.Errorf("no list: %s is %q, want in doubt", ph, none[ph])
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
		parts := StatusOfResults(m, phones, resp)
		seen := map[string]int{}
		match := matchNumbers(phones)
		for _, p := range parts {
			for _, ph := range p.Phones {
				seen[ph]++
				if p.Status != state.Sent {
					continue
				}
				var says []string
				for _, r := range resp.Results {
					if i, ok := match(-1, r.Number); ok && phones[i] == ph {
						says = append(says, r.Status)
					}
				}
				if len(says) == 0 || slices.ContainsFunc(says, func(s string) bool { return !slices.Contains(m.Sent, s) }) {
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
	resp := api.SendResponse{Results: make([]api.RecipientResult, len(phones))}
	for i := range phones {
		phones[i] = fmt.Sprintf("+4477009%05d", i)
		resp.Results[i] = api.RecipientResult{Number: phones[i][1:], Status: "PENDING"}
	}
	m := bulk()
	for b.Loop() {
		if parts := StatusOfResults(m, phones, resp); len(parts) != 1 || parts[0].Status != state.Sent {
			b.Fatalf("%+v", parts)
		}
	}
}
