package api

import (
	"fmt"
	"slices"
)

// Results says where a provider's answer to a send lists each recipient's
// own outcome (a campaign's or project's provider.results): the spec leaves
// the success body open, and bulk APIs that answer per recipient put a list
// in it. The client reads that list with it; what each status means for a
// recipient (sent, failed, retried, in doubt) is the send loop's to decide.
type Results struct {
	List   Pointer  // the array in the answer
	Number Pointer  // inside each element: the recipient's number, as the provider echoes it
	Status Pointer  // inside each element: its status
	Reason *Pointer // inside each element: the words kept for a refusal; nil: none
	// Statuses by meaning; any other status is a refusal of that recipient.
	Sent      []string // accepted
	Retry     []string // not acted on: sent again later, like a 429
	Duplicate []string // the provider may already have it: in doubt
}

// RecipientResult is one element of a provider's per-recipient answer, as
// the provider wrote it: nothing here says what it means (apply decides).
type RecipientResult struct {
	// Number is the recipient as the provider echoed it (maybe without
	// the +, with 00, or national): matching it to a number sent is the
	// caller's business.
	Number string
	// Status is the element's status word; "" when the element has none
	// that can be read (absent, null, an object): the provider did not
	// say, which is not a refusal.
	Status string
	// Reason is the provider's words for it, scrubbed as every text from
	// the provider is; "" when there are none, or when Status is one of
	// Results.Sent (an accepted recipient's words are not kept).
	Reason string
}

// resultsSlack is how many elements past one per recipient a results list
// may hold (a provider may list a recipient once per part of a long
// message): the rest is not read, so that a huge answer costs no more than
// a bounded one. A recipient the elements read do not mention is left
// unmentioned, which the send loop holds in doubt.
const resultsSlack = 16

// maxResultsFor is the most elements of a results list read for a send to
// n recipients.
func maxResultsFor(n int) int { return 2*n + resultsSlack }

// readResults reads the per-recipient list of an answer doc (valid JSON)
// sent to n recipients. It returns the elements that name a number, or why
// there is no readable list.
func (c *Client) readResults(doc []byte, n int, token string) ([]RecipientResult, string) {
	r := c.Results
	list, err := r.List.LookupRaw(doc)
	if err != nil {
		return nil, "the answer has no list of recipients at " + r.List.String() + ": " + err.Error()
	}
	if list[0] != '[' {
		return nil, fmt.Sprintf("the answer holds %s at %s, not a list of recipients", rawKind(list), r.List.String())
	}
	limit := maxResultsFor(n)
	out := make([]RecipientResult, 0, n+resultsSlack)
	red := c.redactor(token)
	// Statuses repeat (a thousand PENDING): each is cleaned once.
	statuses := map[string]string{}
	ptrs := []Pointer{r.Number, r.Status}
	if r.Reason != nil {
		ptrs = append(ptrs, *r.Reason)
	}
	pk := newPicker(ptrs...)
	found := make([][]byte, len(ptrs))
	i := skipSpace(list, 1)
	for read := 0; i < len(list) && list[i] != ']'; read++ {
		if read == limit {
			break
		}
		i = pk.pick(list, i, found)
		if i < len(list) && list[i] == ',' {
			i = skipSpace(list, i+1)
		}
		num := RawText(found[0])
		if num == "" {
			continue // names nobody: says nothing of any recipient
		}
		rr := RecipientResult{Number: clip(num, 40), Status: cleanStatus(red, statuses, found[1])}
		// The words of an accepted recipient are not kept: reading them
		// would only cost time on the common path.
		if r.Reason != nil && !slices.Contains(r.Sent, rr.Status) {
			rr.Reason = red.scrub(RawText(found[2]))
		}
		out = append(out, rr)
	}
	return out, ""
}

// cleanStatus is the status raw (the JSON text of an element's status, nil
// when it has none), cleaned as an id is, from seen when it was seen
// before.
func cleanStatus(red *redactor, seen map[string]string, raw []byte) string {
	if raw == nil {
		return ""
	}
	if s, ok := seen[string(raw)]; ok {
		return s
	}
	s := clip(red.cleanID(RawText(raw)), 64)
	if len(seen) < 64 {
		seen[string(raw)] = s
	}
	return s
}

// text is the string or number p names in the JSON text v, as written; ""
// for anything else (absent, null, true/false, an object or a list).
func text(p Pointer, v []byte) string {
	x, err := p.LookupRaw(v)
	if err != nil {
		return ""
	}
	return RawText(x)
}
