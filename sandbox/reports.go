package sandbox

// Delivery reports and replies: after the send, a real provider tells the
// sender what became of each message (delivered or not) and passes on what
// recipients answered, by posting to the sender's webhook. It posts again
// what was not acknowledged with a 2xx, sometimes posts a report twice, and
// keeps no order. The sandbox does the same, so that a receiver can be
// tested for each of those, on loopback only.

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	randv2 "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/smsform/smsform/internal/loopback"
)

// Statuses of a delivery [Report].
const (
	ReportDelivered   = "DELIVERED"
	ReportUndelivered = "UNDELIVERED"
)

// StopText is the text of every reply the sandbox posts.
const StopText = "STOP"

// SignatureHeader carries each post's signature: the lowercase hex
// HMAC-SHA256 of the raw body under [Config.ReportsSecret] (see [Sign]).
const SignatureHeader = "X-Smsform-Signature"

// ReportsSecretEnv is the environment variable `smsform sandbox` reads the
// reports secret from when --reports-secret is not given.
const ReportsSecretEnv = "SMSFORM_SANDBOX_REPORTS_SECRET"

// ErrNoReportsSecret is returned by [Config.Check] and [New] for reports
// or replies without [Config.ReportsSecret]: every post is signed.
var ErrNoReportsSecret = errors.New("reports-to and replies-to need a reports secret")

// Report is the body of one delivery report: one message, one request.
type Report struct {
	MessageID string `json:"message_id"`
	To        string `json:"to"`     // E.164 with the +
	Status    string `json:"status"` // ReportDelivered or ReportUndelivered
	Reason    string `json:"reason"` // why it was not delivered; "" when delivered
	At        string `json:"at"`     // RFC 3339 UTC, milliseconds
}

// Reply is the body of one reply from a recipient: one reply, one request.
type Reply struct {
	From string `json:"from"` // E.164 with the +
	Text string `json:"text"`
	At   string `json:"at"`
}

// Callback is one report or reply the server posts, and what became of it.
type Callback struct {
	Kind      string  `json:"kind"` // "report" or "reply"
	Report    *Report `json:"report,omitempty"`
	Reply     *Reply  `json:"reply,omitempty"`
	Duplicate bool    `json:"duplicate"` // the second post of a report, body for body
	Attempts  int     `json:"attempts"`  // requests made so far
	// LastStatus is the HTTP status of the last attempt: 0 when none was
	// answered (refused, timed out, no attempt yet).
	LastStatus   int  `json:"last_status"`
	Acknowledged bool `json:"acknowledged"` // answered 2xx: never posted again
	// AcknowledgedAt is by the server's clock ([Config.Now]), as the
	// outbox's times are, so the two compare.
	AcknowledgedAt *time.Time `json:"acknowledged_at,omitempty"`
}

// ReportCounts sums up the callbacks of a server.
type ReportCounts struct {
	Reports    int `json:"reports"`    // reports made, duplicates included
	Duplicates int `json:"duplicates"` // of them, second posts
	Replies    int `json:"replies"`    // replies made
	// Acknowledged and Pending split the reports and replies made: answered
	// 2xx, or not (yet).
	Acknowledged int `json:"acknowledged"`
	Pending      int `json:"pending"`
	Attempts     int `json:"attempts"` // requests made, retries included
	// Delivered and Undelivered count messages whose report was
	// acknowledged (once, however many times it was posted): what a
	// receiver that recorded every report it acknowledged must hold.
	Delivered   int `json:"delivered"`
	Undelivered int `json:"undelivered"`
	Stops       int `json:"stops"` // STOP replies acknowledged
}

// Reports is what [ReportsPath] answers.
type Reports struct {
	Counts    ReportCounts `json:"counts"`
	Callbacks []Callback   `json:"callbacks"` // in the order made; none with Config.Forget
}

