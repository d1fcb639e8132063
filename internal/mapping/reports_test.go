package mapping

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/rawjson"
)

// showReports writes reports as id/number=delivery(status)[reason]@time.
func showReports(rs []Report) string {
	var out []string
	for _, r := range rs {
		s := fmt.Sprintf("%s/%s=%s(%s)", r.ID, r.Number, r.Delivery, r.Status)
		if r.Reason != "" {
			s += "[" + r.Reason + "]"
		}
		if !r.At.IsZero() {
			s += "@" + r.At.Format(time.RFC3339Nano)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// The mappings docs/reports.md gives for real providers, and the sandbox's.
var (
	sandboxReports = Reports{ID: ptr("/message_id"), Number: ptr("/to"), Status: rawjson.MustPointer("/status"), Reason: ptr("/reason"), At: ptr("/at"),
		Delivered: statuses("DELIVERED"), Undelivered: statuses("UNDELIVERED")}
	twilioReports = Reports{ID: ptr("/MessageSid"), Number: ptr("/To"), Status: rawjson.MustPointer("/MessageStatus"), Reason: ptr("/ErrorCode"),
		Delivered: statuses("delivered"), Undelivered: statuses("undelivered", "failed")}
	infobipReports = Reports{List: ptr("/results"), ID: ptr("/messageId"), Number: ptr("/to"), Status: rawjson.MustPointer("/status/groupName"),
		Reason: ptr("/status/description"), At: ptr("/doneAt"), Delivered: statuses("DELIVERED"), Undelivered: statuses("UNDELIVERABLE", "REJECTED", "EXPIRED")}
	vonageReports = Reports{ID: ptr("/messageId"), Number: ptr("/msisdn"), Status: rawjson.MustPointer("/status"), Reason: ptr("/err-code"),
		At: ptr("/message-timestamp"), Delivered: statuses("delivered"), Undelivered: statuses("failed", "rejected", "expired")}
)

// TestReadReports reads the bodies real providers post, as JSON and as
// forms, one report or a list of them.
func TestReadReports(t *testing.T) {
	for _, tt := range []struct {
		name, contentType, body string
		r                       Reports
		want                    string
	}{
		{
			name: "the sandbox: one JSON report", contentType: "application/json",
			body: `{"message_id":"msg_K3VQ7ZL2PA-17","to":"+33612340016","status":"UNDELIVERED","reason":"Unknown subscriber","at":"2026-03-01T12:00:01.000Z"}`,
			r:    sandboxReports, want: "msg_K3VQ7ZL2PA-17/+33612340016=undelivered(UNDELIVERED)[Unknown subscriber]@2026-03-01T12:00:01Z",
		},
		{
			name: "Twilio's StatusCallback: a form, delivered", contentType: "application/x-www-form-urlencoded",
			body: "SmsSid=SM1&SmsStatus=delivered&MessageStatus=delivered&To=%2B14155550101&MessageSid=SM1f0e8ae6ade43cb3c0ce4525424e404f&AccountSid=AC1&From=%2B14155550100&ApiVersion=2010-04-01",
			r:    twilioReports, want: "SM1f0e8ae6ade43cb3c0ce4525424e404f/+14155550101=delivered(delivered)",
		},
		{
			name: "Twilio: failed, with an error code; a status field written twice is its last", contentType: "application/x-www-form-urlencoded; charset=utf-8",
			body: "MessageStatus=sent&MessageSid=SM2&To=%2B14155550102&ErrorCode=30003&MessageStatus=failed",
			r:    twilioReports, want: "SM2/+14155550102=undelivered(failed)[30003]",
		},
		{
			name: "Twilio: sent is not final", contentType: "application/x-www-form-urlencoded",
			body: "MessageSid=SM3&MessageStatus=sent&To=%2B14155550103",
			r:    twilioReports, want: "SM3/+14155550103=pending(sent)",
		},
		{
			name: "Infobip: a list, numbers without +, a +0000 offset", contentType: "application/json",
			body: `{"results":[{"bulkId":"b1","messageId":"m1","to":"41793026727","sentAt":"2019-11-09T15:59:58.000+0000","doneAt":"2019-11-09T16:00:00.000+0000",
				"status":{"groupId":3,"groupName":"DELIVERED","id":5,"name":"DELIVERED_TO_HANDSET","description":"Message delivered to handset"}},
				{"messageId":"m2","to":"41793026834","doneAt":"2019-11-09T16:00:01.500+0100","status":{"groupName":"UNDELIVERABLE","description":"Message sent not delivered"}},
				{"messageId":"m3","to":"41793026900","status":{"groupName":"PENDING","description":"Message sent to next instance"}}]}`,
			r: infobipReports,
			want: "m1/41793026727=delivered(DELIVERED)@2019-11-09T16:00:00Z m2/41793026834=undelivered(UNDELIVERABLE)[Message sent not delivered]@2019-11-09T15:00:01.5Z " +
				"m3/41793026900=pending(PENDING)[Message sent to next instance]",
		},
		{
			name: "Vonage SMS: a plain UTC time, the number without +", contentType: "application/json",
			body: `{"msisdn":"447700900000","to":"AcmeInc","network-code":"12345","messageId":"0A0000001234567B","price":"0.03330000","status":"expired","scts":"2001011400","err-code":"6","api-key":"abcd1234","message-timestamp":"2020-01-01 12:00:00"}`,
			r:    vonageReports, want: "0A0000001234567B/447700900000=undelivered(expired)[6]@2020-01-01T12:00:00Z",
		},
		{
			name: "a case slip is not delivered", contentType: "application/json",
			body: `{"message_id":"a","to":"+33612340016","status":"Delivered"}`,
			r:    sandboxReports, want: "a/+33612340016=pending(Delivered)",
		},
		{
			name: "numbers, booleans and nulls: by value", contentType: "application/json",
			body: `{"l":[{"id":77,"to":447700900001,"ok":true,"t":1767268800},{"id":"78","to":"447700900002","ok":1},{"id":"79","ok":null,"t":1767268800123},{"id":"80","ok":{"x":1}}]}`,
			r: Reports{List: ptr("/l"), ID: ptr("/id"), Number: ptr("/to"), Status: rawjson.MustPointer("/ok"), At: ptr("/t"),
				Delivered: []Value{BoolValue(true)}, Undelivered: []Value{BoolValue(false)}},
			want: "77/447700900001=delivered(true)@2026-01-01T12:00:00Z 78/447700900002=pending(1) 79/=pending(null)@2026-01-01T12:00:00.123Z 80/=pending(an object)",
		},
		{
			name: "an empty list", contentType: "application/json", body: `{"results":[]}`, r: infobipReports, want: "",
		},
		{
			// curl --data's default type: JSON under a form's type is JSON.
			name: "JSON sent as a form", contentType: "application/x-www-form-urlencoded", body: ` {"results":[]}`, r: infobipReports, want: "",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Doc(tt.contentType, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			rs, err := tt.r.Read(doc, plain{})
			if err != nil {
				t.Fatal(err)
			}
			if got := showReports(rs); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestReportsRefused: a body the mapping cannot read is refused whole,
// naming the report and the pointer.
func TestReportsRefused(t *testing.T) {
	for _, tt := range []struct {
		name, contentType, body string
		r                       Reports
		want                    string
	}{
		{"not JSON", "application/json", `{"to":`, sandboxReports, "not JSON"},
		{"a form without its content type", "", "MessageSid=SM1&MessageStatus=delivered", twilioReports, "not JSON (no Content-Type; a form body needs"},
		{"a broken form", "application/x-www-form-urlencoded", "MessageSid=%zz", twilioReports, "form body cannot be read"},
		{"no status", "application/json", `{"message_id":"a","to":"+33612340016"}`, sandboxReports, "the body: no status at /status"},
		{"no id nor number", "application/json", `{"message_id":"","status":"DELIVERED"}`, sandboxReports, "neither an id (at /message_id) nor a number (at /to)"},
		{"an id that is an object", "application/json", `{"message_id":{"a":1},"status":"DELIVERED"}`, sandboxReports, "neither an id"},
		{"a time that is not one", "application/json", `{"message_id":"a","status":"DELIVERED","at":"yesterday"}`, sandboxReports, `"yesterday" at /at is not a time`},
		{"a time that is true", "application/json", `{"message_id":"a","status":"DELIVERED","at":true}`, sandboxReports, "true/false at /at is not a time"},
		{"a ten-digit time written in seconds of another size", "application/json", `{"message_id":"a","status":"DELIVERED","at":12345}`, sandboxReports, "is not a time"},
		{"the third of a list", "application/json", `{"results":[{"messageId":"1","status":{"groupName":"DELIVERED"}},{"messageId":"2","status":{"groupName":"DELIVERED"}},{"messageId":"3"}]}`,
			infobipReports, "element 2 of /results: no status at /status/groupName"},
		{"no list", "application/json", `{"messageId":"1","status":{"groupName":"DELIVERED"}}`, infobipReports, "no list at /results"},
		{"a list that is not one", "application/json", `{"results":{"messageId":"1"}}`, infobipReports, "holds an object at /results, not a list"},
		{"too many", "application/json", `{"results":[` + strings.Repeat(`{"messageId":"1","status":{"groupName":"DELIVERED"}},`, MaxBodyElements) + `{}]}`,
			infobipReports, "more than 10000 elements"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Doc(tt.contentType, []byte(tt.body))
			var rs []Report
			if err == nil {
				rs, err = tt.r.Read(doc, plain{})
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v (%s), want an error with %q", err, showReports(rs), tt.want)
			}
			if tt.name == "too many" && !errors.Is(err, ErrTooMany) {
				t.Errorf("%v is not ErrTooMany", err)
			}
			if strings.Contains(err.Error(), "33612340016") {
				t.Errorf("the error shows a number: %v", err)
			}
		})
	}
}

// TestReportColumns reads a CSV export's rows through the same mapping:
// each pointer is a column.
func TestReportColumns(t *testing.T) {
	r := Reports{ID: ptr("/Message ID"), Number: ptr("/To"), Status: rawjson.MustPointer("/Status"), At: ptr("/Done~1at"), Reason: ptr("/Error"),
		Delivered: statuses("DELIVERED", "1"), Undelivered: statuses("FAILED")}
	c, err := r.Columns([]string{"\ufeffMessage ID", "To", "Status", "Error", "Done/at"})
	if err != nil {
		t.Fatal(err)
	}
	var rs []Report
	for _, row := range [][]string{
		{"m1", "+447700900001", "DELIVERED", "", "2026-03-01T12:00:01Z"},
		{"m2", "447700900002", "FAILED", "Absent subscriber", ""},
		{"m3", " 447700900003 ", "1.0", "", "1772366401"},
		{"m4", "", "ACCEPTED", "", ""},
	} {
		rep, err := c.Report(row, plain{})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, rep)
	}
	want := "m1/+447700900001=delivered(DELIVERED)@2026-03-01T12:00:01Z m2/447700900002=undelivered(FAILED)[Absent subscriber] " +
		"m3/447700900003=delivered(1.0)@2026-03-01T12:00:01Z m4/=pending(ACCEPTED)"
	if got := showReports(rs); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := c.Report([]string{"", "", "DELIVERED", "", ""}, plain{}); err == nil || !strings.Contains(err.Error(), "neither an id") {
		t.Errorf("a row naming no message: %v", err)
	}
	if _, err := c.Report([]string{"m5", "", "DELIVERED", "", "noon"}, plain{}); err == nil || !strings.Contains(err.Error(), `"noon" at /Done~1at is not a time`) {
		t.Errorf("a row with a bad time: %v", err)
	}
	deep := r
	deep.Status = rawjson.MustPointer("/status/name")
	deep.Reason = ptr("/reason")
	_, err = deep.Columns([]string{"Message ID", "To", "Status"})
	for _, want := range []string{"/status/name names no column: in a table, write /COLUMN", "/Done~1at names no column of the header", "/reason names no column", `the header has "Message ID", "To", "Status"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Columns: %v, want %q", err, want)
		}
	}
}

// TestParseTime: the forms providers write, and what is refused.
func TestParseTime(t *testing.T) {
	for s, want := range map[string]string{
		"2026-03-01T12:00:01.000Z":       "2026-03-01T12:00:01Z",
		"2026-03-01T13:00:01+01:00":      "2026-03-01T12:00:01Z",
		"2019-11-09T16:00:00.000+0000":   "2019-11-09T16:00:00Z",
		"2019-11-09T17:00:00+0100":       "2019-11-09T16:00:00Z",
		"2020-01-01 12:00:00":            "2020-01-01T12:00:00Z",
		"2020-01-01 12:00:00.25+02:00":   "2020-01-01T10:00:00.25Z",
		"2020-01-01T12:00:00":            "2020-01-01T12:00:00Z",
		"1767268800":                     "2026-01-01T12:00:00Z",
		"1767268800500":                  "2026-01-01T12:00:00.5Z",
		"2026-03-01T12:00:01.123456789Z": "2026-03-01T12:00:01.123456789Z",
	} {
		got, ok := ParseTime(s)
		if !ok || got.Format(time.RFC3339Nano) != want || got.Location() != time.UTC {
			t.Errorf("%s: %v %v, want %s", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "yesterday", "+1767268800", "-1767268800", "17672688001", "2026-03-01", "2026-13-01T00:00:00Z", "12:00"} {
		if got, ok := ParseTime(s); ok {
			t.Errorf("%q read as %v", s, got)
		}
	}
}

// FuzzReports: whatever is posted and however the mapping is written,
// reading never panics, is bounded, names a message in every report, and
// a report is delivered only when its status is one the mapping lists as
// delivered.
func FuzzReports(f *testing.F) {
	for _, s := range []string{
		`{"message_id":"m","to":"+33612340016","status":"DELIVERED","reason":"","at":"2026-03-01T12:00:01.000Z"}`,
		`{"results":[{"messageId":"m1","to":"41793026727","doneAt":"2019-11-09T16:00:00.000+0000","status":{"groupName":"DELIVERED"}}]}`,
		`{"results":[{"messageId":1,"status":{"groupName":["DELIVERED"]}},{"to":true,"status":{"groupName":"delivered"}}]}`,
		`{"msisdn":447700900000,"messageId":"0A","status":"delivered","message-timestamp":"2020-01-01 12:00:00"}`,
		`{"l":[{"id":77,"ok":true},{"id":"78","ok":"true"},{"id":"79","ok":1.0}]}`,
		"MessageSid=SM1&MessageStatus=delivered&To=%2B14155550101",
		"MessageSid=SM1&MessageStatus=DELIVERED&MessageStatus=delivered&status=true",
		`[]`, `null`, `"DELIVERED"`, strings.Repeat(`{"results":[`, 100),
	} {
		f.Add([]byte(s), uint8(0), uint8(0))
	}
	mappings := []Reports{sandboxReports, twilioReports, infobipReports, vonageReports,
		{List: ptr("/l"), ID: ptr("/id"), Status: rawjson.MustPointer("/ok"), Delivered: []Value{BoolValue(true), StringValue("1")}},
		{List: ptr(""), Number: ptr("/to"), Status: rawjson.MustPointer("/status"), Delivered: statuses("DELIVERED"), Undelivered: statuses("delivered")},
	}
	types := []string{"application/json", "application/x-www-form-urlencoded", "", "text/plain"}
	f.Fuzz(func(t *testing.T, body []byte, which, ct uint8) {
		r := &mappings[int(which)%len(mappings)]
		doc, err := Doc(types[int(ct)%len(types)], body)
		if err != nil {
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("Doc made %q, which is not JSON", doc)
		}
		rs, err := r.Read(doc, plain{})
		if err != nil {
			if rs != nil && len(rs) > MaxBodyElements {
				t.Fatalf("%d reports and %v", len(rs), err)
			}
			return
		}
		if len(rs) > MaxBodyElements {
			t.Fatalf("%d reports in one body", len(rs))
		}
		for _, rep := range rs {
			if rep.ID == "" && rep.Number == "" {
				t.Fatalf("a report naming no message: %+v", rep)
			}
			if rep.Delivery == Delivered && !contains(r.Delivered, rawStatus(rep.Status)) {
				t.Fatalf("report %+v delivered with a status delivered: does not list", rep)
			}
			if rep.Delivery == Delivered && rep.Reason != "" {
				t.Fatalf("a delivered report with words: %+v", rep)
			}
		}
	})
}
