package sandbox

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/smsform/smsform/api"
)

// Token lifetimes in hours, as the spec sets them.
const (
	defaultValidHour = 24
	maxValidHour     = 168
)

// fault is what the draw for one send request decided.
type fault int

const (
	noFault fault = iota
	failFault
	ambiguousFault
	errorFault
)

// basicChallenge is the WWW-Authenticate of a 401 for client credentials.
const basicChallenge = `Basic realm="smsform sandbox", charset="UTF-8"`

func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) event {
	var ev event
	if !s.basicOK(r.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", basicChallenge)
		return s.fail(w, r, &ev, http.StatusUnauthorized, api.CodeInvalidClient, "wrong or missing client credentials")
	}
	body, status, code, msg := readJSONBody(w, r)
	if status != 0 {
		return s.fail(w, r, &ev, status, code, msg)
	}
	hours, code, msg := parseTokenRequest(body)
	if code != "" {
		return s.fail(w, r, &ev, http.StatusBadRequest, code, msg)
	}

	ttl := time.Duration(hours) * time.Hour
	if s.cfg.TokenTTL > 0 {
		ttl = s.cfg.TokenTTL
	}
	tok := newID("sbx_")
	expiry := s.cfg.Now().Add(ttl)
	s.mu.Lock()
	s.tokens[tok] = expiry
	s.mu.Unlock()
	ev.token = tok

	s.delay(r)
	w.Header().Set("Cache-Control", "no-store")
	// valid_till is rounded down, so a client that trusts it never uses a
	// token the server already considers expired.
	api.WriteJSON(w, http.StatusOK, api.TokenResponse{
		AccessToken: tok,
		ValidTill:   expiry.UTC().Truncate(time.Second).Format(api.ValidTillLayout),
	})
	return ev
}

// handleMessages lists the outbox to a caller with the client credentials.
// It is not part of the API, so it has no latency and draws no fault.
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) event {
	if !s.basicOK(r.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", basicChallenge)
		s.writeError(w, http.StatusUnauthorized, api.CodeInvalidClient,
			"the outbox holds phone numbers: send the client credentials (Basic auth, as for "+api.TokenPath+")")
		return event{code: api.CodeInvalidClient}
	}
	api.WriteJSON(w, http.StatusOK, s.Messages())
	return event{}
}

// basicOK accepts the RFC 7617 form (base64 of id:secret) and the literal
// id:secret the spec's example shows, or only one of them when
// [Config.Basic] says so.
func (s *Server) basicOK(header string) bool {
	scheme, cred, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	cred = strings.TrimSpace(cred)
	want := []byte(s.cfg.ClientID + ":" + s.cfg.ClientSecret)
	if s.cfg.Basic != "base64" && subtle.ConstantTimeCompare([]byte(cred), want) == 1 {
		return true
	}
	dec, err := base64.StdEncoding.DecodeString(cred)
	return s.cfg.Basic != "literal" && err == nil && subtle.ConstantTimeCompare(dec, want) == 1
}

// parseTokenRequest returns valid_hour, or the error code and message of
// a 400.
func parseTokenRequest(body []byte) (hours int, code, msg string) {
	var req struct {
		GrantType *string         `json:"grant_type"`
		ValidHour json.RawMessage `json:"valid_hour"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return 0, api.CodeMalformedJSON, err.Error()
	}
	switch {
	case req.GrantType == nil:
		return 0, api.CodeUnsupportedGrantType, "grant_type: required; must be client_credentials"
	case *req.GrantType != "client_credentials":
		return 0, api.CodeUnsupportedGrantType, "grant_type: must be client_credentials"
	}
	if req.ValidHour == nil {
		return defaultValidHour, "", ""
	}
	// Only a bare integer literal: not "24", 1.5, 1e1 or null.
	h, err := strconv.Atoi(string(req.ValidHour))
	if err != nil || h < 1 || h > maxValidHour {
		return 0, api.CodeInvalidField, fmt.Sprintf("valid_hour: must be an integer from 1 to %d", maxValidHour)
	}
	return h, "", ""
}

// drop closes the connection without a response: the client cannot know
// whether the request was acted on.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // closes the stream without a response
	}
	conn.Close()
}

// rateLimited counts a send request in the current second. s.mu is held.
func (s *Server) rateLimited(now time.Time) bool {
	if s.cfg.RateLimit <= 0 {
		return false
	}
	if sec := now.Unix(); sec != s.window {
		s.window, s.inWindow = sec, 0
	}
	s.inWindow++
	return s.inWindow > s.cfg.RateLimit
}

// draw decides the fault of one send request. s.mu is held.
func (s *Server) draw() fault {
	c := s.cfg
	if c.FailRate == 0 && c.AmbiguousRate == 0 && c.ErrorRate == 0 {
		return noFault
	}
	u := s.rng.Float64()
	switch {
	case u < c.FailRate:
		return failFault
	case u < c.FailRate+c.AmbiguousRate:
		return ambiguousFault
	case u < c.FailRate+c.AmbiguousRate+c.ErrorRate:
		return errorFault
	}
	return noFault
}

func bearer(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// readJSONBody checks the content type and reads at most
// api.MaxRequestBytes; on failure it returns the status, code and message.
func readJSONBody(w http.ResponseWriter, r *http.Request) (body []byte, status int, code, msg string) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, http.StatusUnsupportedMediaType, api.CodeUnsupportedMedia, "Content-Type must be application/json"
	}
	body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, api.MaxRequestBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, http.StatusRequestEntityTooLarge, api.CodeRequestTooLarge,
			fmt.Sprintf("request body larger than %d bytes", api.MaxRequestBytes)
	case err != nil:
		return nil, http.StatusBadRequest, api.CodeMalformedJSON, "reading the request body failed"
	}
	return body, 0, "", ""
}

// decodeStrict decodes one JSON object with only known fields, and says
// what is wrong in words that name the field but not Go's types.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return fmt.Errorf("%s: must not be a JSON %s", typeErr.Field, typeErr.Value)
		case errors.As(err, &typeErr):
			return errors.New("body must be a JSON object")
		case errors.As(err, &syntaxErr):
			return fmt.Errorf("body is not valid JSON (at byte %d)", syntaxErr.Offset)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return errors.New("body is empty or cut short")
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return errors.New("body is not a valid JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("body has data after the JSON object")
	}
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		return errors.New("body must be a JSON object")
	}
	return nil
}

// handleReports lists the reports and replies made, to a caller with the
// client credentials. Like the outbox, it is not part of the API.
func (s *Server) handleReports(w http.ResponseWriter, r *http.Request) event {
	if !s.basicOK(r.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", basicChallenge)
		s.writeError(w, http.StatusUnauthorized, api.CodeInvalidClient,
			"the reports hold phone numbers: send the client credentials (Basic auth, as for "+api.TokenPath+")")
		return event{code: api.CodeInvalidClient}
	}
	api.WriteJSON(w, http.StatusOK, s.Reports())
	return event{}
}
