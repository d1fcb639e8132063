package apply

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/mapping"
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
	reasonNoList      = "the provider's answer cannot be read as provider.results says, so whether it sent them is unknown"
	reasonNotListed   = "the provider's answer does not mention this recipient"
	reasonNoStatus    = "the provider's answer gives no status for this recipient"
	reasonConflicting = "the provider's answer lists this recipient more than once, with statuses that disagree"
	// reasonOthersHeld: provider.others is sent, but the answer cannot say
	// that it names nobody else.
	reasonOthersHeld = reasonNotListed + ", and provider.others: sent holds only for an answer read whole whose every element names a recipient of the request"
)

// UnknownStatus is a status the provider answered that the mapping does
// not name, and how many recipients got it: each is in doubt until a
// person names the status under sent, failed, retry or duplicate (Where).
type UnknownStatus struct {
	Status     string `json:"status"`
	Where      string `json:"where"` // the results list that read it, file:line
	Recipients int    `json:"recipients"`
}

// Verdict is what an answer with results says of a batch's recipients:
// one Part per status and reason, every recipient in exactly one, and the
// statuses no list named.
type Verdict struct {
	Parts        []Part
	Unrecognised []UnknownStatus
}

// StatusOfResults is what a successful answer read with m, the campaign's
// provider.results, says of each of phones, the batch's recipients:
//   - a status listed under sent, or an element of a list whose outcome is
//     sent: [state.Sent];
//   - failed: [state.Failed], with the provider's words;
//   - retry: [state.Unsent] (not acted on; sent again later);
//   - duplicate, or a list whose outcome is in_doubt: [state.InDoubt];
//   - a status that no list names, no usable status, a recipient listed
//     twice with different meanings: [state.InDoubt], the status kept;
//   - a recipient no list names: [state.Sent] when m.Others is sent, the
//     answer was read whole and every element of it names a recipient of
//     phones, else [state.InDoubt]. An element that names none (a number
//     that reads as none of them, or as two, a recipient of another batch,
//     no number at all) may be about any recipient the answer does not
//     name;
//   - an answer that cannot be read as m says: everyone [state.InDoubt].
//
// Nothing is ever sent or failed by default. The provider's numbers are
// matched to phones as [matchNumbers] says; each recipient keeps the id the
// provider gave its message.
func StatusOfResults(m *mapping.Results, phones []string, a mapping.Answer) Verdict {
	if a.Problem != "" {
		return Verdict{Parts: []Part{{Status: state.InDoubt, Phones: slices.Clone(phones), Reason: reasonNoList + ": " + a.Problem}}}
	}
	verdicts := make([]verdict, len(phones))
	match := matchNumbers(phones)
	whole := a.Complete // read whole, and every element names a recipient of phones
	for at, e := range a.Elements {
		i, ok := match(at, e.Number)
		if e.Number == "" {
			i, ok = 0, len(phones) == 1 // an element of the answer to one recipient that names none
		}
		if !ok {
			whole = false // names nobody: it may be about anyone not named
			continue
		}
		verdicts[i].add(elementVerdict(m, e))
	}
	others := verdict{status: state.InDoubt, reason: reasonNotListed, seen: true}
	switch {
	case m.Others == mapping.Sent && whole:
		others = verdict{status: state.Sent, seen: true}
	case m.Others == mapping.Sent:
		others.reason = reasonOthersHeld
	}
	return collect(phones, verdicts, others)
}

// verdict is what an answer says of one recipient.
type verdict struct {
	status         state.Status
	reason         string
	providerStatus string // the status the provider gave, when it is not plainly sent
	unknown        string // the list (file:line) that did not name providerStatus
	id             string
	seen           bool
}

// add takes in what one more element says of the recipient: two elements
// that disagree make it in doubt.
func (v *verdict) add(w verdict) {
	switch {
	case !v.seen:
		*v = w
	case v.status != w.status:
		id := cmp.Or(v.id, w.id)
		*v = verdict{status: state.InDoubt, reason: reasonConflicting, providerStatus: cmp.Or(v.providerStatus, w.providerStatus), id: id, seen: true}
	case v.id == "":
		v.id = w.id
	}
}

// collect groups the recipients' verdicts into parts (others for those no
// element named), and counts the statuses no list named.
func collect(phones []string, verdicts []verdict, others verdict) Verdict {
	var out Verdict
	type key struct {
		status          state.Status
		reason, status2 string
	}
	at := map[key]int{}
	unknown := map[[2]string]int{}
	for i, v := range verdicts {
		if !v.seen {
			v = others
		}
		k := key{v.status, v.reason, v.providerStatus}
		j, ok := at[k]
		if !ok {
			j = len(out.Parts)
			at[k] = j
			out.Parts = append(out.Parts, Part{Status: v.status, Reason: v.reason, ProviderStatus: v.providerStatus})
		}
		p := &out.Parts[j]
		p.Phones = append(p.Phones, phones[i])
		if v.id != "" || p.IDs != nil {
			if p.IDs == nil {
				p.IDs = make([]string, len(p.Phones)-1, cap(p.Phones))
			}
			p.IDs = append(p.IDs, v.id)
		}
		if v.unknown != "" {
			if unknown[[2]string{v.providerStatus, v.unknown}]++; unknown[[2]string{v.providerStatus, v.unknown}] == 1 {
				out.Unrecognised = append(out.Unrecognised, UnknownStatus{Status: v.providerStatus, Where: v.unknown})
			}
		}
	}
	for i := range out.Unrecognised {
		u := &out.Unrecognised[i]
		u.Recipients = unknown[[2]string{u.Status, u.Where}]
	}
	return out
}

// elementVerdict is what one element of an answer means for its recipient.
func elementVerdict(m *mapping.Results, e mapping.Element) verdict {
	v := verdict{id: e.ID, seen: true}
	if e.Outcome == mapping.Sent {
		v.status = state.Sent // the common case: no words to make
		return v
	}
	l := &m.Lists[e.List]
	v.providerStatus = e.Status
	words := e.Reason
	switch {
	case l.Status == nil:
		words = cmp.Or(words, "listed at "+l.List.String())
	case words == "":
		words = "status " + e.Status
	default:
		words = e.Status + ": " + words
	}
	switch {
	case e.Outcome == mapping.Failed:
		v.status, v.reason = state.Failed, "refused by the provider: "+words
	case e.Outcome == mapping.Retry:
		v.status, v.reason = state.Unsent, words
	case e.Outcome == mapping.InDoubt:
		v.status, v.reason = state.InDoubt, duplicateReason+": "+words
		if l.Status == nil {
			v.reason = "the provider's answer lists this recipient as in doubt: " + words
		}
	case e.NoStatus != "":
		v.status, v.reason = state.InDoubt, fmt.Sprintf("%s (%s at %s)", reasonNoStatus, e.NoStatus, l.Status.String())
	default:
		v.status, v.unknown = state.InDoubt, l.Where
		v.reason = fmt.Sprintf("the provider answered status %s, which provider.results (%s) does not name: in doubt until you list it under sent, failed, retry or duplicate",
			quoteStatus(e.Status), l.Where)
		if e.Reason != "" {
			v.reason += " (the provider's words: " + e.Reason + ")"
		}
	}
	return v
}

// quoteStatus writes a provider's status in a message.
func quoteStatus(s string) string { return strconv.Quote(s) }
