// Package apply sends a plan's batches and records every step in the state,
// keeping the delivery promise of docs/design.md: a batch's intent
// is durable before it is sent and its outcome right after, a batch is
// retried only when the API provably did not act on it, and anything the API
// may have acted on is left in doubt for an operator, never resent silently.
package apply

import (
	"errors"
	"fmt"
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
	return fmt.Sprintf("%d recipient(s) failed and %d are in doubt", e.Failed, e.InDoubt)
}
