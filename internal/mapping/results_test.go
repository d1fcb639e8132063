package mapping

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/smsform/smsform/internal/rawjson"
)

// plain cleans nothing: the api's redactor is tested in api.
type plain struct{}

func (plain) ID(s string) string    { return s }
func (plain) Words(s string) string { return s }

func ptr(s string) *rawjson.Pointer {
	p := rawjson.MustPointer(s)
	return &p
}

func statuses(ws ...string) []Value {
	vs := make([]Value, len(ws))
	for i, w := range ws {
		vs[i] = StringValue(w)
	}
	return vs
}

// show writes an answer's elements as number=outcome(status)#id.
func show(a Answer) string {
	var out []string
	for _, e := range a.Elements {
		s := fmt.Sprintf("%s=%s", e.Number, e.Outcome)
		if e.Status != "" || e.NoStatus != "" {
			s += "(" + e.Status + e.NoStatus + ")"
		}
		if e.ID != "" {
			s += "#" + e.ID
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestValues: statuses compare by value, not spelling: numbers however
// written, booleans and their strings, strings exactly (case included).
func TestValues(t *testing.T) {
	same := [][]string{
		{`1`, `1.0`, `"1"`, `1e0`, `10e-1`, `"1.00"`, `0.1E1`},
		{`-2.5`, `"-2.50"`, `-25e-1`},
		{`0`, `-0`, `0.000`, `"0e5"`},
		{`true`, `"true"`},
		{`false`, `"false"`},
		{`12345678901234567890`, `"12345678901234567890"`},
	}
	differ := [][2]string{
		{`"Accepted"`, `"ACCEPTED"`}, {`1`, `2`}, {`"01"`, `1`}, {`true`, `"True"`}, {`true`, `1`},
		{`12345678901234567890`, `12345678901234567891`}, {`"1 "`, `1`}, {`""`, `0`},
	}
	val := func(raw string) Value {
		v, kind := ValueOfJSON([]byte(raw))
		if kind != "" {
			t.Fatalf("%s: %s", raw, kind)
		}
		return v
	}
	for _, group := range same {
		for _, raw := range group[1:] {
			if val(raw) != val(group[0]) {
				t.Errorf("%s and %s differ (%q, %q)", raw, group[0], val(raw), val(group[0]))
			}
		}
	}
	for _, d := range differ {
		if val(d[0]) == val(d[1]) {
			t.Errorf("%s and %s are the same value", d[0], d[1])
		}
	}
	for _, raw := range []string{`null`, `{"a":1}`, `[1]`} {
		if v, kind := ValueOfJSON([]byte(raw)); !v.IsZero() || kind == "" {
			t.Errorf("%s: a value %q (%s)", raw, v, kind)
		}
	}
	for raw, want := range map[string]string{`15e-1`: "1.5", `2e2`: "200", `0.001`: "0.001", `"ACK"`: "ACK", `true`: "true", `1e400`: "1e400"} {
		if got := val(raw).String(); got != want {
			t.Errorf("%s reads %q, want %q", raw, got, want)
		}
	}
}

// TestReadShapes reads the shapes real providers answer in.
func TestReadShapes(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		r         Results
		want      string
		problem   string
		complete  bool
	}{
		{
			name: "one list with statuses and ids (Infobip)",
			doc:  `{"bulkId":"b","messages":[{"to":"447400123459","messageId":"m1","status":{"name":"PENDING_ACCEPTED"}},{"to":"447400123564","messageId":"m2","status":{"name":"REJECTED_DESTINATION"}},{"to":"447400123670","status":{"name":"NEW_STATUS"}}]}`,
			r: Results{Lists: []List{{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/to"), Status: ptr("/status/name"), ID: ptr("/messageId"),
				Sent: statuses("PENDING_ACCEPTED"), Failed: statuses("REJECTED_DESTINATION")}}},
			want: "447400123459=sent(PENDING_ACCEPTED)#m1 447400123564=failed(REJECTED_DESTINATION)#m2 447400123670=unrecognised(NEW_STATUS)", complete: true,
		},
		{
			name: "two lists, accepted and refused (Textlocal)",
			doc:  `{"messages":[{"id":"1151346216","recipient":447400123459}],"errors":[{"code":4,"number":"447400123564","message":"Invalid number"}],"status":"success"}`,
			r: Results{Lists: []List{
				{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/recipient"), ID: ptr("/id"), Outcome: Sent},
				{List: rawjson.MustPointer("/errors"), Number: rawjson.MustPointer("/number"), Reason: ptr("/message"), Outcome: Failed, Optional: true}}},
			want: "447400123459=sent#1151346216 447400123564=failed", complete: true,
		},
		{
			name: "only refusals, optional list absent (Plivo)",
			doc:  `{"api_id":"x","message":"message(s) queued","message_uuid":["u1","u2"]}`,
			r:    Results{Others: Sent, Lists: []List{{List: rawjson.MustPointer("/invalid_number"), Number: rawjson.Pointer{}, Outcome: Failed, Optional: true}}},
			want: "", complete: true,
		},
		{
			name: "bare strings: the element is the number",
			doc:  `{"rejected":["447400123459", "447400123564"]}`,
			r:    Results{Others: Sent, Lists: []List{{List: rawjson.MustPointer("/rejected"), Number: rawjson.Pointer{}, Outcome: Failed}}},
			want: "447400123459=failed 447400123564=failed", complete: true,
		},
		{
			name: "boolean and number statuses (seven.io)",
			doc:  `{"messages":[{"recipient":"447400123459","success":true,"id":77},{"recipient":"447400123564","success":false},{"recipient":"447400123670","success":"true"},{"recipient":"447400123781","success":null}]}`,
			r: Results{Lists: []List{{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/recipient"), Status: ptr("/success"), ID: ptr("/id"),
				Sent: []Value{BoolValue(true)}, Failed: []Value{BoolValue(false)}}}},
			want: "447400123459=sent(true)#77 447400123564=failed(false) 447400123670=sent(true) 447400123781=unrecognised(null)", complete: true,
		},
		{
			name: "a number status against a string list",
			doc:  `{"m":[{"to":"1","s":1.0},{"to":"2","s":"1"},{"to":"3","s":0}]}`,
			r:    Results{Lists: []List{{List: rawjson.MustPointer("/m"), Number: rawjson.MustPointer("/to"), Status: ptr("/s"), Sent: statuses("1")}}},
			want: "1=sent(1.0) 2=sent(1) 3=unrecognised(0)", complete: true,
		},
		{
			name: "a refusal that names no number (Plivo, several recipients): not complete",
			doc:  `{"api_id":"a1","invalid_number":["447400123564",null,{"number":"447400123670"},"",true]}`,
			r:    Results{Others: Sent, Lists: []List{{List: rawjson.MustPointer("/invalid_number"), Number: rawjson.Pointer{}, Outcome: Failed, Optional: true}}},
			want: "447400123564=failed", complete: false,
		},
		{
			name: "an element without its number field: not complete",
			doc:  `{"messages":[{"to":"447400123459","status":"PENDING"},{"status":"REJECTED"}]}`,
			r: Results{Lists: []List{{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/to"), Status: ptr("/status"),
				Sent: statuses("PENDING"), Failed: statuses("REJECTED")}}},
			want: "447400123459=sent(PENDING)", complete: false,
		},
		{
			// Whether a number names a recipient of the request is apply's
			// to say: the element is kept as the provider wrote it.
			name: "a number with words in it is kept as written",
			doc:  `{"api_id":"a1","invalid_number":["447400123564 (invalid)"]}`,
			r:    Results{Others: Sent, Lists: []List{{List: rawjson.MustPointer("/invalid_number"), Number: rawjson.Pointer{}, Outcome: Failed, Optional: true}}},
			want: "447400123564 (invalid)=failed", complete: true,
		},
		{
			name: "a required list missing: nobody settled",
			doc:  `{"messages":[{"id":"1","recipient":"447400123459"}]}`,
			r: Results{Lists: []List{
				{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/recipient"), Outcome: Sent},
				{List: rawjson.MustPointer("/errors"), Number: rawjson.MustPointer("/number"), Outcome: Failed}}},
			problem: `no list of recipients at /errors`,
		},
		{
			name:    "an optional list that is not a list",
			doc:     `{"errors":{"number":"447400123459"}}`,
			r:       Results{Lists: []List{{List: rawjson.MustPointer("/errors"), Number: rawjson.MustPointer("/number"), Outcome: Failed, Optional: true}}},
			problem: "holds an object at /errors",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.doc)) {
				t.Fatal("the test's answer is not JSON")
			}
			a := tt.r.Read([]byte(tt.doc), 4, plain{})
			if tt.problem != "" {
				if !strings.Contains(a.Problem, tt.problem) || a.Elements != nil || a.Complete {
					t.Errorf("problem %q, elements %q, complete %v; want %q", a.Problem, show(a), a.Complete, tt.problem)
				}
				return
			}
			if got := show(a); got != tt.want || a.Problem != "" || a.Complete != tt.complete {
				t.Errorf("got %q (problem %q, complete %v), want %q", got, a.Problem, a.Complete, tt.want)
			}
		})
	}
}

// FuzzResults: whatever the answer and however the mapping is written, the
// read is bounded, never panics, and an element is sent only when its list
// says so of every element or its status is one listed under sent.
func FuzzResults(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"to":"447700900123","status":{"name":"PENDING"},"id":"x"}],"errors":[{"number":"447700900124"}]}`,
		`{"messages":[{"to":1,"status":{"name":["PENDING"]}}]}`, `{"messages":[[]]}`, `{"messages":"PENDING"}`, `{"errors":null}`,
		`{"messages":[` + strings.Repeat(`{"to":"1","status":{"name":true}},`, 100) + `{}]}`,
		strings.Repeat(`{"messages":[`, 200), `[]`, `null`, `["447700900123"]`, `{"messages":[{"to":"2","status":{"name":1.0}}]}`,
		// Keys written twice: the last value is the list.
		`{"messages":[{"to":"1","status":{"name":"PENDING"}}],"messages":[{"to":"2","status":{"name":"REJECTED"}}]}`,
		`{"messages":[{"to":"1"}],"errors":[{"number":"2"}],"messages":null,"errors":7}`,
		`{"messages":[{"to":"1"}] , "messages" : "x" }`, ` [ {"to":"3"} ] `,
	} {
		f.Add([]byte(s), 2, uint8(0))
	}
	mappings := []Results{
		{Lists: []List{{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/to"), Status: ptr("/status/name"), ID: ptr("/id"),
			Sent: append(statuses("PENDING", "1"), BoolValue(true)), Failed: statuses("REJECTED"), Retry: statuses("THROTTLED")}}},
		{Others: Sent, Lists: []List{
			{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/to"), Outcome: Sent},
			{List: rawjson.MustPointer("/errors"), Number: rawjson.MustPointer("/number"), Outcome: Failed, Optional: true}}},
		{Others: Sent, Lists: []List{{List: rawjson.Pointer{}, Number: rawjson.Pointer{}, Outcome: Failed}}},
		{Lists: []List{{List: rawjson.MustPointer("/messages"), Number: rawjson.Pointer{}, Status: &rawjson.Pointer{}, Sent: statuses("PENDING")}}},
	}
	f.Fuzz(func(t *testing.T, doc []byte, n int, which uint8) {
		n = max(1, min(n, 1000))
		r := &mappings[int(which)%len(mappings)]
		if !json.Valid(doc) {
			return
		}
		a := r.Read(doc, n, plain{})
		// The same as finding each list first and reading it after.
		if b := readByLookup(r, doc, n); show(a) != show(b) || a.Problem != b.Problem || a.Complete != b.Complete {
			t.Fatalf("read %q (%q, complete %v); by Lookup %q (%q, complete %v)", show(a), a.Problem, a.Complete, show(b), b.Problem, b.Complete)
		}
		if a.Problem != "" && (a.Elements != nil || a.Complete) {
			t.Fatalf("elements %q with problem %q", show(a), a.Problem)
		}
		if len(a.Elements) > len(r.Lists)*MaxElements(n) {
			t.Fatalf("%d elements for %d recipients", len(a.Elements), n)
		}
		for _, e := range a.Elements {
			if e.Number == "" && n != 1 {
				t.Fatalf("an element without a number in the answer to %d recipients: %+v", n, e)
			}
			l := &r.Lists[e.List]
			if e.Outcome != Sent {
				continue
			}
			if l.Status == nil {
				if l.Outcome != Sent {
					t.Fatalf("sent from a list whose outcome is %s", l.Outcome)
				}
				continue
			}
			if v := StringValue(e.Status); e.Status == "" || !contains(l.Sent, v) && !contains(l.Sent, rawStatus(e.Status)) {
				t.Fatalf("element %+v sent with a status sent: does not list", e)
			}
		}
	})
}

// readByLookup is Read as it was before lists were read as they are
// found: each list looked up whole first, then read.
func readByLookup(r *Results, doc []byte, n int) Answer {
	a := Answer{Complete: true, Elements: make([]Element, 0, n+slack)}
	rd := reader{clean: plain{}, statuses: map[string]Value{}}
	for i := range r.Lists {
		l := &r.Lists[i]
		list, err := l.List.Lookup(doc)
		absent := err != nil || string(list) == "null"
		switch {
		case absent && l.Optional:
			continue
		case err != nil:
			a.Problem = "the answer has no list of recipients at " + l.List.String() + ": " + err.Error()
		case list[0] != '[':
			a.Problem = fmt.Sprintf("the answer holds %s at %s, not a list of recipients", rawjson.Kind(list), l.List.String())
		}
		if a.Problem != "" {
			a.Elements, a.Complete = nil, false
			return a
		}
		if end, whole := rd.list(&a, i, l, list, n); !whole {
			a.Complete = false
		} else if end != len(list) {
			panic(fmt.Sprintf("the list %q read to %d", list, end))
		}
	}
	return a
}

// rawStatus is a status's value as the answer wrote it (a number or a
// boolean as text is read as JSON).
func rawStatus(s string) Value {
	if v, kind := ValueOfJSON([]byte(s)); kind == "" && json.Valid([]byte(s)) {
		return v
	}
	return StringValue(s)
}

// TestReadOneRecipient: in the answer to one recipient, an element that
// names no number can only be about it (Vonage's refusals name none);
// to more, it names nobody.
func TestReadOneRecipient(t *testing.T) {
	r := Results{Lists: []List{{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/to"), Status: ptr("/status"),
		Sent: statuses("0"), Failed: statuses("6")}}}
	doc := []byte(`{"message-count":"1","messages":[{"status":"6","error-text":"Unroutable message"}]}`)
	if got := show(r.Read(doc, 1, plain{})); got != "=failed(6)" {
		t.Errorf("one recipient: %q", got)
	}
	if a := r.Read(doc, 1, plain{}); !a.Complete {
		t.Errorf("one recipient: not complete")
	}
	// To two, it may be about either: the answer is not whole for the
	// recipients it names by number.
	if a := r.Read(doc, 2, plain{}); show(a) != "" || a.Complete {
		t.Errorf("two recipients: %q, complete %v; want nothing, not complete", show(a), a.Complete)
	}
}
