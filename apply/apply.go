// Package apply sends a plan's batches and records every step in the state,
// keeping the delivery promise of docs/design.md: a batch's intent
// is durable before it is sent and its outcome right after, a batch is
// retried only when the API provably did not act on it, and anything the API
// may have acted on is left in doubt for an operator, never resent silently.
//
// [Start] is where an apply begins, for a campaign or a saved plan: it makes
// every check before anything is asked, recorded or sent, and returns a
// [Pending] whose plan the caller shows and approves before
// [Pending.Send]. [Run] is the send loop itself.
package apply

import (
	"errors"
	"fmt"
	"strings"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/words"
)

// ErrInterrupted is returned when a signal stopped the run; what was in
// flight was recorded.
var ErrInterrupted = errors.New("interrupted")

// IncompleteError is returned when the run finished but recipients are
// owed: failed or in doubt in this run (Failed, InDoubt), or recorded so by
// the state from any run (Owed). A campaign is finished only when nobody
// is owed, so a rerun that sends nothing says so too. Duplicates of this
// run's in-doubt recipients the provider says it already has (a 409, or a
// results.duplicate status): most likely sent by an earlier request.
type IncompleteError struct {
	// Unrecognised: statuses the provider answered that the mapping does
	// not name (their recipients are among InDoubt).
	Unrecognised    []UnknownStatus
	Failed, InDoubt int
	Owed            Owed
	Duplicates      int
	// Later: what else stopped the run, when recipients wait for their
	// send window, not_before or the frequency cap (nil when none do).
	Later *ClosedError
}

func (e *IncompleteError) Error() string {
	total := fmt.Sprintf("the state records %s failed and %s in doubt", words.N(e.Owed.Failed, "recipient", "recipients"), words.Count(e.Owed.InDoubt))
	var msg string
	switch {
	case e.Failed == 0 && e.InDoubt == 0:
		msg = "nothing failed in this run, but " + total + ": the campaign is not finished"
	default:
		msg = fmt.Sprintf("%s failed and %s in doubt", words.N(e.Failed, "recipient", "recipients"), words.Plural(e.InDoubt, "1 is", words.Count(e.InDoubt)+" are"))
		if e.Owed.Failed > e.Failed || e.Owed.InDoubt > e.InDoubt {
			msg += "; in all, " + total
		}
	}
	if e.Later != nil {
		msg += "; and " + e.Later.Error()
	}
	return msg
}

// Owed counts what a campaign's state records as owed: recipients failed
// or in doubt, from this run or any before.
type Owed struct {
	Failed  int `json:"failed"`
	InDoubt int `json:"in_doubt"`
}

// Any reports whether anyone is owed.
func (o Owed) Any() bool { return o.Failed > 0 || o.InDoubt > 0 }

// SilentError stops a run whose provider stopped answering: Requests
// requests in a row were sent and got no answer (a timeout, or the
// connection dropped after sending), so apply started no new batch. Their
// recipients are in doubt: the provider may have acted on them.
type SilentError struct {
	Requests int
	Batches  []string // the batches of those requests, in doubt
}

func (e *SilentError) Error() string {
	return fmt.Sprintf("the provider stopped answering: %d requests in a row got no answer (a timeout, or the connection dropped after sending), so no new batch was started; in doubt: batch %s",
		e.Requests, strings.Join(e.Batches, ", batch "))
}

// WrongPlaceError stops a run whose request reached no API endpoint (404,
// 405) or was redirected (not followed): the base URL needs fixing. The
// batch was not acted on; nothing of it is failed or in doubt.
type WrongPlaceError struct{ Err *api.Error }

func (e *WrongPlaceError) Error() string {
	return "the API's base URL looks wrong, so the run stopped and nothing of that batch was sent: " + e.Err.Error()
}
func (e *WrongPlaceError) Unwrap() error { return e.Err }

// ForbiddenError stops a run refused with 403 before any batch was sent:
// the credentials lack a permission. The batch was not acted on and its
// recipients are not failed.
type ForbiddenError struct{ Err *api.Error }

func (e *ForbiddenError) Error() string {
	return "the API refused the first batch (403: no permission), so the run stopped and nothing of it was sent: " + e.Err.Error()
}
func (e *ForbiddenError) Unwrap() error { return e.Err }
