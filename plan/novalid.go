package plan

import (
	"fmt"
	"strings"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/words"
)

// NoValidError is a campaign that lists recipients of which not one is a
// valid number: a plan of nothing to send, which is never what its author
// meant (typically national numbers with no default_region). Compute
// returns it with the plan, so that the invalid numbers can be shown.
type NoValidError struct {
	Invalid int    // the numbers listed, all invalid
	Reason  string // the most common reason
	Count   int    // how many numbers have it
	Region  string // the campaign's default_region, if any
}

func (e *NoValidError) Error() string {
	msg := fmt.Sprintf("none of the campaign's %s has a valid number", words.N(e.Invalid, "recipient", "recipients"))
	if e.Count == e.Invalid {
		return msg + ": " + e.Reason
	}
	return fmt.Sprintf("%s; %s of them: %s", msg, words.Count(e.Count), e.Reason)
}

// Hint says how to write the numbers so that they are read, or, when they
// were read with a country and are not numbers it gives out, to check them.
func (e *NoValidError) Hint() string {
	switch {
	case strings.HasPrefix(e.Reason, e164.ReasonInvalidNumber), e.Reason == e164.ReasonTooShort, e.Reason == e164.ReasonTooLong:
		return "these are read with their country code but are not numbers its numbering plan gives out: check them against their source (a digit too many or too few, a wrong prefix, or a range kept for fiction and examples, such as +44 7700 900…)"
	case e.Region == "":
		return "write the numbers in E.164, with + and the country code (+447400123459), or set default_region (e.g. default_region: GB) in the campaign to read national numbers (07400 123459)"
	}
	return fmt.Sprintf("with default_region %s, a number without + is read as a number of %s: write the others with + and their country code (+447400123459)", e.Region, e.Region)
}

// noValid is the error of a plan whose recipients are all invalid, if it
// is one.
func noValid(p *Plan, region string) error {
	if p.Summary.Recipients > 0 || len(p.Invalid) == 0 {
		return nil
	}
	counts := map[string]int{}
	e := &NoValidError{Invalid: len(p.Invalid), Region: region}
	for _, inv := range p.Invalid {
		counts[inv.Reason]++
		if n := counts[inv.Reason]; n > e.Count || (n == e.Count && inv.Reason < e.Reason) {
			e.Reason, e.Count = inv.Reason, n
		}
	}
	return e
}