// Sign is the signature of a post's raw body under secret, as
// [SignatureHeader] carries it.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// reportTime is RFC 3339 in UTC with milliseconds: a report made within
// the second of its send still comes after it.
const reportTime = "2006-01-02T15:04:05.000Z07:00"

// maxBackoff is how many times ReportBackoff the wait between attempts
// grows to.
const maxBackoff = 20

// minHold is the least a reordered report or a duplicate may be held back,
// so that reports overtake each other even with no report delay.
const minHold = 500 * time.Millisecond

// undeliveredReasons are the reasons of undelivered reports, in the words
// carriers use.
var undeliveredReasons = []string{
	"Absent subscriber: the phone was off or out of coverage until the message expired",
	"Unknown subscriber: the number is not in use",
	"Blocked by the network",
	"Handset memory full",
}

// checkReports checks the report and reply settings of c.
func (c Config) checkReports() error {
	if c.ReportsTo == "" && c.UndeliveredRate != 0 {
		return errors.New("sandbox: --undelivered-rate needs --reports-to: only a report can say a message was not delivered")
	}
	if c.RepliesTo == "" && c.StopRate != 0 {
		return errors.New("sandbox: --stop-rate needs --replies-to, the URL the replies are posted to")
	}
	if c.ReportsTo == "" && c.RepliesTo == "" {
		return nil
	}
	for _, u := range []struct{ name, url string }{{"reports-to", c.ReportsTo}, {"replies-to", c.RepliesTo}} {
		if u.url != "" {
			if err := checkCallbackURL(u.name, u.url); err != nil {
				return err
			}
		}
	}
	if c.ReportsSecret == "" {
		return fmt.Errorf("sandbox: %w (--reports-secret, or %s): every post is signed with it, and a receiver refuses what is not", ErrNoReportsSecret, ReportsSecretEnv)
	}
	return nil
}

// checkCallbackURL checks that raw is an http URL on loopback, without
// credentials. It never repeats raw's query, which may hold a secret.
func checkCallbackURL(name, raw string) error {
	if strings.Contains(raw, "@") {
		return fmt.Errorf("sandbox: %s holds credentials before the host: the posts are signed with the reports secret instead", name)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("sandbox: %s is not an absolute http URL, such as http://127.0.0.1:8089/reports", name)
	}
	if !loopback.Host(u.Hostname()) {
		return fmt.Errorf("sandbox: refusing to post to %s %s://%s%s: %w; reports and replies carry phone numbers, so the sandbox posts them only to this machine",
			name, u.Scheme, u.Host, u.EscapedPath(), ErrNotLoopback)
	}
	return nil
}

// reporter posts the reports and replies of the messages a server acted on.
// A dispatcher hands each post to one of a fixed number of workers when it
// is due; a post not acknowledged goes back in the queue, due later.
type reporter struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{} // a post was queued: the dispatcher looks again
	work   chan *post
	once   sync.Once

	mu     sync.Mutex
	rng    *randv2.Rand // draws of the reports alone, so faults draw as before
	queue  postQueue
	all    []*post // every post made, in order; none with cfg.Forget
	counts ReportCounts
}

// post is one report or reply, with its own state of delivery.
type post struct {
	cb   Callback // guarded by reporter.mu
	url  string
	body []byte
	sig  string
	due  time.Time // by the monotonic clock: when to post (again)
	msg  *reported // shared by a report and its duplicate; nil for a reply
}

// reported is one message's report, whichever of its posts is acknowledged.
type reported struct{ acked bool }

