package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/redact"
	"github.com/smsform/smsform/internal/words"
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
	// Host is the host:port called, said by the messages of a failure
	// to connect (a certificate, a refused connection).
	Host string
	// Trouble says why a connection could not be made, when it is known;
	// see [Error.Certificate] and [Error.Unreachable].
	Trouble Trouble
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
// It follows the spec and HTTP, not the sandbox: a 2xx answer to a send
// means the provider took the request, whatever its body; with Results
// set, the answer's per-recipient list is read and returned as data; an
// error's reason is taken from whatever the provider wrote.
type Client struct {
	BaseURL      string
	ClientID     string
	ClientSecret string
	// Basic is the form of the token endpoint's Basic credentials:
	// [BasicBase64], [BasicLiteral], or "" to try base64 first and the
	// literal form once on a 401 (the spec leaves the encoding open).
	Basic string
	// RequestIDField points to the request id in a send's success body;
	// nil looks for request_id, id and message_id, at the top and under
	// data.
	RequestIDField *rawjson.Pointer
	// Results, when set, says how a send's success body lists each
	// recipient ([SendResponse.Answer]).
	Results *mapping.Results
	HTTP    *http.Client // nil: a client with Timeout
	Timeout time.Duration
	Now     func() time.Time // nil: time.Now; judges valid_till
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
	for asked := 1; ; asked++ {
		resp, form, err := c.postToken(ctx, op, forms, tr)
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
		now, date := c.now(), resp.header.Get("Date")
		if msg := expiredOnArrival(t.ValidTill, now, date); msg != "" {
			if asked == 1 && justLapsed(t.ValidTill, now, date) {
				continue
			}
			return Token{}, noToken(msg)
		}
		t.Basic = form
		return t, nil
	}
}

// postToken asks for a token with each Basic form of forms in turn until
// one is not answered 401, and returns the answer and the form it used.
func (c *Client) postToken(ctx context.Context, op string, forms []string, tr TokenRequest) (resp *response, form string, err error) {
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
	return resp, form, err
}

