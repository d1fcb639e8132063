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
	// Reached says the request went out whole, so the provider may have
	// it: always so when an answer came (Status is set); with none, the
	// connection failed after the request was written. A request that
	// never left (no token, a bad base URL, a refused connection) did not.
	Reached bool
	Err     error // the transport error, when no response arrived
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
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Client calls the API. Its zero value is not usable; fill BaseURL and
// credentials. It never follows redirects (an Authorization header must not
// reach another host) and reads at most a bounded amount of any response.
//
// It follows the spec and HTTP, not the sandbox: any 2xx answer to a send
// means sent, whatever its body; an error's reason is taken from whatever the
// provider wrote.
type Client struct {
	BaseURL      string
	ClientID     string
	ClientSecret string
	// Basic is the form of the token endpoint's Basic credentials:
	// [BasicBase64], [BasicLiteral], or "" to try base64 first and the
	// literal form once on a 401 (the spec leaves the encoding open).
	Basic string
	// RequestIDField is a JSON pointer (RFC 6901) to the request id in a
	// send's success body; "" looks for request_id, id and message_id, at
	// the top and under data.
	RequestIDField string
	HTTP           *http.Client // nil: a client with Timeout
	Timeout        time.Duration
	Now            func() time.Time // nil: time.Now; judges valid_till
}

// DefaultTimeout bounds a whole call, response body included, when
// [Client.Timeout] is zero and [Client.HTTP] has no timeout of its own.
const DefaultTimeout = 30 * time.Second

// MaxResponseBytes is the most the client reads of any response body; a
// longer one is cut there.
const MaxResponseBytes = 1 << 20

// maxRetryAfter bounds a server's Retry-After so that a hostile value cannot
// overflow a Duration; apply caps its waits far below this anyway.
const maxRetryAfter = 24 * time.Hour

// IssueToken asks for a new token valid for hours (1..168); 0 omits
// valid_hour so that the API applies its default (24). Any failure means
// that no token was issued, so nothing was sent: an answer that cannot be
// read is not in doubt, it is no token.
func (c *Client) IssueToken(ctx context.Context, hours int) (Token, error) {
	const op = "issue token"
	if hours < 0 || hours > 168 {
		return Token{}, &Error{Op: op, Message: fmt.Sprintf("valid hours %d out of range 1..168", hours)}
	}
	tr := TokenRequest{GrantType: "client_credentials"}
	if hours > 0 {
		tr.ValidHour = &hours
	}
	forms := []string{c.Basic}
	if c.Basic == "" {
		forms = []string{BasicBase64, BasicLiteral}
	}
	var resp *response
	var err error
	var form string
	for _, form = range forms {
		auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(c.ClientID+":"+c.ClientSecret))
		if form == BasicLiteral {
			auth = "Basic " + c.ClientID + ":" + c.ClientSecret
		}
		resp, err = c.post(ctx, op, TokenPath, auth, "", tr)
		var ae *Error
		if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
			break
		}
	}
	if err != nil {
		return Token{}, err
	}
	noToken := func(msg string) error {
		return &Error{Op: op, Status: resp.status, Message: "no token issued: " + msg, Reached: true}
	}
	if resp.readErr != nil {
		return Token{}, noToken("the answer could not be read: " + resp.readErr.Error())
	}
	t, err := parseToken(resp.body)
	if err != nil {
		return Token{}, noToken(err.Error())
	}
	if msg := expiredOnArrival(t.ValidTill, c.now(), resp.header.Get("Date")); msg != "" {
		return Token{}, noToken(msg)
	}
	t.Basic = form
	return t, nil
}

