package apply

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/state"
)

// StatusOf is what a failed call means for the recipients of its batch:
// the one place where what the API said becomes a [state.Status], with
// [StatusOfResults] for an answer that speaks of each recipient.
//   - [state.Unsent], the API did not act: the request never left; 401,
//     408, 429, 503 (refused before acting, may work later); 413 (too large
//     to act on: the batch is sent again in halves); 404, 405 and the
//     redirects smsform does not follow (301, 302, 307, 308: nothing there
//     to act, see [api.Error.WrongPlace]); a 2xx that gave nothing usable
//     (only a token's issue fails so). Nothing was sent: the batch may go
//     again.
//   - [state.InDoubt], the API may have acted: no answer after the request
//     was written, 500 and every other 5xx, the other 3xx (303 See Other is
//     what a server answers after acting), and 409 (the provider says it
//     already has this message: it may have sent it). Never sent again
//     until an operator resolves it.
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
		s == http.StatusServiceUnavailable, e.TooLarge(), e.WrongPlace(), s >= 200 && s < 300:
		return state.Unsent
	case s == http.StatusConflict, s >= 300 && s < 400, s >= 500:
		return state.InDoubt
	}
	return state.Failed
}

// duplicateReason starts the reason kept for a recipient the provider says
// it already has (a 409, or a status listed under results.duplicate).
const duplicateReason = "the provider reports it already has this message"

// ReasonOf is the reason kept for the recipients of a failed call: the
// error's words, after what they mean when that is not plain (a 409).
func ReasonOf(e *api.Error) string {
	if e.Status == http.StatusConflict {
		return duplicateReason + ": " + e.Error()
	}
	return e.Error()
}

// Part is what the provider's answer says of some recipients of a batch:
// Sent, Failed, InDoubt, or Unsent (not acted on: to be sent again), with
// the provider's words; the state records it as it is.
type Part = state.Part

// Reasons for recipients an answer with results does not settle.
const (
	reasonNoList      = "the provider's answer has no readable list of recipients, so whether it sent them is unknown"
	reasonNotListed   = "the provider's answer does not mention this recipient"
	reasonNoStatus    = "the provider's answer gives no status for this recipient"
	reasonConflicting = "the provider's answer lists this recipient more than once, with statuses that disagree"
)

// StatusOfResults is what a successful answer with a per-recipient list
// (m, the campaign's provider.results) says of each of phones, the batch's
// recipients: one Part per status and reason, every phone in exactly one.
//   - a status listed under m.Sent: [state.Sent];
//   - under m.Retry: [state.Unsent] (not acted on; sent again later);
//   - under m.Duplicate: [state.InDoubt], with the provider's words;
//   - any other status: [state.Failed], with the provider's words;
//   - no status, a recipient listed twice with statuses of different
//     meanings, a recipient the list does not mention, or no readable list
//     at all: [state.InDoubt]. Nothing is ever sent by default.
//
// The provider's numbers are matched to phones as [matchNumbers] says.
func StatusOfResults(m *api.Results, phones []string, resp api.SendResponse) []Part {
	if resp.NoList != "" {
		return []Part{{Status: state.InDoubt, Phones: slices.Clone(phones), Reason: reasonNoList + ": " + resp.NoList}}
	}
	type verdict struct {
		status state.Status
		reason string
		seen   bool
	}
	verdicts := make([]verdict, len(phones))
	match := matchNumbers(phones)
	for at, res := range resp.Results {
		i, ok := match(at, res.Number)
		if !ok {
			continue
		}
		status, reason := statusOfResult(m, res)
		switch v := &verdicts[i]; {
		case !v.seen:
			*v = verdict{status: status, reason: reason, seen: true}
		case v.status != status:
			*v = verdict{status: state.InDoubt, reason: reasonConflicting, seen: true}
		}
	}
	var parts []Part
	type key struct {
		status state.Status
		reason string
	}
	at := map[key]int{}
	for i, v := range verdicts {
		if !v.seen {
			v = verdict{status: state.InDoubt, reason: reasonNotListed}
		}
		k := key{v.status, v.reason}
		j, ok := at[k]
		if !ok {
			j = len(parts)
			at[k] = j
			parts = append(parts, Part{Status: v.status, Reason: v.reason})
		}
		parts[j].Phones = append(parts[j].Phones, phones[i])
	}
	return parts
}

// statusOfResult is what one element of a results list means for its
// recipient, and the reason kept.
func statusOfResult(m *api.Results, res api.RecipientResult) (state.Status, string) {
	s := strings.TrimSpace(res.Status)
	switch {
	case s == "":
		return state.InDoubt, reasonNoStatus
	case slices.Contains(m.Sent, s):
		return state.Sent, "" // the common case: no words to make
	}
	words := res.Reason
	if words == "" {
		words = "status " + res.Status
	} else {
		words = res.Status + ": " + words
	}
	switch {
	case slices.Contains(m.Retry, s):
		return state.Unsent, words
	case slices.Contains(m.Duplicate, s):
		return state.InDoubt, duplicateReason + ": " + words
	}
	return state.Failed, fmt.Sprintf("refused by the provider: %s", words)
}
