package sandbox

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/sms"
)

// parseSendRequest decodes and checks a send request; on failure it
// returns the status, code and a message that names the field and, for
// to, the index of the first bad number.
func (s *Server) parseSendRequest(body []byte) (req api.SendRequest, status int, code, msg string) {
	var in struct {
		From *string  `json:"from"`
		To   []string `json:"to"`
		Body *string  `json:"body"`
	}
	if err := decodeStrict(body, &in); err != nil {
		return req, http.StatusBadRequest, api.CodeMalformedJSON, err.Error()
	}
	bad := func(format string, args ...any) (api.SendRequest, int, string, string) {
		return api.SendRequest{}, http.StatusBadRequest, api.CodeInvalidField, fmt.Sprintf(format, args...)
	}

	if in.From == nil {
		return bad("from: required")
	}
	if err := sms.CheckSender(*in.From); err != nil {
		return bad("from: %v", err)
	}

	switch n := len(in.To); {
	case n == 0:
		return bad("to: must list 1 to %d recipients", s.cfg.MaxRecipients)
	case n > s.cfg.MaxRecipients:
		return api.SendRequest{}, http.StatusRequestEntityTooLarge, api.CodeTooManyRecipients,
			fmt.Sprintf("to: %d recipients, at most %d per request", n, s.cfg.MaxRecipients)
	}
	seen := make(map[string]int, len(in.To))
	for i, to := range in.To {
		switch canon, err := e164.Strict(to); {
		case errors.Is(err, e164.ErrNotE164):
			return bad("to[%d]: %s is %v", i, strconv.Quote(to), err)
		case err != nil:
			return bad("to[%d]: %s is not a valid phone number: %v", i, strconv.Quote(to), err)
		case canon != to:
			return bad("to[%d]: %s is not in E.164 form (%s)", i, strconv.Quote(to), canon)
		}
		if j, dup := seen[to]; dup {
			return bad("to[%d]: %s repeats to[%d]", i, strconv.Quote(to), j)
		}
		seen[to] = i
	}

	if in.Body == nil || *in.Body == "" {
		return bad("body: required, 1 to %d characters", s.cfg.MaxBody)
	}
	if n := utf8.RuneCountInString(*in.Body); n > s.cfg.MaxBody {
		return bad("body: %d characters, at most %d", n, s.cfg.MaxBody)
	}
	return api.SendRequest{From: *in.From, To: in.To, Body: *in.Body}, 0, "", ""
}
