// Package api is the messaging API of ../shared/spec/messaging-api.md as
// smsform speaks it: the wire types, the error body, and the mapping between
// HTTP statuses and what they mean for delivery, shared by the [Client] and
// the sandbox server so that the two cannot drift apart.
package api

import (
	"time"
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

// SendResponse is the answer to SendRequest.
type SendResponse struct {
	RequestID string `json:"request_id"`
	Accepted  int    `json:"accepted"`
	Segments  int    `json:"segments"`
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
}

// Outcome is what a failed call means for delivery.
type Outcome int

const (
	// NotActed: the API provably did not act (no request written, 401, 429,
	// 503); retrying cannot message anyone twice.
	NotActed Outcome = iota
	// Rejected: the API refused the request for good (400 and other 4xx).
	Rejected
	// InDoubt: the API may have acted (timeout or broken connection after the
	// request was written, 500, 502, 504, an unreadable 2xx).
	InDoubt
)
