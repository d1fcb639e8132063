package campaign

import (
	"strings"
	"testing"
)

// The file and the key of an error come from outside: a line break in
// them is escaped, so that the error stays on one line and cannot forge
// one of smsform's own (a hint) after it.
func TestErrorKeepsOutsideTextOnItsLine(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "n6.yaml", Line: 10, Field: "bad\nhint: approved", Msg: "unknown key"}, `n6.yaml:10: "bad\nhint: approved": unknown key`},
		{Error{File: "x\nhint: approved/n6.yaml", Line: 3, Field: "body", Msg: "m"}, `"x\nhint: approved/n6.yaml":3: body: m`},
		{Error{File: "x\r/c.yaml", Msg: "file does not exist"}, `"x\r/c.yaml": file does not exist`},
		{Error{File: "c.yaml", Line: 2, Field: "recipients[0].file", Msg: "m"}, "c.yaml:2: recipients[0].file: m"},
		// Already shown with Plain: the same again.
		{Error{File: Plain("a\nb.csv"), Line: 1, Field: Plain("x\ny"), Msg: "m"}, `"a\nb.csv":1: "x\ny": m`},
	} {
		got := tc.e.Error()
		if got != tc.want || strings.ContainsAny(got, "\n\r") {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
