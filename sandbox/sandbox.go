// Package sandbox serves the messaging API (docs/messaging-api.md)
// on loopback as a strict provider would, for demos, tests and CI.
//
// A [Server] issues random expiring tokens, checks every request against
// the rules of the API (see api/openapi.yaml), records each accepted
// recipient as a [Message] in its outbox before it answers, and can inject
// the faults a client must survive: refusals (503), rate limiting (429),
// accepted-then-dropped connections, accepted-then-500, latency and short
// token lifetimes. Faults are drawn from a generator seeded by
// [Config.Seed], one draw per authenticated send request, so a sequential
// test sees the same faults on every run.
//
// Every recipient accepted gets a message id, unique across servers (a
// random prefix per [Server], then a count), which the answer and the outbox
// carry. With [Config.ReportsTo] or [Config.RepliesTo] set, the server also
// posts a signed delivery report for each message it acted on, and STOP
// replies from some recipients, as providers do after a send (reports.go);
// [Server.Close] stops them, and [Server.Reports] says what became of each.
//
// The server's log never holds a secret, a whole token or a phone number.
package sandbox

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	randv2 "math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/smsform/smsform/api"
)

// MessagesPath lists the outbox as a JSON array of [Message]. It is an
// admin path, outside the API's /api/v1. Its answer holds phone numbers, so
// it asks for the client credentials, as the token endpoint does (Basic
// auth, RFC 7617 base64 or the literal id:secret).
const MessagesPath = "/sandbox/messages"

// ReportsPath lists the delivery reports and replies the server made, and
// what became of each, as [Reports]. It asks for the client credentials, as
// [MessagesPath] does: the reports hold phone numbers.
const ReportsPath = "/sandbox/reports"

// Defaults of [Config].
const (
	DefaultMaxRecipients = 1000
	DefaultMaxBody       = 1600

	DefaultReportBackoff     = 500 * time.Millisecond
	DefaultReportConcurrency = 8
)

// Config sets up a [Server]. Only ClientID and ClientSecret are required.
type Config struct {
	ClientID, ClientSecret string

	// Outbox, when set, receives one JSON line per recipient of every
	// accepted request; the lines of a request are written in one Write
	// (and flushed, if Outbox has Flush() error) before the response. The
	// caller opens it, e.g. with os.O_APPEND|os.O_CREATE|os.O_WRONLY.
	Outbox io.Writer
	// Forget keeps no message in memory, only the counts (and the Outbox
	// file, if any): for load tests of millions of messages, where the
	// outbox in memory would make the sandbox the bottleneck. Messages and
	// the messages endpoint then list nothing.
	Forget bool

	MaxRecipients int // per request; 0 means DefaultMaxRecipients
	MaxBody       int // characters; 0 means DefaultMaxBody

	// Fault probabilities per authenticated send request, 0 to 1, summing
	// to at most 1.
	FailRate      float64 // 503 with Retry-After: 1, without acting
	AmbiguousRate float64 // act, then close the connection without a response
	ErrorRate     float64 // act, then answer 500
	RateLimit     int     // send requests per second beyond which 429; 0: none
	// Shares of the recipients of an accepted request, 0 to 1, summing to
	// at most 1, drawn one by one from the seed: refused (REJECTED) or
	// throttled (THROTTLED) inside the 2xx, and not delivered. Only the
	// per-recipient answer (SuccessBody "results") can say so.
	RejectRate   float64
	ThrottleRate float64
	// DedupeWindow, when set, answers 409 duplicate_request, without
	// acting, to a request with the same sender, body and recipients as one
	// acted on less than DedupeWindow before.
	DedupeWindow time.Duration
	Latency      time.Duration // delay before each API response
	TokenTTL     time.Duration // token lifetime; 0: valid_hour hours
	Seed         int64         // seeds the fault draws

	// How the server answers, so that clients are tested against the shapes
	// real providers use where the spec leaves them open. The zero values
	// are the sandbox's own shapes.
	SuccessBody   string // "sandbox" (request_id, accepted, segments, messages: [api.SandboxSendResponse]), "minimal" ({"message_id"}), "empty" (no body), "results" (per recipient: [api.SandboxResultsResponse])
	SuccessStatus int    // of an accepted send: 200 (default), 201, 202 or 204 (no body)
	ErrorBody     string // "json" ({"error":{"code","message"}}), "oauth" ({"error","error_description"}), "text"
	Basic         string // Basic forms the token endpoint takes: "both" (default), "base64" or "literal"

	// Delivery reports and replies, posted after the send as providers do
	// (see reports.go). ReportsTo and RepliesTo are http URLs on loopback;
	// either needs ReportsSecret, the key of each post's signature.
	ReportsTo     string // one report per message acted on is posted here
	RepliesTo     string // STOP replies are posted here
	ReportsSecret string
	ReportDelay   time.Duration // from accepting a message to its report; 0: at once
	// Shares, 0 to 1, drawn from the seed: reports UNDELIVERED (the rest
	// DELIVERED), reports posted twice, reports held back so that later
	// ones overtake them, and DELIVERED recipients who reply STOP.
	UndeliveredRate float64
	DuplicateRate   float64
	ReorderRate     float64
	StopRate        float64
	// ReportBackoff is the wait before posting again what was not
	// acknowledged with a 2xx, doubled each time up to 20 times itself;
	// 0: DefaultReportBackoff.
	ReportBackoff time.Duration
	// ReportConcurrency bounds the posts in flight at once; 0:
	// DefaultReportConcurrency.
	ReportConcurrency int

	Now func() time.Time // nil: time.Now
	Log *slog.Logger     // nil: no log
}

