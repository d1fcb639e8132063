package api

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
