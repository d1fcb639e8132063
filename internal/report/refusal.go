package report

import (
	"fmt"
	"strings"

	"github.com/smsform/smsform/plan"
)

// A plan that apply will refuse (a ledger left in another state, a state
// that could not be checked, signs of a lost state, a pause) says so
// before anything else in every format: its counts would otherwise read as
// a first send, and a reviewer approves what they read first.

// refusalText is the refusal as one sentence with what settles it; ""
// when apply will not refuse the plan.
func refusalText(p *plan.Plan) string {
	r := p.Refusal
	if r == nil {
		return ""
	}
	s := "Apply will refuse this plan: " + strings.TrimSuffix(oneLine(r.Reason), ".") + "."
	if r.Fix != "" {
		s += " To settle it: " + strings.TrimSuffix(oneLine(r.Fix), ".") + "."
	}
	return s
}

// refusalMarkdown is the refusal as a pull request shows it first: a
// caution block, the command in code.
func refusalMarkdown(p *plan.Plan) string {
	r := p.Refusal
	if r == nil {
		return ""
	}
	s := fmt.Sprintf("> [!CAUTION]\n> **Apply will refuse this plan:** %s.\n", mdText(strings.TrimSuffix(r.Reason, ".")))
	switch fix := strings.TrimSuffix(r.Fix, "."); {
	case strings.HasPrefix(fix, "smsform "):
		s += fmt.Sprintf(">\n> To settle it: %s\n", mdCode(fix, false)) // a command, to paste
	case fix != "":
		s += fmt.Sprintf(">\n> To settle it: %s\n", mdText(fix))
	}
	return s + "\n"
}

// refusedAs reports whether the plan is refused for kind: its own line
// then says what a separate note would repeat.
func refusedAs(p *plan.Plan, kind plan.RefusalKind) bool {
	return p.Refusal != nil && p.Refusal.Kind == kind
}
