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

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/words"
)

// ErrInterrupted is returned when a signal stopped the run; what was in
// flight was recorded.
var ErrInterrupted = errors.New("interrupted")

// IncompleteError is returned when the run finished but some recipients
// failed or are in doubt.
type IncompleteError struct {
	Failed, InDoubt int
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("%s failed and %s in doubt", words.N(e.Failed, "recipient", "recipients"), words.Plural(e.InDoubt, "1 is", words.Count(e.InDoubt)+" are"))
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
