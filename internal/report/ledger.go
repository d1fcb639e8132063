package report

import (
	"fmt"

	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// capWords says how many recipients the frequency cap holds back and until
// when, "" when none: "1,204 recipients held back by the frequency cap
// until Wed 2026-11-25 09:12 UTC at the latest". They are in the batches;
// apply sends them once the cap allows.
func capWords(p *plan.Plan) string {
	s := p.Summary
	if s.HeldByCap == 0 {
		return ""
	}
	return fmt.Sprintf("%s held back by the frequency cap until %s at the latest",
		words.N(s.HeldByCap, "recipient", "recipients"), s.HeldByCapUntil.UTC().Format("Mon 2006-01-02 15:04 UTC"))
}

// capNote is capWords as a sentence that says what apply does with them.
func capNote(p *plan.Plan) string {
	w := capWords(p)
	if w == "" {
		return ""
	}
	return w + ": they stay in the batches; apply sends each once the cap allows (until then it stops with exit 5, or waits with --wait)"
}
