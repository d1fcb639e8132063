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
//
// This is the run's first contact with the provider, so a base URL at
// which nothing can be asked ([api.Error.Unreachable]: a refused
// connection, a host that does not resolve, plain HTTP where HTTPS was
// asked) is a configuration to fix, not a provider that will answer later:
// it is tried [firstContactTries] times, not MaxRetries. A certificate this
// machine does not trust is never tried again.
func Prepare(ctx context.Context, ts TokenSource, o Options) error {
	o.defaults()
	for attempt := 1; ; attempt++ {
		_, err := ts.Token(ctx)
		var ae *api.Error
		switch {
		case err == nil || !errors.As(err, &ae) || !transient(ae) || attempt > o.MaxRetries || ae.RetryAfter > maxRetryAfter:
			return err
		case ae.Unreachable() && attempt >= firstContactTries:
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

// firstContactTries is how many times the first request of a run is made
// to a base URL at which nothing can be asked: twice, in case the provider
// (or a sandbox) was restarting at that instant.
const firstContactTries = 2