// justLapsed reports whether a token that arrived past its valid_till by
// this machine's clock may simply have lived less than a second: both
// valid_till and the answer's Date tell whole seconds, so a token issued
// for a second or so (a test provider's) can lapse on the way though the
// clocks agree. Such a token is asked for once more.
func justLapsed(till, now time.Time, date string) bool {
	served, err := http.ParseTime(date)
	return err == nil && till.After(served) && now.Sub(till) < 2*time.Second
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

// Send sends one bulk SMS request with token. A 2xx answer means the
// provider took the request: the request id is taken from the body when it
// can be found, and with [Client.Results] set the body's per-recipient
// list is returned as it was written ([SendResponse]), for the caller to
// decide what it means for each recipient; without Results, the 2xx is all
// there is to know. A failure is an *Error that says what HTTP said of it.
func (c *Client) Send(ctx context.Context, token string, req SendRequest) (SendResponse, error) {
	const op = "send"
	if token == "" {
		return SendResponse{}, &Error{Op: op, Message: "no access token"}
	}
	resp, err := c.post(ctx, op, SendPath, "Bearer "+token, token, req)
	if err != nil {
		return SendResponse{}, err
	}
	// The answer is read as text, never decoded whole: a provider's list
	// of a thousand recipients costs one pass over its bytes.
	var doc []byte
	if json.Valid(resp.body) {
		doc = resp.body
	}
	out := SendResponse{Status: resp.status, RequestID: c.cleanID(findRequestID(doc, c.RequestIDField), token)}
	if c.Results == nil {
		return out, nil
	}
	switch {
	case resp.readErr != nil:
		out.Answer.Problem = "the answer could not be read whole: " + resp.readErr.Error()
	case resp.cut:
		out.Answer.Problem = fmt.Sprintf("the answer is longer than the %d bytes smsform reads", MaxResponseBytes)
	case len(bytes.TrimSpace(resp.body)) == 0:
		out.Answer.Problem = "the answer has no body"
	case doc == nil:
		out.Answer.Problem = "the answer is not JSON"
	default:
		out.Answer = c.Results.Read(doc, len(req.To), c.redactor(token))
		if out.Answer.BatchID != "" && c.RequestIDField == nil {
			out.RequestID = out.Answer.BatchID
		}
	}
	return out, nil
}

// response is a 2xx answer: its body may have been cut short by readErr or
// at [MaxResponseBytes] (cut), which changes nothing of what the status
// says.
type response struct {
	status  int
	header  http.Header
	body    []byte
	cut     bool
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
		return nil, transportError(op, req.URL.Host, err, wrote.Load())
	}
	defer resp.Body.Close()

	body, readErr := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	tooLarge := len(body) > MaxResponseBytes
	if tooLarge {
		body = body[:MaxResponseBytes]
	}
	status := resp.StatusCode
	if status >= 200 && status < 300 {
		return &response{status: status, header: resp.Header, body: body, cut: tooLarge, readErr: readErr}, nil
	}

	e := &Error{Op: op, Status: status, Reached: true}
	if status >= 300 && status < 400 {
		e.Message = fmt.Sprintf("the provider answered %d %s and asks for %s; smsform does not follow redirects (the credentials must not go elsewhere)",
			status, http.StatusText(status), redactURL(resp.Header.Get(locationHeader)))
		return nil, e
	}
	if readErr == nil && !tooLarge {
		code, msg := errorReason(body)
		e.Code = words.Clip(c.scrub(code, token), 64) // clipped after: a secret cut short would pass
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

// locationHeader holds a redirect's Location once hiddenLocation took it
// out of the answer's header.
const locationHeader = "X-Smsform-Location"

// hiddenLocation moves a redirect's Location out of net/http's sight: its
// client parses the Location before CheckRedirect is asked, and one it
// cannot parse ends the request with an error that quotes it whole (a
// number, a key in its query) and reads as if no answer had come. smsform
// never follows a redirect; it says where the provider asked to go, masked
// (see redactURL).
type hiddenLocation struct{ rt http.RoundTripper }

func (h hiddenLocation) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(req)
	if err == nil && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		if loc := resp.Header.Values("Location"); len(loc) > 0 {
			resp.Header.Del("Location")
			resp.Header[locationHeader] = loc
		}
	}
	return resp, err
}

// httpClient returns a copy of the configured client that never follows
// redirects and has a timeout.
func (c *Client) httpClient() *http.Client {
	var hc http.Client
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc.Transport = hiddenLocation{rt}
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
func (c *Client) scrub(s, token string) string { return c.redactor(token).Words(s) }

// cleanID makes a provider's request id or status word safe to record and
// print: no secret, no control characters, not too long. Unlike free text
// it keeps digits: ids are often numbers.
func (c *Client) cleanID(id, token string) string { return c.redactor(token).ID(id) }

// redactor takes the client secret and the bearer token out of what a
// provider sends back, in every form a provider may send them: as is,
// URL-encoded (query or path), JSON-escaped, in base64 (standard or URL
// alphabet, padded or not, alone or inside the base64 of id:secret, at any
// offset), and whatever follows "Basic" or "Bearer" in an echoed
// Authorization header. It is the one place where secrets are taken out of
// what the provider says; make one per answer ([Client.redactor]) and use it
// for each of its texts.
type redactor struct {
	forms []string // replaced wherever they appear
	cores []string // base64: the run of base64 around one is replaced
	// starts holds the first four bytes of every form and core (hashed to
	// a bit): text none of whose four bytes in a row has its bit set holds
	// none of them, which lets [redactor.ID] pass a thousand ids an answer
	// without searching each for every form.
	starts [256]uint64
}

// gramBit is the bit of starts for the four bytes at g[0:4].
func gramBit(g string) (word int, bit uint64) {
	h := (uint32(g[0]) | uint32(g[1])<<8 | uint32(g[2])<<16 | uint32(g[3])<<24) * 0x9e3779b1
	return int(h >> 24), 1 << (h >> 18 & 63)
}

// mayHoldSecret reports whether s may hold a form or core of a secret, or
// anything redact would decode: false means redact(s) is s.
func (r *redactor) mayHoldSecret(s string) bool {
	if strings.ContainsAny(s, "&%+") || mayHoldAuth(s) {
		return true
	}
	for i := 0; i+4 <= len(s); i++ {
		if w, b := gramBit(s[i : i+4]); r.starts[w]&b != 0 {
			return true
		}
	}
	return false
}

// redactor is the redactor of this client's secret and of token.
func (c *Client) redactor(token string) *redactor {
	r := &redactor{}
	for _, secret := range []string{token, c.ClientSecret} {
		if len(secret) >= minSecret {
			r.forms = append(r.forms, textForms(secret)...)
			r.cores = append(r.cores, base64Cores(secret)...)
		}
	}
	if c.ClientID != "" && len(c.ClientSecret) >= minSecret {
		pair := []byte(c.ClientID + ":" + c.ClientSecret)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			r.forms = append(r.forms, enc.EncodeToString(pair))
		}
	}
	for _, f := range append(slices.Clip(r.forms), r.cores...) {
		if len(f) < 4 { // none is (see minSecret), but if one were: every bit
			for w := range r.starts {
				r.starts[w] = ^uint64(0)
			}
			break
		}
		w, b := gramBit(f)
		r.starts[w] |= b
	}
	return r
}

