package apply

import (
	"context"
	"errors"

	"github.com/smsform/smsform/api"
)

// TokenSource gets the token a [Sender] sends with; *api.Authenticated is
// one. How tokens are issued, cached and stored is its business, not the
// send loop's.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// Prepare gets a token before a run records anything, so that a credentials
// mistake stops it with the state untouched. It retries while the token
// endpoint may answer later (no answer, 429, a server error) with the
// backoff and the bounds of [Run] (o's MaxRetries, BackoffBase, BackoffCap),
// each wait said in a retry event.
func Prepare(ctx context.Context, ts TokenSource, o Options) error {
	o.defaults()
	for attempt := 1; ; attempt++ {
		_, err := ts.Token(ctx)
		var ae *api.Error
		if err == nil || !errors.As(err, &ae) || !transient(ae) || attempt > o.MaxRetries || ae.RetryAfter > maxRetryAfter {
			return err
		}
		wait := backoff(attempt, ae.RetryAfter, o.BackoffBase, o.BackoffCap)
		if o.Events != nil {
			o.Events(Event{Type: "retry", HTTPStatus: ae.Status, Reason: ae.Error(), Attempt: attempt, Wait: wait})
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}
