package sandbox

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/sms"
)

// handleSend answers a send: the token and the rate limit first, then the
// request's fault, its checks, a repeat within the dedupe window, each
// recipient's fate, and the outbox written before the answer.
func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) event {
	var ev event
	now := s.cfg.Now()
	f, ok := s.admitSend(w, r, &ev, now)
	if !ok {
		return ev
	}
	body, status, code, msg := readJSONBody(w, r)
	if status != 0 {
		return s.fail(w, r, &ev, status, code, msg)
	}
	req, status, code, msg := s.parseSendRequest(body)
	if status != 0 {
		return s.fail(w, r, &ev, status, code, msg)
	}
	if s.repeated(req, now) {
		ev.fault = "duplicate"
		s.count(func(st *Stats) { st.Duplicates++ })
		return s.fail(w, r, &ev, http.StatusConflict, api.CodeDuplicateRequest,
			fmt.Sprintf("the same message to the same recipients was accepted less than %s ago; nothing was sent", s.cfg.DedupeWindow))
	}

	fates := s.drawFates(len(req.To))
	id, msgIDs := newID("req_"), s.messageIDs(len(req.To))
	if err := s.record(id, req, fates, msgIDs, now); err != nil {
		s.log.Error("outbox write failed", "err", err)
		return s.fail(w, r, &ev, http.StatusInternalServerError, api.CodeInternal, "outbox write failed")
	}
	ev.requestID, ev.recipients = id, len(req.To)

	switch f {
	case ambiguousFault:
		ev.fault, ev.dropped = "ambiguous", true
		s.delay(r)
		s.count(func(st *Stats) { st.Dropped++ })
		drop(w)
		return ev
	case errorFault:
		ev.fault = "error"
		return s.fail(w, r, &ev, http.StatusInternalServerError, api.CodeInternal, "internal error")
	}
	s.delay(r)
	s.accept(w, id, req, fates, msgIDs)
	return ev
}