// redact takes every form of the secrets out of s. A secret may also come
// back in an encoding no form lists, since a provider may encode any of its
// characters: as HTML entities (decimal, hex or named: "Adv&#36;Secr3t"),
// or URL-encoded twice. So s is also decoded, a layer at a time, and when a
// secret shows in a decoded layer, that layer is what is kept, redacted.
func (r *redactor) redact(s string) string {
	out := r.redactForms(s)
	d := out
	for range 3 {
		next := html.UnescapeString(d)
		if u, err := url.QueryUnescape(next); err == nil {
			next = u
		}
		if next == d {
			break
		}
		d = next
		if red := r.redactForms(d); red != d {
			return red
		}
	}
	return out
}

// redactForms takes the forms of the secrets out of s.
func (r *redactor) redactForms(s string) string {
	for _, form := range r.forms {
		s = strings.ReplaceAll(s, form, redacted)
	}
	for _, core := range r.cores {
		if strings.Contains(s, core) {
			s = regexp.MustCompile(base64Run+regexp.QuoteMeta(core)+base64Run).ReplaceAllString(s, redacted)
		}
	}
	if !mayHoldAuth(s) {
		return s
	}
	return authValue.ReplaceAllStringFunc(s, func(m string) string {
		scheme, cred := splitAuth(m)
		if strings.Trim(cred, "abcdefghijklmnopqrstuvwxyz") == "" {
			return m // a word ("Basic authentication failed"), not a credential
		}
		return scheme + " " + redacted
	})
}

// Words is redact, and no phone number, no control characters, and not
// too long.
func (r *redactor) Words(s string) string {
	// Control characters go first: a secret split by one ("TOP\x00SECRET")
	// would pass the search and then be joined by taking them out. And
	// again after, since a layer redact decoded may hold some.
	s = r.redact(strings.Map(controlToSpace, s))
	s = phoneLike.ReplaceAllString(s, numberMask)
	return words.Clip(strings.Map(controlToSpace, s), 300)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func controlToSpace(r rune) rune {
	if isControl(r) {
		return ' '
	}
	return r
}

func dropControl(r rune) rune {
	if isControl(r) {
		return -1
	}
	return r
}

// ID is an id or a status word, "[redacted]" when it holds a secret,
// without control characters, not too long. The control characters are
// taken out before the secrets are looked for, as in Words.
func (r *redactor) ID(id string) string {
	id = strings.Map(dropControl, id)
	if r.mayHoldSecret(id) && r.redact(id) != id {
		return redacted
	}
	return words.Clip(id, 128)
}

const (
	redacted = "[redacted]"
	// minSecret is the shortest secret redacted: shorter text would blank
	// out ordinary words.
	minSecret = 4
	// base64Run is the rest of a run of base64 text around a secret's core.
	base64Run = `[A-Za-z0-9+/_=-]*`
)

// authValue is an Authorization header's value as a provider may echo it.
var authValue = regexp.MustCompile(`(?i)\b(basic|bearer)(\s+|%20|\+)[^\s"'<>,;}\]\\]+`)

// mayHoldAuth reports whether s holds "basic" or "bearer", in any case: a
// cheap look before authValue's.
func mayHoldAuth(s string) bool {
	for i := 0; i+5 <= len(s); i++ {
		if c := s[i] | 0x20; c == 'b' && (strings.EqualFold(s[i:i+5], "basic") || i+6 <= len(s) && strings.EqualFold(s[i:i+6], "bearer")) {
			return true
		}
	}
	return false
}

// splitAuth cuts a match of authValue into its scheme and credential.
func splitAuth(m string) (scheme, cred string) {
	for _, sep := range []string{"%20", "+", " ", "\t"} {
		if i := strings.Index(m, sep); i > 0 {
			return m[:i], strings.TrimLeft(m[i+len(sep):], " \t")
		}
	}
	return m, ""
}

// textForms are the ways a secret may be written as text: as is, URL
// query- and path-escaped, JSON-escaped.
func textForms(secret string) []string {
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}
	if b, err := json.Marshal(secret); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	return forms
}

