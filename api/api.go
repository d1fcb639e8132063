// Package api is the messaging API (docs/messaging-api.md) as
// smsform speaks it: the wire types and the error body, shared by the
// [Client] and the sandbox server so that the two cannot drift apart.
// openapi.yaml in this folder describes the API as the sandbox serves it.
//
// Every failed call is an [*Error] that says only what HTTP said: the
// status, or the transport failure when no answer came, and whether the
// request went out whole ([Error.Reached]). What that means for the
// recipients of a batch (sent, failed, in doubt, or not acted on) is the
// send loop's to decide, in one place: apply.StatusOf. A success is a
// [SendResponse]: with [Client.Results] set, it carries the answer's
// per-recipient list as the provider wrote it, for apply to map
// (apply.StatusOfResults). The client itself never retries, never follows
// a redirect, reads at most [MaxResponseBytes] of a response, reads answers
// as text through [Pointer.LookupRaw] rather than decoding them whole, and
// keeps tokens, secrets (in every encoding) and phone numbers out of every
// text it returns.
//
// [Authenticated] sends through a client with a valid token: it reuses one
// (from memory or a [TokenStore]) until shortly before it expires, issues
// one when needed and renews it once on a 401, so that the send loop never
// sees a token.
package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/smsform/smsform/internal/mapping"
)

// Paths of the API, relative to the base URL.
const (
	TokenPath = "/api/v1/auth/token"
	SendPath  = "/api/v1/send/bulk_sms"
)

// ValidTillLayout is how valid_till is written (UTC).
const ValidTillLayout = "2006-01-02 15:04:05"

// TokenRequest is the body of POST TokenPath.
type TokenRequest struct {
	GrantType string `json:"grant_type"`
	ValidHour *int   `json:"valid_hour,omitempty"`
}

// TokenResponse is the answer to TokenRequest.
type TokenResponse struct {
	AccessToken string `json:"access_token"`
	ValidTill   string `json:"valid_till"`
}

// SendRequest is the body of POST SendPath.
type SendRequest struct {
	From string   `json:"from"`
	To   []string `json:"to"`
	Body string   `json:"body"`
}

// SendResponse is a send's success: the status as the provider gave it
// (200, 201, 202, 204…) and its request id when one could be found. The
// spec leaves the success body open; the sandbox's own answer is
// [SandboxSendResponse].
//
// With [Client.Results] set, the answer is also read as that mapping says
// (Answer): its lists' elements as the provider wrote them and what the
// mapping names each, or the Problem that keeps it from being read. Nothing
// here says what the answer means for a recipient: the caller decides.
type SendResponse struct {
	Status    int
	RequestID string
	Answer    mapping.Answer
}

// SandboxSendResponse is the success body the sandbox writes by default:
// the counts, and each recipient with the id its delivery report will carry
// (a provider.results of list /messages, number /to, id /message_id,
// outcome sent reads it).
type SandboxSendResponse struct {
	RequestID string        `json:"request_id"`
	Accepted  int           `json:"accepted"`
	Segments  int           `json:"segments"`
	Messages  []SandboxSent `json:"messages"`
}

// SandboxSent is one recipient of a [SandboxSendResponse].
type SandboxSent struct {
	To        string `json:"to"` // E.164, as sent
	MessageID string `json:"message_id"`
}

// SandboxResultsResponse is the success body the sandbox writes with
// --success-body results: one element per recipient, in the shape widely
// used bulk APIs answer (a provider.results of list /messages, number /to,
// id /messageId, status /status/groupName, reason /status/description
// reads it).
type SandboxResultsResponse struct {
	RequestID string          `json:"request_id"`
	Messages  []SandboxResult `json:"messages"`
}

// SandboxResult is one recipient of a [SandboxResultsResponse].
type SandboxResult struct {
	To        string              `json:"to"` // E.164 without the +, as providers often store numbers
	MessageID string              `json:"messageId"`
	Status    SandboxResultStatus `json:"status"`
}

// SandboxResultStatus is a recipient's status in a [SandboxResult].
type SandboxResultStatus struct {
	GroupName   string `json:"groupName"`
	Description string `json:"description"`
}

// ErrorResponse is the shape of every error body.
type ErrorResponse struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error inside ErrorResponse.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Token is an issued access token. It must never be logged or stored in
// state or plan files.
type Token struct {
	Value     string
	ValidTill time.Time
	// Basic is the form of the Basic credentials the token endpoint took,
	// [BasicBase64] or [BasicLiteral], so that the next issue tries it first.
	Basic string
}

// The two forms of the token endpoint's Basic credentials: the spec writes
// "Basic <CLIENT_ID>:<CLIENT_SECRET>" and leaves the encoding open.
const (
	BasicBase64  = "base64"  // RFC 7617: base64 of id:secret
	BasicLiteral = "literal" // id:secret as written
)

// WrongPlace reports whether the answer says the request reached no API
// endpoint (404, 405) or belongs elsewhere (a redirect not followed): a
// base URL to fix, not something to retry or to hold against recipients.
func (e *Error) WrongPlace() bool {
	switch e.Status {
	case http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// Error codes of [ErrorDetail.Code], as the sandbox sends them.
const (
	CodeInvalidClient        = "invalid_client"         // 401 on the token endpoint: wrong or missing credentials
	CodeTokenInvalid         = "token_invalid"          // 401: bearer token missing or unknown
	CodeTokenExpired         = "token_expired"          // 401: bearer token past its valid_till
	CodeUnsupportedMedia     = "unsupported_media_type" // 415: Content-Type is not application/json
	CodeMalformedJSON        = "malformed_json"         // 400: not a JSON object of the expected fields
	CodeUnsupportedGrantType = "unsupported_grant_type" // 400: grant_type is not client_credentials
	CodeInvalidField         = "invalid_field"          // 400: a field breaks a rule; the message names it
	CodeDuplicateRequest     = "duplicate_request"      // 409: the same request was accepted moments ago; nothing was sent
	CodeTooManyRecipients    = "too_many_recipients"    // 413: more recipients than the server accepts
	CodeRequestTooLarge      = "request_too_large"      // 413: body over [MaxRequestBytes]
	CodeRateLimited          = "rate_limited"           // 429: too many requests; see Retry-After
	CodeUnavailable          = "unavailable"            // 503: try again after Retry-After
	CodeInternal             = "internal_error"         // 500: the server failed, maybe after acting
	CodeNotFound             = "not_found"              // 404
	CodeMethodNotAllowed     = "method_not_allowed"     // 405
)

// MaxRequestBytes is the largest request body the API accepts.
const MaxRequestBytes = 1 << 20

// WriteError writes the error body shared by every failure:
// {"error":{"code":code,"message":message}} with status.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	WriteJSON(w, status, ErrorResponse{Error: ErrorDetail{Code: code, Message: message}})
}

// WriteJSON writes v as a JSON body with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal_error","message":"cannot encode response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