// expiredOnArrival says why a token whose valid_till is already past cannot
// be used, and whose clock is wrong when the answer's Date tells: never take
// such a token, or every batch would ask for a new one.
func expiredOnArrival(till, now time.Time, date string) string {
	if till.After(now) {
		return ""
	}
	at := till.UTC().Format(ValidTillLayout)
	if served, err := http.ParseTime(date); err == nil {
		if !till.After(served) {
			return fmt.Sprintf("the token's valid_till (%s UTC) is not after the provider's own Date (%s): the provider issues tokens that are already expired (its clock, or its valid_till, is wrong)", at, served.UTC().Format(ValidTillLayout))
		}
		return fmt.Sprintf("the token's valid_till (%s UTC) is in the past by this machine's clock (%s UTC) but not by the provider's (%s UTC): check this machine's clock", at, now.UTC().Format(ValidTillLayout), served.UTC().Format(ValidTillLayout))
	}
	return fmt.Sprintf("the token's valid_till (%s UTC) is already in the past (now %s UTC): the provider's clock or this machine's is wrong", at, now.UTC().Format(ValidTillLayout))
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Send sends one bulk SMS request with token. Any 2xx answer means the
// messages were sent, whatever its body: the request id is taken from the
// body when it can be found. A failure is an *Error that says what HTTP
// said of it.
func (c *Client) Send(ctx context.Context, token string, req SendRequest) (SendResponse, error) {
	const op = "send"
	if token == "" {
		return SendResponse{}, &Error{Op: op, Message: "no access token"}
	}
	resp, err := c.post(ctx, op, SendPath, "Bearer "+token, token, req)
	if err != nil {
		return SendResponse{}, err
	}
	return SendResponse{Status: resp.status, RequestID: c.cleanID(findRequestID(resp.body, c.RequestIDField), token)}, nil
}

// response is a 2xx answer: its body may have been cut short by readErr or
// by [MaxResponseBytes], which changes nothing of what the status says.
type response struct {
	status  int
	header  http.Header
	body    []byte
	readErr error
}

// post sends v to path and returns a 2xx response; anything else is an
// *Error with its status or, when no response came, whether the request
// was written. token is scrubbed from any text the server sends back.
func (c *Client) post(ctx context.Context, op, path, auth, token string, v any) (*response, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{Op: op, Message: "encode request", Err: err}
	}
	u, err := c.endpoint(path)
	if err != nil {
		return nil, &Error{Op: op, Message: "bad base URL", Err: err}
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
		return nil, &Error{Op: op, Message: "build request", Err: err}
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")

	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, transportError(op, err, wrote.Load())
	}
	defer resp.Body.Close()

	body, readErr := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	tooLarge := len(body) > MaxResponseBytes
	if tooLarge {
		body = body[:MaxResponseBytes]
	}
	status := resp.StatusCode
	if status >= 200 && status < 300 {
		return &response{status: status, header: resp.Header, body: body, readErr: readErr}, nil
	}

	e := &Error{Op: op, Status: status, Reached: true}
	if status >= 300 && status < 400 {
		e.Message = fmt.Sprintf("the provider answered %d %s and asks for %s; smsform does not follow redirects (the credentials must not go elsewhere)",
			status, http.StatusText(status), redactURL(resp.Header.Get("Location")))
		return nil, e
	}
	if readErr == nil && !tooLarge {
		code, msg := errorReason(body)
		e.Code = c.scrub(clip(code, 64), token)
		e.Message = c.scrub(msg, token)
	}
	if e.Message == "" && e.Code == "" {
		e.Message = http.StatusText(status)
		if e.Message == "" {
			e.Message = "unexpected status"
		}
	}
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusRequestTimeout:
		e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return nil, e
}

// transportError is a call that got no response: before the request was
// fully written the API cannot have acted; after, it may have.
func transportError(op string, err error, wrote bool) *Error {
	e := &Error{Op: op, Err: err, Reached: wrote}
	if wrote {
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

// cleanID makes a provider's request id safe to record and print: no
// secret, no control characters, not too long. Unlike free text it keeps
// digits: ids are often numbers.
func (c *Client) cleanID(id, token string) string {
	for _, secret := range []string{token, c.ClientSecret} {
		if len(secret) >= 4 && strings.Contains(id, secret) {
			return "[redacted]"
		}
	}
	id = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, id)
	return clip(id, 128)
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

// errorReason finds the provider's own words in an error body, whatever
// its shape: {"error":{"code","message"}}, OAuth's {"error",
// "error_description"}, {"message","code"}, {"detail"}, {"errors":[...]},
// or plain text.
func errorReason(body []byte) (code, message string) {
	body = bytes.TrimSpace(body)
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		if bytes.HasPrefix(body, []byte("<")) {
			return "", "" // an HTML page says less than the status line
		}
		return "", string(body) // plain text: the words as they are
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", string(body)
	}
	text := func(keys ...string) string {
		for _, k := range keys {
			switch x := m[k].(type) {
			case string:
				if x != "" {
					return x
				}
			case float64:
				return strconv.FormatFloat(x, 'f', -1, 64)
			}
		}
		return ""
	}
	switch e := m["error"].(type) {
	case map[string]any:
		inner, _ := json.Marshal(e)
		return errorReason(inner)
	case string:
		return e, text("error_description", "message", "detail")
	}
	if errs, ok := m["errors"].([]any); ok && len(errs) > 0 {
		if first, err := json.Marshal(errs[0]); err == nil {
			return errorReason(first)
		}
	}
	return text("code", "error_code", "type"), text("message", "error_description", "detail", "title", "description")
}

// findRequestID takes the request id from a success body when it can be
// found: at pointer (RFC 6901) when one is given, else in request_id, id or
// message_id, at the top or under data (an object, or the first of a list).
// A body that is not JSON, or holds no id, has none: the messages were sent
// all the same.
func findRequestID(body []byte, pointer string) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	if pointer != "" {
		return scalar(lookupPointer(v, pointer))
	}
	for _, scope := range []any{v, field(v, "data"), first(field(v, "data")), first(v)} {
		for _, k := range []string{"request_id", "id", "message_id"} {
			if id := scalar(field(scope, k)); id != "" {
				return id
			}
		}
	}
	return ""
}

func field(v any, key string) any {
	m, _ := v.(map[string]any)
	return m[key]
}

func first(v any) any {
	if l, ok := v.([]any); ok && len(l) > 0 {
		return l[0]
	}
	return nil
}

// scalar writes a JSON string or number as text; anything else is "".
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

// lookupPointer resolves an RFC 6901 JSON pointer in v; nil when it names
// nothing.
func lookupPointer(v any, pointer string) any {
	if pointer == "" {
		return v
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// ValidPointer reports whether p is a JSON pointer (RFC 6901): empty, or
// "/" followed by tokens in which ~ is only ~0 or ~1.
func ValidPointer(p string) bool {
	if p == "" {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return false
		}
	}
	return true
}