// base64Cores are the parts of secret's base64 that appear whatever comes
// before it: base64 writes 3 bytes as 4 characters, so at each of the 3
// offsets a secret may start at, the groups made of its bytes alone are
// the same whatever surrounds them (id:secret, secret alone, padded or not),
// in either alphabet. A core shorter than 4 characters would match
// ordinary text and is left out.
func base64Cores(secret string) []string {
	var cores []string
	for skip := range 3 {
		if skip >= len(secret) {
			break
		}
		b := []byte(secret[skip:])
		b = b[:len(b)/3*3]
		if len(b) < 3 {
			continue
		}
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			core := enc.EncodeToString(b)
			if !slices.Contains(cores, core) {
				cores = append(cores, core)
			}
		}
	}
	return cores
}

// redactURL is a URL from the provider (a redirect's Location) as an
// error quotes it: its scheme, host and path, since its query or user
// information might carry something that should not be printed, and the
// path with what may be a phone number masked, since a provider may name
// the recipient in it (/send/%2B447700900123).
func redactURL(loc string) string {
	bare, ok := redact.Bare(loc)
	if !ok {
		return "an unparsable location"
	}
	head, path := splitHost(bare)
	return strconv.Quote(words.Clip(head+maskPathNumbers(path), 200))
}

// splitHost cuts bare, a URL as [redact.Bare] writes it, after its host:
// "https://sms.example.com:8443" and "/v2/send/…". The host is kept as it
// is, digits and all: it says where smsform was sent, and an address
// (127.0.0.1) must stay readable. A URL without a host ("tel:+44…",
// "/send/…") is path whole, and so is one whose host is not written as
// parsed: masking too much is the safe way.
func splitHost(bare string) (head, path string) {
	u, err := url.Parse(bare)
	if err != nil || u.Host == "" {
		return "", bare
	}
	i := strings.Index(bare, "//")
	if i < 0 || !strings.HasPrefix(bare[i+2:], u.Host) {
		return "", bare
	}
	end := i + 2 + len(u.Host)
	return bare[:end], bare[end:]
}

// pathNumber is what may be a phone number in a URL's path, once
// percent-decoded: 7 digits or more, maybe after a +, with up to 3
// separators between two of them ("+44 (0) 7700"). Unlike [phoneLike] it
// never runs across a slash, since segments are separate things, and it
// takes more digits, so that a version or a short id stays readable.
var pathNumber = regexp.MustCompile(`\+?[0-9](?:[ ().-]{0,3}[0-9]){6,}`)

// numberMask is what a masked phone number is written as.
const numberMask = "+[number]"

