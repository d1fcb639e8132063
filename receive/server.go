package receive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/state"
)

// The paths a provider posts to, and the one a load balancer asks.
const (
	ReportsPath = "/reports"
	RepliesPath = "/replies"
	HealthPath  = "/healthz"
)

// DefaultAddr is where `smsform receive` listens unless told: this
// machine only, behind a TLS proxy that the provider reaches.
const DefaultAddr = "127.0.0.1:8089"

// ShutdownGrace is how long a stopping server lets the requests in hand
// finish. What is cut off after it was never acknowledged: the provider
// posts it again.
const ShutdownGrace = 30 * time.Second

// Recorder makes reports and replies durable: [state.Receiver] does.
// Record returns nil only once everything given is durable, and an error
// only when nothing of it was recorded.
type Recorder interface {
	Record(ctx context.Context, reports []state.Report, replies []state.Reply) (state.Recorded, error)
}

// Config is what a Server serves.
type Config struct {
	Reports *mapping.Reports // nil: the project maps no reports, and POST /reports is 404
	Replies *mapping.Replies // nil: likewise for replies
	Auth    Auth
	Record  Recorder
	Log     *slog.Logger // one line per request; nil: none
}

// Server serves the provider's posts: see the package's contract.
type Server struct {
	cfg   Config
	log   *slog.Logger
	stats Stats
}

// Stats counts what a Server took.
type Stats struct {
	Requests, Refused                       atomic.Int64 // answered; of them, not 2xx
	Reports, Replies, Duplicates, Unmatched atomic.Int64
}

// New checks cfg and makes a Server of it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Auth.Check(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Reports == nil && cfg.Replies == nil:
		return nil, errors.New("nothing to receive: the project maps no reports and no replies")
	case cfg.Record == nil:
		return nil, errors.New("nowhere to record reports")
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, log: log}, nil
}

// Stats is what s took so far.
func (s *Server) Stats() *Stats { return &s.stats }

// Serve serves s on ln until ctx is cancelled, then stops taking requests
// and lets those in hand finish (for at most ShutdownGrace). It returns nil
// once stopped that way.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second, // a bounded body, read whole before anything is done with it
		WriteTimeout:      60 * time.Second, // recording waits for a commit, grouped with others
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	err := hs.Shutdown(stop)
	<-served
	if err != nil {
		hs.Close()
		s.log.Warn("stopped with requests unanswered; the provider posts them again", "err", err)
	}
	return nil
}

// ServeHTTP answers one request, and logs it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	a := &answer{ResponseWriter: w}
	switch r.URL.Path {
	case HealthPath:
		a.text(http.StatusOK, "ok")
	case ReportsPath:
		s.post(a, r, s.cfg.Reports != nil, s.reports)
	case RepliesPath:
		s.post(a, r, s.cfg.Replies != nil, s.replies)
	default:
		a.text(http.StatusNotFound, "not found: post reports to "+ReportsPath+" and replies to "+RepliesPath)
	}
	s.stats.Requests.Add(1)
	if a.status >= 300 {
		s.stats.Refused.Add(1)
	}
	// The path, never the URL: a query may hold the secret. A path is
	// anyone's to write (/+447400123456): what may be a number is masked.
	attrs := []any{"method", r.Method, "path", words.Clip(e164.MaskAny(r.URL.Path), 200), "status", a.status, "ms", time.Since(start).Milliseconds()}
	if a.recorded != nil {
		attrs = append(attrs, a.recorded...)
	}
	if a.why != "" {
		attrs = append(attrs, "why", e164.MaskAny(a.why))
	}
	s.log.Info("request", attrs...)
}