// Shapes are the values the answer-shape settings of [Config] take, first
// the default; [Config.Check] refuses others.
var Shapes = map[string][]string{
	"success-body":   {"sandbox", "minimal", "empty", "results"},
	"success-status": {"200", "201", "202", "204"},
	"error-body":     {"json", "oauth", "text"},
	"basic":          {"both", "base64", "literal"},
}

// Check refuses answer-shape settings the sandbox does not know.
func (c Config) Check() error {
	for name, v := range map[string]string{"success-body": c.SuccessBody, "success-status": strconv.Itoa(c.SuccessStatus),
		"error-body": c.ErrorBody, "basic": c.Basic} {
		if v != "" && v != "0" && !slices.Contains(Shapes[name], v) {
			return fmt.Errorf("sandbox: %s %q is not one of %s", name, v, strings.Join(Shapes[name], ", "))
		}
	}
	if (c.RejectRate != 0 || c.ThrottleRate != 0) && c.SuccessBody != "results" {
		return errors.New("sandbox: --reject-rate and --throttle-rate need --success-body results: no other answer can say which recipients were refused")
	}
	return c.checkReports()
}

// Message is one recipient of an accepted request, as the outbox records it.
type Message struct {
	RequestID string    `json:"request_id"`
	MessageID string    `json:"message_id"`
	To        string    `json:"to"`
	From      string    `json:"from"`
	Body      string    `json:"body"`
	At        time.Time `json:"at"`
}

// Stats counts what the server has answered.
type Stats struct {
	TokenRequests int         // requests to the token endpoint
	SendRequests  int         // requests to the send endpoint
	Status        map[int]int // responses by status, all endpoints
	Dropped       int         // connections closed without a response (ambiguous faults)
	Accepted      int         // send requests acted on (recorded in the outbox)
	Messages      int         // recipients recorded in the outbox: delivered
	Rejected      int         // recipients refused inside a 2xx (RejectRate)
	Throttled     int         // recipients throttled inside a 2xx (ThrottleRate)
	Duplicates    int         // send requests answered 409 (DedupeWindow)
}

