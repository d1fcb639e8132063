package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/state"
)

// A test's lines mask its numbers, in the provider's words too, and say
// that everything went only when the provider took every message; a
// paused campaign is noted.
func TestWriteTestSends(t *testing.T) {
	at := time.Date(2026, 11, 25, 14, 2, 0, 0, time.UTC)
	res := &apply.TestResult{
		Messages: []apply.TestMessage{{Body: "Hi Alexandra.", Why: "longest"}, {Body: "Hi Cy ✓", Why: "UCS-2"}},
		To:       []string{"+447400999001", "+447400999002"},
		Sent: []apply.TestSent{
			{Message: 0, TestSend: state.TestSend{At: at, Phones: []string{"+447400999001", "+447400999002"}, Outcome: state.Sent, HTTPStatus: 200, RequestID: "req_1"}},
			{Message: 1, TestSend: state.TestSend{At: at, Phones: []string{"+447400999001"}, Outcome: state.Failed, HTTPStatus: 400,
				Reason: "HTTP 400: +447400999001 is barred\nsee 447400999555"}},
			{Message: 1, TestSend: state.TestSend{At: at, Phones: []string{"+447400999002"}, Outcome: state.InDoubt, Reason: "no answer"}},
		},
		Paused: &state.Pause{By: "bob", At: at, Reason: "typo"},
	}
	var out, notes bytes.Buffer
	if err := WriteTestSends(&out, res, Output{}); err != nil {
		t.Fatal(err)
	}
	want := "Test message 1 of 2 (longest; GSM-7, 1 segment): sent to +44 74•• •••001, +44 74•• •••002 (HTTP 200, request id req_1)\n" +
		"Test message 2 of 2 (UCS-2; UCS-2, 1 segment): not sent to +44 74•• •••001: HTTP 400: +•••••••••001 is barred\\nsee •••••••••555\n" +
		"Test message 2 of 2 (UCS-2; UCS-2, 1 segment): no clear answer for +44 74•• •••002: it may have gone: no answer\n"
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if err := WriteTestNotes(&notes, res); err != nil || !strings.Contains(notes.String(), "smsform: note: the campaign is paused by bob") {
		t.Errorf("notes %q, %v", notes.String(), err)
	}

	res.Sent = res.Sent[:1]
	res.Messages = res.Messages[:1]
	out.Reset()
	if err := WriteTestSends(&out, res, Output{ShowNumbers: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "sent to +447400999001, +447400999002") ||
		!strings.HasSuffix(out.String(), "Sent 1 test message to 2 numbers; recorded in the state as test sends. Nobody of the campaign was messaged, and its plan is unchanged.\n") {
		t.Errorf("all taken, numbers shown:\n%s", out.String())
	}
}
