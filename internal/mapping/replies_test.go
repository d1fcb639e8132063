package mapping

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/rawjson"
)

func showReplies(rs []Reply) string {
	var out []string
	for _, r := range rs {
		s := fmt.Sprintf("%s:%q", r.Number, r.Text)
		if r.ID != "" {
			s = r.ID + "=" + s
		}
		if !r.At.IsZero() {
			s += "@" + r.At.Format(time.RFC3339Nano)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestReadReplies reads the replies the sandbox, Twilio (a form) and a
// provider that lists them post; a reply without a number or a text is
// refused with the body.
func TestReadReplies(t *testing.T) {
	sandbox := Replies{Number: rawjson.MustPointer("/from"), Text: rawjson.MustPointer("/text"), At: ptr("/at")}
	twilio := Replies{ID: ptr("/MessageSid"), Number: rawjson.MustPointer("/From"), Text: rawjson.MustPointer("/Body")}
	listed := Replies{List: ptr("/inbound"), Number: rawjson.MustPointer("/msisdn"), Text: rawjson.MustPointer("/text"), At: ptr("/received")}
	for _, tt := range []struct {
		name, contentType, body string
		r                       Replies
		want, err               string
	}{
		{name: "the sandbox", contentType: "application/json", body: `{"from":"+33612340016","text":"STOP","at":"2026-03-01T12:00:01.000Z"}`,
			r: sandbox, want: `+33612340016:"STOP"@2026-03-01T12:00:01Z`},
		{name: "Twilio's inbound form", contentType: "application/x-www-form-urlencoded",
			body: "ToCountry=US&MessageSid=SM1%0A&NumMedia=0&Body=Stop+please%0A&From=%2B14155550101&To=%2B14155550100", r: twilio, want: `SM1=+14155550101:"Stop please\n"`},
		{name: "a list", contentType: "application/json", body: `{"inbound":[{"msisdn":447700900001,"text":"unsubscribe","received":1767268800},{"msisdn":"447700900002","text":""}]}`,
			r: listed, want: `447700900001:"unsubscribe"@2026-01-01T12:00:00Z 447700900002:""`},
		{name: "a long text is cut", contentType: "application/json", body: `{"from":"+33612340016","text":"` + strings.Repeat("a", 2000) + `"}`,
			r: sandbox, want: `+33612340016:"` + strings.Repeat("a", MaxReplyText) + `…"`},
		{name: "no number", contentType: "application/json", body: `{"text":"STOP"}`, r: sandbox, err: "the body: no number at /from"},
		{name: "a text that is a number", contentType: "application/json", body: `{"from":"+33612340016","text":5}`, r: sandbox, err: "no text at /text"},
		{name: "the second of a list has no text", contentType: "application/json", body: `{"inbound":[{"msisdn":"1","text":"STOP"},{"msisdn":"2"}]}`, r: listed,
			err: "element 1 of /inbound: no text at /text"},
		{name: "a bad time", contentType: "application/json", body: `{"from":"+33612340016","text":"STOP","at":"noon"}`, r: sandbox, err: `"noon" at /at is not a time`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Doc(tt.contentType, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			rs, err := tt.r.Read(doc, plain{})
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("got %v (%s), want an error with %q", err, showReplies(rs), tt.err)
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err == "" && showReplies(rs) != tt.want:
				t.Errorf("got  %s\nwant %s", showReplies(rs), tt.want)
			}
		})
	}
}
