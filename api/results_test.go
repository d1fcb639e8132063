package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// bulkResults is the mapping of a provider that answers
// {"messages":[{"to":…,"status":{"groupName":…,"description":…}}]}.
func bulkResults() *Results {
	reason := MustPointer("/status/description")
	return &Results{List: MustPointer("/messages"), Number: MustPointer("/to"), Status: MustPointer("/status/groupName"),
		Reason: &reason, Sent: []string{"PENDING"}, Retry: []string{"THROTTLED"}, Duplicate: []string{"DUPLICATE"}}
}

// TestSendResults: with Results, the answer's list comes back as the
// provider wrote it, or NoList says why there is none; never a verdict.
func TestSendResults(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		status     int
		want       []RecipientResult // nil: none
		noList     string            // substring of NoList; "" when the list is read
	}{
		{name: "per recipient", body: `{"messages":[{"to":"447700900123","status":{"groupName":"PENDING"}},` +
			`{"to":14155550101,"status":{"groupName":"REJECTED","description":"Destination +14155550101 blocked, key ` + testSecret + `"}}]}`,
			want: []RecipientResult{{"447700900123", "PENDING", ""}, {"14155550101", "REJECTED", "Destination +[number] blocked, key [redacted]"}}},
		{name: "no number, null status", body: `{"messages":[{"status":{"groupName":"PENDING"}},{"to":"+447700900123","status":null},{"to":null}]}`,
			want: []RecipientResult{{"+447700900123", "", ""}}},
		{name: "status as a number", body: `{"messages":[{"to":"+447700900123","status":{"groupName":1}}]}`,
			want: []RecipientResult{{"+447700900123", "1", ""}}},
		{name: "empty list", body: `{"messages":[]}`, want: []RecipientResult{}},
		{name: "list absent", body: `{"request_id":"r"}`, noList: `no list of recipients at /messages: JSON pointer /messages: at "messages": no such key`},
		{name: "list null", body: `{"messages":null}`, noList: "holds null at /messages"},
		{name: "list an object", body: `{"messages":{"to":"+447700900123"}}`, noList: "holds an object at /messages"},
		{name: "not JSON", body: `OK`, noList: "not JSON"},
		{name: "cut short", body: `{"messages":[` + strings.Repeat(`{"to":"1"},`, MaxResponseBytes/10) + `{}]}`, noList: "longer than"},
		{name: "no body", status: 204, noList: "no body"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(max(tt.status, 200))
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, ClientID: testID, ClientSecret: testSecret, Results: bulkResults()}
			resp, err := c.Send(context.Background(), testToken, testReq)
			if err != nil {
				t.Fatal(err)
			}
			if tt.noList != "" {
				if !strings.Contains(resp.NoList, tt.noList) || resp.Results != nil {
					t.Errorf("NoList %q, results %v; want NoList to say %q and no results", resp.NoList, resp.Results, tt.noList)
				}
				return
			}
			got, _ := json.Marshal(resp.Results)
			want, _ := json.Marshal(tt.want)
			if resp.NoList != "" || string(got) != string(want) {
				t.Errorf("results %s (NoList %q), want %s", got, resp.NoList, want)
			}
		})
	}
}

// TestSendResultsBounded: a list far longer than the request is read only
// as far as 2×recipients+16 elements.
func TestSendResultsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := range 15000 {
		fmt.Fprintf(&b, `{"to":"+4477009%05d","status":{"groupName":"PENDING"}},`, i)
	}
	b.WriteString(`{}]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, b.String()) }))
	defer srv.Close()
	resp, err := (&Client{BaseURL: srv.URL, Results: bulkResults()}).Send(context.Background(), testToken, testReq)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != maxResultsFor(len(testReq.To)) {
		t.Errorf("%d results read, want %d", len(resp.Results), maxResultsFor(len(testReq.To)))
	}
}

// TestSendWithoutResults: without the mapping, the list is not read.
func TestSendWithoutResults(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"messages":[{"to":"+447700900123","status":{"groupName":"REJECTED"}}]}`)
	}))
	defer srv.Close()
	resp, err := (&Client{BaseURL: srv.URL}).Send(context.Background(), testToken, testReq)
	if err != nil || resp.Results != nil || resp.NoList != "" {
		t.Errorf("got %+v, %v; want a plain success", resp, err)
	}
}

// FuzzResults: whatever the answer (malformed, huge, deeply nested), the
// read is bounded, never panics, and never makes up a result: each one
// has a number and a status the answer wrote.
func FuzzResults(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"to":"447700900123","status":{"groupName":"PENDING","description":"ok"}}]}`,
		`{"messages":[{"to":1,"status":{"groupName":["PENDING"]}}]}`, `{"messages":[[]]}`, `{"messages":"PENDING"}`,
		`{"messages":[` + strings.Repeat(`{"to":"1","status":{"groupName":"PENDING"}},`, 100) + `{}]}`,
		strings.Repeat(`{"messages":[`, 200), `[]`, `null`, ``, `<html>`,
	} {
		f.Add([]byte(s), 2)
	}
	r := bulkResults()
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		n = max(1, min(n, 1000))
		c := &Client{Results: r, ClientSecret: testSecret}
		if !json.Valid(body) {
			return
		}
		got, noList := c.readResults(body, n, testToken)
		if noList != "" && got != nil {
			t.Fatalf("results %v with NoList %q", got, noList)
		}
		if len(got) > maxResultsFor(n) {
			t.Fatalf("%d results for %d recipients", len(got), n)
		}
		for _, res := range got {
			if res.Number == "" {
				t.Fatalf("a result without a number: %+v", res)
			}
			if res.Status != "" && utf8.Valid(body) && !strings.Contains(string(body), "\\") && !strings.Contains(string(body), res.Status) && !strings.Contains(res.Status, "[redacted]") {
				t.Fatalf("status %q is not in the answer %q", res.Status, body)
			}
		}
	})
}

// BenchmarkReadResults reads a provider's answer listing 1,000 recipients,
// as a bulk API writes it: what apply adds to each request of 1,000.
func BenchmarkReadResults(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"request_id":"r-1","messages":[`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"to":"4477009%05d","status":{"groupName":"PENDING","description":"Message sent to next instance"}}`, i)
	}
	sb.WriteString(`]}`)
	doc := []byte(sb.String())
	c := &Client{Results: bulkResults()}
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if rs, _ := c.readResults(doc, 1000, testToken); len(rs) != 1000 {
			b.Fatal(len(rs))
		}
	}
}
