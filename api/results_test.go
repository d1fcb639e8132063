package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
)

// bulkResults is the mapping of a provider that answers
// {"bulkId":…,"messages":[{"to":…,"messageId":…,"status":{"groupName":…,"description":…}}]}.
func bulkResults() *mapping.Results {
	reason, id, batch := rawjson.MustPointer("/status/description"), rawjson.MustPointer("/messageId"), rawjson.MustPointer("/bulkId")
	status := rawjson.MustPointer("/status/groupName")
	return &mapping.Results{BatchID: &batch, Others: mapping.InDoubt, Lists: []mapping.List{{
		List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/to"), Status: &status, ID: &id, Reason: &reason,
		Sent: []mapping.Value{mapping.StringValue("PENDING")}, Retry: []mapping.Value{mapping.StringValue("THROTTLED")},
		Duplicate: []mapping.Value{mapping.StringValue("DUPLICATE")}}}}
}

// TestSendResults: with Results, the answer is read as the mapping says,
// the provider's words and ids scrubbed, or Problem says why it cannot be;
// an unreadable answer lists nobody.
func TestSendResults(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		status     int
		want       string // the elements, as number/outcome/status/id/reason
		batch      string // the request id found
		incomplete bool   // some element names nobody: the answer is not read whole
		problem    string // substring of Problem; "" when the answer was read
	}{
		{name: "per recipient", body: `{"bulkId":"bulk-7","messages":[{"to":"447700900123","messageId":"m-1","status":{"groupName":"PENDING"}},` +
			`{"to":14155550101,"messageId":2,"status":{"groupName":"REJECTED","description":"Destination +14155550101 blocked, key ` + testSecret + `"}}]}`,
			want:  "447700900123/sent/PENDING/m-1/ 14155550101/unrecognised/REJECTED/2/Destination +[number] blocked, key [redacted]",
			batch: "bulk-7"},
		{name: "no number, null status", body: `{"messages":[{"status":{"groupName":"PENDING"}},{"to":"+447700900123","status":null},{"to":null}]}`,
			want: "+447700900123/unrecognised/(absent)//", incomplete: true}, // elements that name nobody: not read whole
		{name: "status as a number", body: `{"messages":[{"to":"+447700900123","status":{"groupName":1.0}}]}`,
			want: "+447700900123/unrecognised/1.0//"},
		{name: "a secret as an id", body: `{"messages":[{"to":"+447700900123","messageId":"` + testSecret + `","status":{"groupName":"PENDING"}}]}`,
			want: "+447700900123/sent/PENDING/[redacted]/"},
		{name: "empty list", body: `{"messages":[]}`, want: ""},
		{name: "list absent", body: `{"request_id":"r"}`, problem: `no list of recipients at /messages: JSON pointer /messages: at "messages": no such key`},
		{name: "list null", body: `{"messages":null}`, problem: "holds null at /messages"},
		{name: "list an object", body: `{"messages":{"to":"+447700900123"}}`, problem: "holds an object at /messages"},
		{name: "not JSON", body: `OK`, problem: "not JSON"},
		{name: "cut short", body: `{"messages":[` + strings.Repeat(`{"to":"1"},`, MaxResponseBytes/10) + `{}]}`, problem: "longer than"},
		{name: "no body", status: 204, problem: "no body"},
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
			a := resp.Answer
			if tt.problem != "" {
				if !strings.Contains(a.Problem, tt.problem) || a.Elements != nil || a.Complete {
					t.Errorf("Problem %q, elements %v, complete %v; want the problem %q and nobody listed", a.Problem, a.Elements, a.Complete, tt.problem)
				}
				return
			}
			if got := elements(a); a.Problem != "" || got != tt.want || a.Complete == tt.incomplete {
				t.Errorf("elements %q (problem %q, complete %v), want %q", got, a.Problem, a.Complete, tt.want)
			}
			if tt.batch != "" && resp.RequestID != tt.batch {
				t.Errorf("request id %q, want the batch id %q", resp.RequestID, tt.batch)
			}
		})
	}
}

// elements writes an answer's elements for comparison.
func elements(a mapping.Answer) string {
	var parts []string
	for _, e := range a.Elements {
		status := e.Status
		if e.NoStatus != "" {
			status = "(" + e.NoStatus + ")"
		}
		parts = append(parts, strings.Join([]string{e.Number, e.Outcome.String(), status, e.ID, e.Reason}, "/"))
	}
	return strings.Join(parts, " ")
}

// TestSendResultsBounded: a list far longer than the request is read only
// as far as 2×recipients+16 elements, and the answer is not complete.
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
	if n := len(resp.Answer.Elements); n != mapping.MaxElements(len(testReq.To)) || resp.Answer.Complete {
		t.Errorf("%d elements read (complete %v), want %d and not complete", n, resp.Answer.Complete, mapping.MaxElements(len(testReq.To)))
	}
}

// TestSendWithoutResults: without the mapping, the list is not read.
func TestSendWithoutResults(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"messages":[{"to":"+447700900123","status":{"groupName":"REJECTED"}}]}`)
	}))
	defer srv.Close()
	resp, err := (&Client{BaseURL: srv.URL}).Send(context.Background(), testToken, testReq)
	if err != nil || resp.Answer.Elements != nil || resp.Answer.Problem != "" {
		t.Errorf("got %+v, %v; want a plain success", resp, err)
	}
}
