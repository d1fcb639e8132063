package apply

import (
	"net/http"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/state"
)

// StatusOf is what a failed call means for the recipients of its batch:
// the one place where what the API said becomes a [state.Status].
//   - [state.Unsent], the API did not act: the request never left; 401,
//     408, 429, 503 (refused before acting, may work later); 404, 405 and
//     the redirects smsform does not follow (301, 302, 307, 308: nothing
//     there to act, see [api.Error.WrongPlace]); a 2xx that gave nothing
//     usable (only a token's issue fails so). Nothing was sent: the batch
//     may go again.
//   - [state.InDoubt], the API may have acted: no answer after the request
//     was written, 500 and every other 5xx, and the other 3xx (303 See
//     Other is what a server answers after acting). Never sent again until
//     an operator resolves it.
//   - [state.Failed], refused for good: 400 and every other 4xx.
//
// A call that succeeded (no error) sent its batch: [state.Sent].
func StatusOf(e *api.Error) state.Status {
	switch s := e.Status; {
	case s == 0 && !e.Reached:
		return state.Unsent
	case s == 0:
		return state.InDoubt
	case s == http.StatusUnauthorized, s == http.StatusRequestTimeout, s == http.StatusTooManyRequests,
		s == http.StatusServiceUnavailable, e.WrongPlace(), s >= 200 && s < 300:
		return state.Unsent
	case s >= 300 && s < 400, s >= 500:
		return state.InDoubt
	}
	return state.Failed
}
