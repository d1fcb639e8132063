package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
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

// Error says what failed in words safe to print: the client scrubs the
// server's message of anything that looks like a phone number, a token or
// a secret before it gets here.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteString(": ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
		if e.Code != "" {
			fmt.Fprintf(&b, " %s", e.Code)
		}
		if e.Message != "" {
			b.WriteString(": ")
			b.WriteString(e.Message)
		}
		if e.Err != nil {
			b.WriteString(": ")
			b.WriteString(e.Err.Error())
		}
	} else {
		if e.Message != "" {
			b.WriteString(e.Message)
			if e.Err != nil {
				b.WriteString(": ")
			}
		}
		if e.Err != nil {
			b.WriteString(e.Err.Error())
		}
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	fmt.Fprintf(&b, " [%s]", e.Outcome)
	return b.String()
}

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

// DefaultTimeout bounds a whole call, response body included, when
// [Client.Timeout] is zero and [Client.HTTP] has no timeout of its own.
const DefaultTimeout = 30 * time.Second

// MaxResponseBytes is the most the client reads of any response body; a
// success body longer than that is an [InDoubt] error.
const MaxResponseBytes = 1 << 20

// maxRetryAfter bounds a server's Retry-After so that a hostile value cannot
// overflow a Duration; apply caps its waits far below this anyway.
const maxRetryAfter = 24 * time.Hour

// IssueToken asks for a new token valid for hours (1..168); 0 omits
// valid_hour so that the API applies its default (24).
func (c *Client) IssueToken(ctx context.Context, hours int) (Token, error) {
	const op = "issue token"
	if hours < 0 || hours > 168 {
		return Token{}, &Error{Op: op, Message: fmt.Sprintf("valid hours %d out of range 1..168", hours), Outcome: NotActed}
	}
	tr := TokenRequest{GrantType: "client_credentials"}
	if hours > 0 {
		tr.ValidHour = &hours
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(c.ClientID+":"+c.ClientSecret))
	if c.LiteralBasic {
		auth = "Basic " + c.ClientID + ":" + c.ClientSecret
	}
	status, body, err := c.post(ctx, op, TokenPath, auth, "", tr)
	if err != nil {
		return Token{}, err
	}
	t, err := parseToken(body)
	if err != nil {
		return Token{}, &Error{Op: op, Status: status, Message: err.Error(), Outcome: InDoubt}
	}
	return t, nil
}

// Send sends one bulk SMS request with token. A failure is an *Error whose
// Outcome says whether the API may have acted.
func (c *Client) Send(ctx context.Context, token string, req SendRequest) (SendResponse, error) {
	const op = "send"
	if token == "" {
		return SendResponse{}, &Error{Op: op, Message: "no access token", Outcome: NotActed}
	}
	status, body, err := c.post(ctx, op, SendPath, "Bearer "+token, token, req)
	if err != nil {
		return SendResponse{}, err
	}
	r, err := parseSendResponse(body)
	if err != nil {
		return SendResponse{}, &Error{Op: op, Status: status, Message: err.Error(), Outcome: InDoubt}
	}
	return r, nil
}

// post sends v to path and returns the status and body of a 2xx response;
// anything else is an *Error classified by its status or, when no response
// came, by whether the request was written. token is scrubbed from any text
// the server sends back.
func (c *Client) post(ctx context.Context, op, path, auth, token string, v any) (int, []byte, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return 0, nil, &Error{Op: op, Message: "encode request", Err: err, Outcome: NotActed}
	}
	u, err := c.endpoint(path)
	if err != nil {
		return 0, nil, &Error{Op: op, Message: "bad base URL", Err: err, Outcome: NotActed}
	}
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, u, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, &Error{Op: op, Message: "build request", Err: err, Outcome: NotActed}
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")

	resp, err := c.httpClient().Do(req)
	if err != nil {
		return 0, nil, transportError(op, err, wrote.Load())
	}
	defer resp.Body.Close()

	body, readErr := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	tooLarge := len(body) > MaxResponseBytes
	if tooLarge {
		body = body[:MaxResponseBytes]
	}
	status := resp.StatusCode
	if status >= 200 && status < 300 {
		switch {
		case readErr != nil:
			return 0, nil, &Error{Op: op, Status: status, Message: "reading the response failed", Err: readErr, Outcome: InDoubt}
		case tooLarge:
			return 0, nil, &Error{Op: op, Status: status, Message: fmt.Sprintf("response body larger than %d bytes", MaxResponseBytes), Outcome: InDoubt}
		}
		return status, body, nil
	}

	e := &Error{Op: op, Status: status, Outcome: OutcomeOf(status)}
	if status >= 300 && status < 400 {
		e.Message = fmt.Sprintf("server redirected to %s; refusing to follow", redactURL(resp.Header.Get("Location")))
		return 0, nil, e
	}
	var er ErrorResponse
	if readErr == nil && !tooLarge && json.Unmarshal(body, &er) == nil && er.Error.Code != "" {
		e.Code = c.scrub(clip(er.Error.Code, 64), token)
		e.Message = c.scrub(er.Error.Message, token)
	} else {
		e.Message = http.StatusText(status)
		if e.Message == "" {
			e.Message = "unexpected status"
		}
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return 0, nil, e
}