func newReporter(cfg Config, log *slog.Logger) *reporter {
	if cfg.ReportBackoff == 0 {
		cfg.ReportBackoff = DefaultReportBackoff
	}
	if cfg.ReportConcurrency == 0 {
		cfg.ReportConcurrency = DefaultReportConcurrency
	}
	n := cfg.ReportConcurrency
	seed := uint64(cfg.Seed)
	r := &reporter{
		cfg: cfg,
		log: log,
		client: &http.Client{
			Timeout: 10 * time.Second,
			Transport: &http.Transport{
				Proxy:               nil, // loopback only, never through a proxy
				DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
				MaxIdleConns:        n,
				MaxIdleConnsPerHost: n,
				IdleConnTimeout:     30 * time.Second,
			},
			// A redirect could lead off loopback: it is not an
			// acknowledgement, so the post is made again later.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		wake: make(chan struct{}, 1),
		work: make(chan *post),
		rng:  randv2.New(randv2.NewPCG(seed^0x5851f42d4c957f2d, seed+0x14057b7ef767814f)),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.wg.Add(1 + n)
	go r.dispatch()
	for range n {
		go r.worker()
	}
	return r
}

// close stops the dispatcher and the workers and waits for them.
func (r *reporter) close() {
	if r == nil {
		return
	}
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
		r.client.CloseIdleConnections()
	})
}