// maskPathNumbers is path, percent-encoded as a URL writes it, with each
// run [pathNumber] finds replaced by numberMask. The runs are looked for
// in the decoded path, so that "%2B447700900123" and
// "+44%207700%20900123" are found as surely as "+447700900123"; the rest of
// the path is left as it was written.
func maskPathNumbers(path string) string {
	decoded, at := percentDecode(path)
	runs := pathNumber.FindAllIndex(decoded, -1)
	if runs == nil {
		return path
	}
	var b strings.Builder
	last := 0
	for _, r := range runs {
		b.WriteString(path[at[last]:at[r[0]]])
		b.WriteString(numberMask)
		last = r[1]
	}
	b.WriteString(path[at[last]:])
	return b.String()
}

// percentDecode decodes s's %XX escapes, leaving a malformed one as it is
// written, and says where in s each byte of the result was written: at[i]
// for byte i, and at[len(decoded)] == len(s).
func percentDecode(s string) (decoded []byte, at []int) {
	decoded, at = make([]byte, 0, len(s)), make([]int, 0, len(s)+1)
	for i := 0; i < len(s); {
		at = append(at, i)
		if s[i] == '%' && i+2 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				decoded = append(decoded, byte(c))
				i += 3
				continue
			}
		}
		decoded = append(decoded, s[i])
		i++
	}
	return decoded, append(at, len(s))
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
	till, ok := parseValidTill(tr.ValidTill)
	if !ok {
		return Token{}, errors.New("token response has a malformed valid_till, want YYYY-MM-DD HH:MM:SS (UTC) or RFC 3339 (2006-01-02T15:04:05Z)")
	}
	return Token{Value: tr.AccessToken, ValidTill: till}, nil
}

// parseValidTill reads valid_till in the spec's form (YYYY-MM-DD HH:MM:SS,
// in UTC) or in RFC 3339 (a T or a space between date and time, Z or a
// numeric offset, fractions of a second), and returns it in UTC.
func parseValidTill(s string) (time.Time, bool) {
	if len(s) > 10 && (s[10] == 't' || s[10] == ' ') {
		s = s[:10] + "T" + s[11:] // RFC 3339 allows both, section 5.6
	}
	s = strings.Replace(s, "z", "Z", 1)
	// The spec's form has no zone: it is UTC. Go reads fractions of a
	// second after the seconds whether the layout writes them or not.
	for _, layout := range []string{"2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
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

// findRequestID takes the request id from a success body (valid JSON; nil
// when it was not JSON) when it can be found: at pointer when one is given,
// else in request_id, id or message_id, at the top or under data (an
// object, or the first of a list), or in the first element of a list. A
// body that holds no id has none: the provider took the request all the
// same.
func findRequestID(doc []byte, pointer *rawjson.Pointer) string {
	if doc == nil {
		return ""
	}
	if pointer != nil {
		v, err := pointer.Lookup(doc)
		if err != nil {
			return ""
		}
		return rawjson.Text(v)
	}
	doc = bytes.TrimSpace(doc)
	ids, data := idFields(doc)
	if id := firstID(ids); id != "" {
		return id
	}
	for _, scope := range [][]byte{data, first(data), first(doc)} {
		ids, _ := idFields(scope)
		if id := firstID(ids); id != "" {
			return id
		}
	}
	return ""
}

// firstID is the first of ids that is a string or a number, as text.
func firstID(ids [3][]byte) string {
	for _, v := range ids {
		if id := rawjson.Text(v); id != "" {
			return id
		}
	}
	return ""
}

// idFields is, in one pass over the JSON object obj, the values of its
// request_id, id and message_id, and of its data; none when obj is not an
// object.
func idFields(obj []byte) (ids [3][]byte, data []byte) {
	if len(obj) == 0 || obj[0] != '{' {
		return ids, nil
	}
	rawjson.Members(obj, func(k, v []byte) {
		for i, name := range []string{"request_id", "id", "message_id"} {
			if rawjson.KeyIs(k, name) {
				ids[i] = v
			}
		}
		if rawjson.KeyIs(k, "data") {
			data = v
		}
	})
	return ids, data
}

// first is the first element of the JSON array v, nil for anything else.
func first(v []byte) []byte {
	if len(v) == 0 || v[0] != '[' {
		return nil
	}
	el, _ := rawjson.Element(v, 0)
	return el
}