// transportError classifies a call that got no response: before the request
// was fully written the API cannot have acted; after, it may have.
func transportError(op string, err error, wrote bool) *Error {
	e := &Error{Op: op, Err: err, Outcome: NotActed}
	if wrote {
		e.Outcome = InDoubt
		e.Message = "no response after the request was sent"
	} else {
		e.Message = "request not sent"
	}
	return e
}

func (c *Client) endpoint(path string) (string, error) {
	u, err := url.Parse(strings.TrimRight(c.BaseURL, "/"))
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("base URL scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return "", errors.New("base URL has no host")
	}
	u.Path += path
	return u.String(), nil
}

// httpClient returns a copy of the configured client that never follows
// redirects and has a timeout.
func (c *Client) httpClient() *http.Client {
	var hc http.Client
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	switch {
	case c.Timeout > 0:
		hc.Timeout = c.Timeout
	case hc.Timeout == 0:
		hc.Timeout = DefaultTimeout
	}
	return &hc
}

// phoneLike matches what might be a phone number in text from the server:
// a run of at least 6 digits, maybe with a leading + and separators.
var phoneLike = regexp.MustCompile(`\+?[0-9][0-9 ()./-]{4,}[0-9]`)

// scrub makes text from the server safe to print: no secret, no token, no
// phone number, no control characters, and not too long.
func (c *Client) scrub(s, token string) string {
	for _, secret := range []string{token, c.ClientSecret} {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	s = phoneLike.ReplaceAllString(s, "+[number]")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return clip(s, 300)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// redactURL keeps a Location's scheme, host and path: its query or
// userinfo might carry something that should not be printed.
func redactURL(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return "an unparsable location"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return strconv.Quote(clip(u.String(), 200))
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date; absent or
// unreadable is 0.
func parseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(n) * time.Second
	}
	t, err := http.ParseTime(h)
	if err != nil {
		return 0
	}
	d := t.Sub(now)
	switch {
	case d <= 0:
		return 0
	case d > maxRetryAfter:
		return maxRetryAfter
	}
	return d
}

// parseToken reads a token response. Its errors never quote the token.
func parseToken(body []byte) (Token, error) {
	var tr TokenResponse
	if err := json.Unmarshal(body, &tr); err != nil {
		return Token{}, errors.New("token response is not a JSON object with access_token and valid_till")
	}
	if tr.AccessToken == "" {
		return Token{}, errors.New("token response has an empty access_token")
	}
	for i := 0; i < len(tr.AccessToken); i++ {
		if b := tr.AccessToken[i]; b <= ' ' || b >= 0x7f {
			return Token{}, errors.New("token response has an access_token with characters a header cannot carry")
		}
	}
	if tr.ValidTill == "" {
		return Token{}, errors.New("token response has no valid_till")
	}
	till, err := time.ParseInLocation(ValidTillLayout, tr.ValidTill, time.UTC)
	if err != nil {
		return Token{}, errors.New("token response has a malformed valid_till, want the form YYYY-MM-DD HH:MM:SS in UTC")
	}
	return Token{Value: tr.AccessToken, ValidTill: till}, nil
}

// parseSendResponse reads a send response; without a request_id the
// request's fate is unknown.
func parseSendResponse(body []byte) (SendResponse, error) {
	var r SendResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return SendResponse{}, errors.New("success response is not the expected JSON object; the messages may have been sent")
	}
	if r.RequestID == "" {
		return SendResponse{}, errors.New("success response has no request_id; the messages may have been sent")
	}
	if r.Accepted < 0 || r.Segments < 0 {
		return SendResponse{}, errors.New("success response has negative counts; the messages may have been sent")
	}
	return r, nil
}