// admitSend checks the bearer token and the rate limit, and draws the
// request's fault; a request refused there is answered (ok false), and a
// fault that acts before anything is read (503) too.
func (s *Server) admitSend(w http.ResponseWriter, r *http.Request, ev *event, now time.Time) (f fault, ok bool) {
	tok, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="smsform sandbox"`)
		*ev = s.fail(w, r, ev, http.StatusUnauthorized, api.CodeTokenInvalid, "missing bearer token")
		return 0, false
	}
	ev.token = tok

	s.mu.Lock()
	expiry, known := s.tokens[tok]
	var limited bool
	if known && now.Before(expiry) {
		limited = s.rateLimited(now)
		if !limited {
			f = s.draw()
		}
	}
	s.mu.Unlock()

	switch {
	case !known:
		w.Header().Set("WWW-Authenticate", `Bearer realm="smsform sandbox", error="invalid_token"`)
		*ev = s.fail(w, r, ev, http.StatusUnauthorized, api.CodeTokenInvalid, "unknown bearer token")
	case !now.Before(expiry):
		w.Header().Set("WWW-Authenticate", `Bearer realm="smsform sandbox", error="invalid_token", error_description="expired"`)
		*ev = s.fail(w, r, ev, http.StatusUnauthorized, api.CodeTokenExpired, "bearer token expired; issue a new one")
	case limited:
		ev.fault = "rate_limit"
		w.Header().Set("Retry-After", "1")
		*ev = s.fail(w, r, ev, http.StatusTooManyRequests, api.CodeRateLimited,
			fmt.Sprintf("more than %d send requests in one second", s.cfg.RateLimit))
	case f == failFault:
		ev.fault = "fail"
		w.Header().Set("Retry-After", "1")
		*ev = s.fail(w, r, ev, http.StatusServiceUnavailable, api.CodeUnavailable, "temporarily unavailable; nothing was sent")
	default:
		return f, true
	}
	return 0, false
}

// fate is what becomes of one recipient of an accepted request.
type fate uint8

const (
	delivered fate = iota
	rejected       // refused inside the 200: not delivered
	throttled      // not acted on inside the 200: not delivered, may be sent again
)

// drawFates draws each recipient's fate from the seeded generator: nil when
// every recipient is delivered (no reject or throttle rate).
func (s *Server) drawFates(n int) []fate {
	c := s.cfg
	if c.RejectRate == 0 && c.ThrottleRate == 0 {
		return nil
	}
	fates := make([]fate, n)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range fates {
		switch u := s.rng.Float64(); {
		case u < c.RejectRate:
			fates[i] = rejected
		case u < c.RejectRate+c.ThrottleRate:
			fates[i] = throttled
		}
	}
	return fates
}

// repeated reports whether req repeats, within the dedupe window, a request
// the server acted on (same sender, body and recipients), and otherwise
// remembers it. Entries older than the window are forgotten as it goes.
func (s *Server) repeated(req api.SendRequest, now time.Time) bool {
	d := s.cfg.DedupeWindow
	if d <= 0 {
		return false
	}
	key := dedupeKey(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.seen[key]; ok && now.Sub(at) < d {
		return true
	}
	if len(s.seen) >= 1024 {
		for k, at := range s.seen {
			if now.Sub(at) >= d {
				delete(s.seen, k)
			}
		}
	}
	s.seen[key] = now
	return false
}

// dedupeKey names a request by its sender, body and set of recipients.
func dedupeKey(req api.SendRequest) [sha256.Size]byte {
	to := slices.Clone(req.To)
	slices.Sort(to)
	h := sha256.New()
	for _, part := range append([]string{req.From, req.Body}, to...) {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// accept writes the success answer in the configured shape. The minimal
// and empty answers have no place for a message id per recipient: minimal's
// message_id is the request's.
func (s *Server) accept(w http.ResponseWriter, id string, req api.SendRequest, fates []fate, msgIDs []string) {
	status := cmp.Or(s.cfg.SuccessStatus, http.StatusOK)
	switch {
	case status == http.StatusNoContent || s.cfg.SuccessBody == "empty":
		w.WriteHeader(status)
	case s.cfg.SuccessBody == "minimal":
		api.WriteJSON(w, status, map[string]string{"message_id": id})
	case s.cfg.SuccessBody == "results":
		api.WriteJSON(w, status, resultsAnswer(id, req.To, fates, msgIDs))
	default:
		api.WriteJSON(w, status, sandboxAnswer(id, req, fates, msgIDs))
	}
}

// sandboxAnswer is the default answer: the counts, and each recipient
// accepted with its message id. (Only the results answer can refuse some
// recipients, so in practice this lists them all.)
func sandboxAnswer(id string, req api.SendRequest, fates []fate, msgIDs []string) api.SandboxSendResponse {
	out := api.SandboxSendResponse{RequestID: id, Messages: make([]api.SandboxSent, 0, len(req.To))}
	for i, to := range req.To {
		if fates == nil || fates[i] == delivered {
			out.Messages = append(out.Messages, api.SandboxSent{To: to, MessageID: msgIDs[i]})
		}
	}
	out.Accepted = len(out.Messages)
	out.Segments = sms.Analyze(req.Body).Segments * out.Accepted
	return out
}

// Statuses of the per-recipient answer (--success-body results), in the
// shape of widely used bulk APIs.
const (
	ResultPending   = "PENDING"   // accepted, on its way
	ResultRejected  = "REJECTED"  // refused: not delivered
	ResultThrottled = "THROTTLED" // not acted on: send it again later
)

// resultsAnswer is the per-recipient answer: each recipient echoed as
// providers often store numbers, in E.164 without the +, so that a client
// must match them to what it sent, and with its message id (refused and
// throttled ones too, as providers give them).
func resultsAnswer(id string, to []string, fates []fate, msgIDs []string) api.SandboxResultsResponse {
	out := api.SandboxResultsResponse{RequestID: id, Messages: make([]api.SandboxResult, len(to))}
	for i, phone := range to {
		phone = strings.TrimPrefix(phone, "+")
		st := api.SandboxResultStatus{GroupName: ResultPending, Description: "Message sent to next instance"}
		if fates != nil {
			switch fates[i] {
			case rejected:
				st = api.SandboxResultStatus{GroupName: ResultRejected, Description: "Destination refused by the network"}
			case throttled:
				st = api.SandboxResultStatus{GroupName: ResultThrottled, Description: "Too many messages: send again later"}
			}
		}
		out.Messages[i] = api.SandboxResult{To: phone, MessageID: msgIDs[i], Status: st}
	}
	return out
}

func countFates(fates []fate, f fate) int {
	n := 0
	for _, x := range fates {
		if x == f {
			n++
		}
	}
	return n
}

// record appends the delivered recipients of the request to the outbox,
// written through to Outbox before returning, and then schedules their
// reports: a message is reported only once the outbox holds it.
func (s *Server) record(id string, req api.SendRequest, fates []fate, msgIDs []string, now time.Time) error {
	at := now.UTC()
	msgs := make([]Message, 0, len(req.To))
	// The lines only when there is an Outbox to take them: encoding them
	// for nothing was a tenth of a load test's CPU, taken from the client
	// it shares the machine with.
	var buf bytes.Buffer
	var enc *json.Encoder
	if s.cfg.Outbox != nil {
		// Sized for the lines at once: grown by doubling, the buffer cost
		// more than the sandbox's answer.
		buf.Grow(len(req.To) * (len(id) + len(msgIDs[0]) + len(req.From) + len(req.Body) + 110))
		enc = json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
	}
	for i, to := range req.To {
		if fates != nil && fates[i] != delivered {
			continue
		}
		m := Message{RequestID: id, MessageID: msgIDs[i], To: to, From: req.From, Body: req.Body, At: at}
		if enc != nil {
			if err := enc.Encode(m); err != nil {
				return err
			}
		}
		msgs = append(msgs, m)
	}
	if err := s.writeOutbox(buf.Bytes(), msgs, fates); err != nil {
		return err
	}
	s.reports.schedule(msgs)
	return nil
}

// writeOutbox writes the lines of one request to Outbox in one Write and
// counts them, under s.mu so that requests' lines never interleave.
func (s *Server) writeOutbox(lines []byte, msgs []Message, fates []fate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Outbox != nil && len(lines) > 0 {
		if _, err := s.cfg.Outbox.Write(lines); err != nil {
			return err
		}
		if f, ok := s.cfg.Outbox.(interface{ Flush() error }); ok {
			if err := f.Flush(); err != nil {
				return err
			}
		}
	}
	if !s.cfg.Forget {
		s.outbox = append(s.outbox, msgs...)
	}
	s.stats.Accepted++
	s.stats.Messages += len(msgs)
	s.stats.Rejected += countFates(fates, rejected)
	s.stats.Throttled += countFates(fates, throttled)
	return nil
}
