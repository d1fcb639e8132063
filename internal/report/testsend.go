package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/state"
)

// WriteTestSends writes what `smsform test` did: a line per request, its
// message, to whom and what the provider answered (numbers masked unless
// o.ShowNumbers, in the provider's words too), then, when the provider
// took every message, the sentence that says what was recorded.
func WriteTestSends(w io.Writer, res *apply.TestResult, o Output) error {
	for _, s := range res.Sent {
		m := res.Messages[s.Message]
		a := sms.Analyze(m.Body)
		_, err := fmt.Fprintf(w, "Test message %d of %d (%s; %s, %s): %s\n", s.Message+1, len(res.Messages), oneLine(m.Why), a.Encoding,
			words.N(a.Segments, "segment", "segments"), o.testOutcome(s.TestSend))
		if err != nil {
			return err
		}
	}
	if res.Taken() < len(res.Messages) {
		return nil
	}
	_, err := fmt.Fprintf(w, "Sent %s to %s; recorded in the state as test sends. Nobody of the campaign was messaged, and its plan is unchanged.\n",
		words.N(len(res.Messages), "test message", "test messages"), words.N(len(res.To), "number", "numbers"))
	return err
}

// WriteTestNotes writes, for stderr, what a person should know of a test
// send that went anyway: the campaign is paused.
func WriteTestNotes(w io.Writer, res *apply.TestResult) error {
	if res == nil || res.Paused == nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "smsform: note: the campaign is %s; test sends go anyway, the campaign's recipients wait for smsform resume\n",
		oneLine(PauseWords(res.Paused)))
	return err
}

// testOutcome words what became of one request of a test.
func (o Output) testOutcome(ts state.TestSend) string {
	masked := make([]string, len(ts.Phones))
	for i, p := range ts.Phones {
		masked[i] = o.number(p)
	}
	to := strings.Join(masked, ", ")
	reason := oneLine(o.testReason(&ts))
	switch ts.Outcome {
	case state.Sent:
		id := ""
		if ts.RequestID != "" {
			id = ", request id " + oneLine(ts.RequestID)
		}
		return fmt.Sprintf("sent to %s (HTTP %d%s)", to, ts.HTTPStatus, id)
	case state.InDoubt:
		return fmt.Sprintf("no clear answer for %s: it may have gone: %s", to, reason)
	}
	return fmt.Sprintf("not sent to %s: %s", to, reason)
}