// post takes a post of reports or replies: authenticated, bounded, read
// whole, then recorded by record, which answers.
func (s *Server) post(a *answer, r *http.Request, mapped bool, record func(*answer, *http.Request, []byte)) {
	auth := s.cfg.Auth
	switch {
	case r.Method != http.MethodPost:
		a.Header().Set("Allow", http.MethodPost)
		a.text(http.StatusMethodNotAllowed, "post it")
		return
	case !mapped:
		a.text(http.StatusNotFound, "the project file maps none of these (provider.reports, provider.replies)")
		return
	case !auth.signsBody() && !auth.Valid(r, nil):
		a.unauthorized(auth)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(a, r.Body, mapping.MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		a.refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", mapping.MaxBody))
		return
	case err != nil:
		a.refuse(http.StatusBadRequest, "the body could not be read")
		return
	case auth.signsBody() && !auth.Valid(r, body):
		a.unauthorized(auth)
		return
	}
	doc, err := mapping.Doc(r.Header.Get("Content-Type"), body)
	if err != nil {
		a.refuse(http.StatusBadRequest, err.Error())
		return
	}
	record(a, r, doc)
}

// reports records the reports of doc.
func (s *Server) reports(a *answer, r *http.Request, doc []byte) {
	rs, err := s.cfg.Reports.Read(doc, cleaner{})
	if err != nil {
		a.unreadable(err)
		return
	}
	rec, err := s.cfg.Record.Record(r.Context(), stateReports(rs, s.cfg.Reports.DefaultRegion), nil)
	if err != nil {
		a.unrecorded(s.log, err)
		return
	}
	var dup, unmatched, resolved, anomalies int
	for _, x := range rec.Reports {
		switch {
		case x.Duplicate:
			dup++
		case x.Unmatched != "":
			unmatched++
		}
		if x.Resolved {
			resolved++
		}
		if x.Anomaly != "" {
			anomalies++
		}
	}
	s.stats.Reports.Add(int64(len(rs)))
	s.stats.Duplicates.Add(int64(dup))
	s.stats.Unmatched.Add(int64(unmatched))
	a.recorded = []any{"reports", len(rs), "duplicates", dup, "unmatched", unmatched, "resolved", resolved, "anomalies", anomalies}
	a.json(map[string]int{"reports": len(rs), "duplicates": dup, "unmatched": unmatched, "resolved": resolved, "anomalies": anomalies})
}

// replies records the replies of doc.
func (s *Server) replies(a *answer, r *http.Request, doc []byte) {
	rs, err := s.cfg.Replies.Read(doc, cleaner{})
	var replies []state.Reply
	if err == nil {
		replies, err = stateReplies(rs, s.cfg.Replies)
	}
	if err != nil {
		a.unreadable(err)
		return
	}
	rec, err := s.cfg.Record.Record(r.Context(), nil, replies)
	if err != nil {
		a.unrecorded(s.log, err)
		return
	}
	kinds := map[string]int{}
	dup := 0
	for _, x := range rec.Replies {
		if x.Duplicate {
			dup++
			continue
		}
		kinds[x.Kind]++
	}
	s.stats.Replies.Add(int64(len(rs)))
	s.stats.Duplicates.Add(int64(dup))
	a.recorded = []any{"replies", len(rs), "duplicates", dup, "stops", kinds["stop"], "starts", kinds["start"]}
	a.json(map[string]int{"replies": len(rs), "duplicates": dup, "stops": kinds["stop"], "starts": kinds["start"], "others": kinds["other"]})
}

// answer is the response being written, and what the log line says of it.
type answer struct {
	http.ResponseWriter
	status   int
	why      string // why a post was refused
	recorded []any  // what was recorded, for the log
}

func (a *answer) text(status int, msg string) {
	a.status = status
	a.Header().Set("Content-Type", "text/plain; charset=utf-8")
	a.Header().Set("X-Content-Type-Options", "nosniff")
	a.WriteHeader(status)
	io.WriteString(a, msg+"\n")
}

func (a *answer) json(v any) {
	a.status = http.StatusOK
	a.Header().Set("Content-Type", "application/json")
	a.WriteHeader(http.StatusOK)
	json.NewEncoder(a).Encode(v)
}

// refuse answers a post that was not recorded, and says why.
func (a *answer) refuse(status int, why string) {
	a.why = why
	a.text(status, "not recorded: "+why)
}

func (a *answer) unauthorized(auth Auth) {
	if c := auth.challenge(); c != "" {
		a.Header().Set("WWW-Authenticate", c)
	}
	a.refuse(http.StatusUnauthorized, "not authenticated")
}

// unreadable refuses a body the mapping cannot read: whole, since a
// provider posts a body again whole.
func (a *answer) unreadable(err error) {
	status := http.StatusBadRequest
	if errors.Is(err, mapping.ErrTooMany) {
		status = http.StatusRequestEntityTooLarge
	}
	a.refuse(status, err.Error())
}

// unrecorded answers a post the state did not take: 503, so that the
// provider posts it again.
func (a *answer) unrecorded(log *slog.Logger, err error) {
	log.Error("recording failed", "err", e164.MaskAny(err.Error())) // a database's words may quote a row
	a.Header().Set("Retry-After", strconv.Itoa(5))
	a.refuse(http.StatusServiceUnavailable, "the state could not record it; post it again")
}