// schedule makes the report and the reply, if any, of each message, with
// the seeded draws, in the order of msgs.
func (r *reporter) schedule(msgs []Message) {
	if r == nil || len(msgs) == 0 {
		return
	}
	start := time.Now().Add(r.cfg.ReportDelay)
	hold := max(r.cfg.ReportDelay, minHold)
	r.mu.Lock()
	for _, m := range msgs {
		r.makePosts(m, start, hold)
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// makePosts draws the fate of one message's report and reply and queues them.
// Every message takes the same number of draws, so a seed gives the same
// fates whichever settings are on. r.mu is held.
func (r *reporter) makePosts(m Message, start time.Time, hold time.Duration) {
	c := r.cfg
	undelivered := r.rng.Float64() < c.UndeliveredRate
	reason := undeliveredReasons[r.rng.IntN(len(undeliveredReasons))]
	duplicate := r.rng.Float64() < c.DuplicateRate
	reordered := r.rng.Float64() < c.ReorderRate
	held := time.Duration(r.rng.Float64() * float64(hold))
	again := time.Duration(r.rng.Float64() * float64(hold))
	stop := r.rng.Float64() < c.StopRate

	at := m.At.Add(c.ReportDelay).UTC().Format(reportTime)
	if c.ReportsTo != "" {
		rep := &Report{MessageID: m.MessageID, To: m.To, Status: ReportDelivered, At: at}
		if undelivered {
			rep.Status, rep.Reason = ReportUndelivered, reason
		}
		due := start
		if reordered {
			due = due.Add(held)
		}
		shared := &reported{}
		r.add(&post{cb: Callback{Kind: "report", Report: rep}, url: c.ReportsTo, due: due, msg: shared}, rep)
		if duplicate {
			r.add(&post{cb: Callback{Kind: "report", Report: rep, Duplicate: true}, url: c.ReportsTo, due: due.Add(again), msg: shared}, rep)
		}
	}
	// Only a recipient the message reached can answer it.
	if c.RepliesTo != "" && stop && !undelivered {
		rep := &Reply{From: m.To, Text: StopText, At: at}
		r.add(&post{cb: Callback{Kind: "reply", Reply: rep}, url: c.RepliesTo, due: start}, rep)
	}
}

// add signs p's body and queues it. r.mu is held.
func (r *reporter) add(p *post, body any) {
	b, _ := json.Marshal(body) // strings only: it cannot fail
	p.body, p.sig = b, Sign(r.cfg.ReportsSecret, b)
	switch {
	case p.cb.Kind == "reply":
		r.counts.Replies++
	case p.cb.Duplicate:
		r.counts.Reports++
		r.counts.Duplicates++
	default:
		r.counts.Reports++
	}
	r.counts.Pending++
	if !r.cfg.Forget {
		r.all = append(r.all, p)
	}
	heap.Push(&r.queue, p)
}

// dispatch hands each post to a worker once it is due, until close.
func (r *reporter) dispatch() {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p, wait := r.next()
		if p != nil {
			select {
			case r.work <- p:
				continue
			case <-r.ctx.Done():
				return
			}
		}
		timer.Reset(wait)
		select {
		case <-r.ctx.Done():
			return
		case <-r.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// next pops the first post if it is due, or says how long until it is (an
// hour when nothing is queued: a new post wakes the dispatcher).
func (r *reporter) next() (*post, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		return nil, time.Hour
	}
	if wait := time.Until(r.queue[0].due); wait > 0 {
		return nil, wait
	}
	return heap.Pop(&r.queue).(*post), 0
}

func (r *reporter) worker() {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case p := <-r.work:
			status, err := r.send(p)
			if err != nil && r.ctx.Err() != nil {
				return // stopping: an attempt cut short is no answer
			}
			r.done(p, status, err)
		}
	}
}

// send posts p once and returns the status it was answered.
func (r *reporter) send(p *post) (int, error) {
	req, err := http.NewRequestWithContext(r.ctx, http.MethodPost, p.url, bytes.NewReader(p.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "smsform-sandbox")
	req.Header.Set(SignatureHeader, p.sig)
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is reused
	return resp.StatusCode, nil
}

// done records an attempt's answer; a post not acknowledged is queued
// again after the backoff.
func (r *reporter) done(p *post, status int, err error) {
	acked := err == nil && status >= 200 && status <= 299
	r.mu.Lock()
	p.cb.Attempts++
	p.cb.LastStatus = status
	r.counts.Attempts++
	attempt := p.cb.Attempts
	if acked {
		r.acknowledge(p)
	} else {
		p.due = time.Now().Add(r.cfg.ReportBackoff * time.Duration(min(1<<min(attempt-1, 5), maxBackoff)))
		heap.Push(&r.queue, p)
	}
	r.mu.Unlock()
	if !acked {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	r.logAttempt(p, attempt, status, err)
}

// acknowledge counts p acknowledged. r.mu is held.
func (r *reporter) acknowledge(p *post) {
	at := r.cfg.Now().UTC()
	p.cb.Acknowledged, p.cb.AcknowledgedAt = true, &at
	r.counts.Acknowledged++
	r.counts.Pending--
	switch {
	case p.msg == nil:
		r.counts.Stops++
	case !p.msg.acked:
		p.msg.acked = true
		if p.cb.Report.Status == ReportDelivered {
			r.counts.Delivered++
		} else {
			r.counts.Undelivered++
		}
	}
}

// logAttempt logs one attempt: the kind, the message id of a report, and
// the answer; never a number, the body, the URL (its query may hold a
// secret) or the signature.
func (r *reporter) logAttempt(p *post, attempt, status int, err error) {
	attrs := []any{"kind", p.cb.Kind, "attempt", attempt, "status", status}
	if p.cb.Report != nil {
		attrs = append(attrs, "message_id", p.cb.Report.MessageID)
	}
	if p.cb.Duplicate {
		attrs = append(attrs, "duplicate", true)
	}
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		attrs = append(attrs, "error", err.Error())
	}
	r.log.Info("callback", attrs...)
}

// Reports returns a copy of what the server posted and its counts.
func (s *Server) Reports() Reports {
	r := s.reports
	if r == nil {
		return Reports{Callbacks: []Callback{}}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := Reports{Counts: r.counts, Callbacks: make([]Callback, len(r.all))}
	for i, p := range r.all {
		out.Callbacks[i] = p.cb
		if p.cb.AcknowledgedAt != nil {
			at := *p.cb.AcknowledgedAt
			out.Callbacks[i].AcknowledgedAt = &at
		}
	}
	return out
}

// postQueue is a min-heap of posts by when they are due.
type postQueue []*post

func (q postQueue) Len() int           { return len(q) }
func (q postQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q postQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *postQueue) Push(x any)        { *q = append(*q, x.(*post)) }
func (q *postQueue) Pop() any {
	old := *q
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return p
}