// Server is the sandbox API. It is safe for concurrent use.
type Server struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	rng      *randv2.Rand
	tokens   map[string]time.Time   // token → expiry
	seen     map[[32]byte]time.Time // dedupe key → when acted on
	outbox   []Message
	stats    Stats
	window   int64 // the second RateLimit counts in (Unix seconds)
	inWindow int

	idPrefix string // of every message id this server gives
	lastID   uint64 // the count in the last message id given

	reports *reporter // nil: no reports or replies to post
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("sandbox: client id and client secret are required")
	}
	if cfg.MaxRecipients == 0 {
		cfg.MaxRecipients = DefaultMaxRecipients
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxRecipients < 0 || cfg.MaxBody < 0 || cfg.RateLimit < 0 || cfg.Latency < 0 || cfg.TokenTTL < 0 {
		return nil, errors.New("sandbox: limits, latency and token TTL must not be negative")
	}
	for _, r := range []struct {
		name string
		p    float64
	}{{"fail rate", cfg.FailRate}, {"ambiguous rate", cfg.AmbiguousRate}, {"error rate", cfg.ErrorRate},
		{"reject rate", cfg.RejectRate}, {"throttle rate", cfg.ThrottleRate},
		{"undelivered rate", cfg.UndeliveredRate}, {"duplicate rate", cfg.DuplicateRate},
		{"reorder rate", cfg.ReorderRate}, {"stop rate", cfg.StopRate}} {
		if !(r.p >= 0 && r.p <= 1) {
			return nil, fmt.Errorf("sandbox: %s %v is not between 0 and 1", r.name, r.p)
		}
	}
	if sum := cfg.FailRate + cfg.AmbiguousRate + cfg.ErrorRate; sum > 1+1e-9 {
		return nil, fmt.Errorf("sandbox: fault rates add up to %v, more than 1", sum)
	}
	if sum := cfg.RejectRate + cfg.ThrottleRate; sum > 1+1e-9 {
		return nil, fmt.Errorf("sandbox: reject and throttle rates add up to %v, more than 1", sum)
	}
	if cfg.DedupeWindow < 0 || cfg.ReportDelay < 0 || cfg.ReportBackoff < 0 || cfg.ReportConcurrency < 0 {
		return nil, errors.New("sandbox: the dedupe window, report delay, report backoff and report concurrency must not be negative")
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	seed := uint64(cfg.Seed)
	s := &Server{
		cfg:      cfg,
		log:      log,
		rng:      randv2.New(randv2.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		tokens:   make(map[string]time.Time),
		seen:     make(map[[32]byte]time.Time),
		stats:    Stats{Status: make(map[int]int)},
		idPrefix: "msg_" + rand.Text()[:10] + "-",
	}
	if cfg.ReportsTo != "" || cfg.RepliesTo != "" {
		s.reports = newReporter(cfg, log)
	}
	return s, nil
}

// Close stops posting reports and replies: those in flight are cancelled,
// those not yet acknowledged are never posted again. The server still
// answers requests. It is safe to call more than once.
func (s *Server) Close() {
	s.reports.close()
}

// messageIDs returns n new message ids. A random prefix per server makes
// them unique across restarts; the count, across this server's life.
func (s *Server) messageIDs(n int) []string {
	s.mu.Lock()
	first := s.lastID + 1
	s.lastID += uint64(n)
	s.mu.Unlock()
	// One string holds them all, so a request of a thousand recipients
	// costs three allocations, not two thousand.
	buf := make([]byte, 0, n*(len(s.idPrefix)+8))
	ends := make([]int, n)
	for i := range ends {
		buf = append(buf, s.idPrefix...)
		buf = strconv.AppendUint(buf, first+uint64(i), 10)
		ends[i] = len(buf)
	}
	all, ids, start := string(buf), make([]string, n), 0
	for i, end := range ends {
		ids[i], start = all[start:end], end
	}
	return ids
}

// Messages returns a copy of the outbox of this server's lifetime.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.outbox))
	copy(out, s.outbox)
	return out
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Status = make(map[int]int, len(s.stats.Status))
	for k, v := range s.stats.Status {
		st.Status[k] = v
	}
	return st
}

// ServeHTTP routes the API and the admin path. Every error, 404 and 405
// included, has the JSON error body of [api.ErrorResponse].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rw := &recorder{ResponseWriter: w, s: s}
	start := time.Now()
	var ev event
	switch r.URL.Path {
	case api.TokenPath:
		s.count(func(st *Stats) { st.TokenRequests++ })
		if s.allow(rw, r, http.MethodPost) {
			ev = s.handleToken(rw, r)
		}
	case api.SendPath:
		s.count(func(st *Stats) { st.SendRequests++ })
		if s.allow(rw, r, http.MethodPost) {
			ev = s.handleSend(rw, r)
		}
	case MessagesPath:
		if s.allow(rw, r, http.MethodGet) {
			ev = s.handleMessages(rw, r)
		}
	case ReportsPath:
		if s.allow(rw, r, http.MethodGet) {
			ev = s.handleReports(rw, r)
		}
	default:
		api.WriteError(rw, http.StatusNotFound, api.CodeNotFound, "no such endpoint")
	}
	status := rw.status
	if ev.dropped {
		status = 0
	}
	attrs := []any{"method", r.Method, "path", r.URL.Path, "status", status, "duration", time.Since(start).Round(time.Microsecond)}
	if ev.token != "" {
		attrs = append(attrs, "token", tokenPrefix(ev.token))
	}
	if ev.code != "" {
		attrs = append(attrs, "code", ev.code)
	}
	if ev.requestID != "" {
		attrs = append(attrs, "request_id", ev.requestID, "recipients", ev.recipients)
	}
	if ev.fault != "" {
		attrs = append(attrs, "fault", ev.fault)
	}
	s.log.Info("request", attrs...)
}

// event is what one request did, for the log: never a secret, a whole
// token or a phone number.
type event struct {
	token      string // logged as a prefix only
	code       string
	requestID  string
	recipients int
	fault      string
	dropped    bool
}

func (s *Server) allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	api.WriteError(w, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, "use "+method)
	return false
}

func (s *Server) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// delay waits cfg.Latency before an API response, or until the client
// gives up.
func (s *Server) delay(r *http.Request) {
	if s.cfg.Latency <= 0 {
		return
	}
	t := time.NewTimer(s.cfg.Latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// fail writes an error response after the configured latency.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, ev *event, status int, code, message string) event {
	s.delay(r)
	ev.code = code
	s.writeError(w, status, code, message)
	return *ev
}

// writeError writes an error in the configured shape.
func (s *Server) writeError(w http.ResponseWriter, status int, code, message string) {
	switch s.cfg.ErrorBody {
	case "oauth":
		api.WriteJSON(w, status, map[string]string{"error": code, "error_description": message})
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, "%s: %s\n", code, message)
	default:
		api.WriteError(w, status, code, message)
	}
}

// tokenPrefix shows enough of a token to tell two apart in a log.
func tokenPrefix(tok string) string {
	if len(tok) > 8 {
		return tok[:8] + "…"
	}
	return "…"
}

// newID returns prefix and 130 random bits.
func newID(prefix string) string { return prefix + rand.Text() }

// recorder remembers the status written and counts it before the client
// can see it, so that Stats agrees with every answer a client has had.
type recorder struct {
	http.ResponseWriter
	s      *Server
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		r.s.count(func(st *Stats) { st.Status[code]++ })
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection to hijack it.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
