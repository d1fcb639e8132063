package api

import (
	"context"
	"net/http"
	"time"
)

// Error is a failed call.
type Error struct {
	Op         string // "issue token", "send"
	Status     int    // HTTP status, 0 when no response arrived
	Code       string // the error body's code, when there was one
	Message    string
	RetryAfter time.Duration // from Retry-After on 429/503, 0 when absent
	Outcome    Outcome
	Err        error // the transport error, when no response arrived
}

func (e *Error) Error() string { panic("todo") }
func (e *Error) Unwrap() error { return e.Err }

// Client calls the API. Its zero value is not usable; fill BaseURL and
// credentials. It never follows redirects (an Authorization header must not
// reach another host) and reads at most a bounded amount of any response.
type Client struct {
	BaseURL      string
	ClientID     string
	ClientSecret string
	LiteralBasic bool         // send "Basic id:secret" unencoded, as the spec's example shows
	HTTP         *http.Client // nil: a client with Timeout
	Timeout      time.Duration
}

// IssueToken asks for a new token valid for hours (1..168).
func (c *Client) IssueToken(ctx context.Context, hours int) (Token, error) { panic("todo") }

// Send sends one bulk SMS request with token. A failure is an *Error whose
// Outcome says whether the API may have acted.
func (c *Client) Send(ctx context.Context, token string, req SendRequest) (SendResponse, error) {
	panic("todo")
}
