package campaign

import (
	"slices"
	"strings"
	"time"

	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/words"
	"gopkg.in/yaml.v3"
)

// Provider is where and how the messaging API is reached, and what the
// spec leaves open about it. A campaign's provider block is laid over the
// project file's, key by key. Secrets never live here: they come from the
// environment.
type Provider struct {
	BaseURL         string // may be overridden by SMSFORM_BASE_URL (the CLI does that)
	BasicAuth       string // "auto" (base64, then literal once on a 401), "base64" (RFC 7617) or "literal"
	TokenValidHours int    // 1..168, default 24
	// RequestIDField points to the provider's id for the whole request in
	// a send's success body (batch_id, or its older name
	// request_id_field); nil looks in the usual places.
	RequestIDField *rawjson.Pointer
	// MaxRecipients is the most recipients one request may carry; 0: no
	// limit but the campaign's batch_size.
	MaxRecipients int
	// MaxBodyLength is the longest body the provider takes, in
	// characters; 0: no limit.
	MaxBodyLength int
	// ExpectedLatency is how long the provider takes to answer a send,
	// for plan's estimate until apply has measured it (default 200 ms).
	ExpectedLatency time.Duration
	// Results, when set, says how a send's answer lists each recipient
	// (results, with others).
	Results *mapping.Results
}

// DefaultExpectedLatency is provider.expected_latency unless set.
const DefaultExpectedLatency = 200 * time.Millisecond

var (
	providerKeys = []string{"base_url", "basic_auth", "token_valid_hours", "request_id_field", "batch_id", "max_recipients", "max_body_length",
		"expected_latency", "results", "others"}
)

// rawProvider is a provider block as written; set holds the keys it
// writes, so that a campaign's block overrides a project's key by key.
type rawProvider struct {
	BaseURL         string
	BasicAuth       string
	TokenValidHours int
	RequestIDField  *rawjson.Pointer
	MaxRecipients   int
	MaxBodyLength   int
	ExpectedLatency time.Duration
	Results         *mapping.Results
	Others          mapping.Outcome // 0: not written (in doubt)

	set []string
}

func defaultProvider() rawProvider {
	return rawProvider{BasicAuth: "auto", TokenValidHours: 24, ExpectedLatency: DefaultExpectedLatency}
}

// overlay sets in dst every key p writes.
func (p *rawProvider) overlay(dst *rawProvider) {
	for _, key := range p.set {
		switch key {
		case "base_url":
			dst.BaseURL = p.BaseURL
		case "basic_auth":
			dst.BasicAuth = p.BasicAuth
		case "token_valid_hours":
			dst.TokenValidHours = p.TokenValidHours
		case "request_id_field", "batch_id":
			dst.RequestIDField = p.RequestIDField
		case "max_recipients":
			dst.MaxRecipients = p.MaxRecipients
		case "max_body_length":
			dst.MaxBodyLength = p.MaxBodyLength
		case "expected_latency":
			dst.ExpectedLatency = p.ExpectedLatency
		case "results":
			dst.Results = p.Results
		case "others":
			dst.Others = p.Others
		}
	}
}

func (p *rawProvider) provider() Provider {
	r := p.Results
	if r != nil && p.Others != 0 {
		withOthers := *r // a project's results are shared: never changed in place
		withOthers.Others = p.Others
		r = &withOthers
	}
	return Provider{BaseURL: p.BaseURL, BasicAuth: p.BasicAuth, TokenValidHours: p.TokenValidHours, RequestIDField: p.RequestIDField,
		MaxRecipients: p.MaxRecipients, MaxBodyLength: p.MaxBodyLength, ExpectedLatency: p.ExpectedLatency, Results: r}
}

// checkOthers refuses others: sent without results: with no list to name
// the refused, it would record every recipient sent on any 2xx.
func (l *loader) checkOthers(p *rawProvider, path string) {
	if p.Others == mapping.Sent && p.Results == nil && slices.Contains(p.set, "others") {
		l.add(l.lines[join(path, "others")], join(path, "others"), "add results: the lists in which the provider names recipients (its refusals, at least)",
			"others: sent needs results")
	}
}

// provider reads a campaign's provider block into p. The keys only a
// project's block has are refused with where they go (receive.go).
func (l *loader) provider(v *yaml.Node, path string, p *rawProvider) {
	l.mapping(l.withoutProjectKeys(v, path), path, providerKeys, func(key, path string, v *yaml.Node) bool {
		l.providerKey(key, path, v, p)
		return true
	})
}

// providerKey reads the value v of the provider block's key into p.
func (l *loader) providerKey(key, path string, v *yaml.Node, p *rawProvider) {
	p.set = append(p.set, key)
	switch key {
	case "base_url":
		l.str(v, path, &p.BaseURL)
	case "basic_auth":
		l.str(v, path, &p.BasicAuth)
	case "token_valid_hours":
		l.int(v, path, &p.TokenValidHours)
	case "request_id_field", "batch_id":
		if p.RequestIDField != nil {
			l.add(v.Line, path, "keep batch_id: request_id_field is its older name", "batch_id and request_id_field name the same thing: write one")
		}
		if ptr, ok := l.pointer(v, path, "the provider's id for the whole request in its answer, e.g. /bulkId", false); ok {
			p.RequestIDField = &ptr
		}
	case "max_recipients":
		l.positive(v, path, &p.MaxRecipients)
	case "max_body_length":
		l.positive(v, path, &p.MaxBodyLength)
	case "expected_latency":
		l.duration(v, path, time.Millisecond, time.Minute, "e.g. 200ms or 1.5s: how long the provider takes to answer a send", &p.ExpectedLatency)
	case "results":
		p.Results = l.results(v, path)
	case "others":
		p.Others = l.others(v, path)
	}
}

// duration reads a Go duration ("200ms", "24h") between lo and hi.
func (l *loader) duration(v *yaml.Node, path string, lo, hi time.Duration, hint string, dst *time.Duration) bool {
	var s string
	if v.Kind == yaml.ScalarNode && (v.ShortTag() == "!!int" || v.ShortTag() == "!!float") {
		l.add(v.Line, path, "write it with a unit, "+hint, "a duration needs a unit (ms, s, m or h)")
		return false
	}
	if !l.str(v, path, &s) {
		return false
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil || strings.HasPrefix(s, "+"):
		// "+48h" parses, but the JSON Schema's pattern (what an editor
		// checks) takes no sign: refused here too, so the two agree.
		l.add(v.Line, path, hint, "%s is not a duration", Quote(s))
		return false
	case d < lo || d > hi:
		l.add(v.Line, path, hint, "%s is out of range %s..%s", s, words.Duration(lo), words.Duration(hi))
		return false
	}
	*dst = d
	return true
}
