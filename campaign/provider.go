package campaign

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/smsform/smsform/api"
)

// Provider is where and how the messaging API is reached, and what the
// spec leaves open about it. A campaign's provider block is laid over the
// project file's, key by key. Secrets never live here: they come from the
// environment.
type Provider struct {
	BaseURL         string // may be overridden by SMSFORM_BASE_URL (the CLI does that)
	BasicAuth       string // "auto" (base64, then literal once on a 401), "base64" (RFC 7617) or "literal"
	TokenValidHours int    // 1..168, default 24
	// RequestIDField points to the request id in a send's success body;
	// nil looks in the usual places.
	RequestIDField *api.Pointer
	// MaxRecipients is the most recipients one request may carry; 0: no
	// limit but the campaign's batch_size.
	MaxRecipients int
	// MaxBodyLength is the longest body the provider takes, in
	// characters; 0: no limit.
	MaxBodyLength int
	// ExpectedLatency is how long the provider takes to answer a send,
	// for plan's estimate until apply has measured it (default 200 ms).
	ExpectedLatency time.Duration
	// Results, when set, says where a send's answer lists each
	// recipient's outcome.
	Results *api.Results
}

// DefaultExpectedLatency is provider.expected_latency unless set.
const DefaultExpectedLatency = 200 * time.Millisecond

var (
	providerKeys = []string{"base_url", "basic_auth", "token_valid_hours", "request_id_field", "max_recipients", "max_body_length",
		"expected_latency", "results"}
	resultsKeys = []string{"list", "number", "status", "reason", "sent", "retry", "duplicate"}
)

// rawProvider is a provider block as written; set holds the keys it
// writes, so that a campaign's block overrides a project's key by key.
type rawProvider struct {
	BaseURL         string `yaml:"base_url" validate:"omitempty,base_url"`
	BasicAuth       string `yaml:"basic_auth" validate:"oneof=auto base64 literal"`
	TokenValidHours int    `yaml:"token_valid_hours" validate:"min=1,max=168"`
	RequestIDField  *api.Pointer
	MaxRecipients   int
	MaxBodyLength   int
	ExpectedLatency time.Duration
	Results         *api.Results

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
		case "request_id_field":
			dst.RequestIDField = p.RequestIDField
		case "max_recipients":
			dst.MaxRecipients = p.MaxRecipients
		case "max_body_length":
			dst.MaxBodyLength = p.MaxBodyLength
		case "expected_latency":
			dst.ExpectedLatency = p.ExpectedLatency
		case "results":
			dst.Results = p.Results
		}
	}
}

func (p *rawProvider) provider() Provider {
	return Provider{BaseURL: p.BaseURL, BasicAuth: p.BasicAuth, TokenValidHours: p.TokenValidHours, RequestIDField: p.RequestIDField,
		MaxRecipients: p.MaxRecipients, MaxBodyLength: p.MaxBodyLength, ExpectedLatency: p.ExpectedLatency, Results: p.Results}
}

// provider reads a provider block into p.
func (l *loader) provider(v *yaml.Node, path string, p *rawProvider) {
	l.mapping(v, path, providerKeys, func(key, path string, v *yaml.Node) bool {
		p.set = append(p.set, key)
		switch key {
		case "base_url":
			l.str(v, path, &p.BaseURL)
		case "basic_auth":
			l.str(v, path, &p.BasicAuth)
		case "token_valid_hours":
			l.int(v, path, &p.TokenValidHours)
		case "request_id_field":
			if ptr, ok := l.pointer(v, path, "the request id in the provider's success answer, e.g. /data/message_id"); ok {
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
		}
		return true
	})
}

// results reads provider.results; nil when it has a problem.
func (l *loader) results(v *yaml.Node, path string) *api.Results {
	r := &api.Results{}
	seen := map[string]bool{}
	before := len(l.errs)
	l.mapping(v, path, resultsKeys, func(key, path string, v *yaml.Node) bool {
		seen[key] = true
		switch key {
		case "list":
			r.List, _ = l.pointer(v, path, "the array of per-recipient results in the answer, e.g. /messages")
		case "number":
			r.Number, _ = l.pointer(v, path, "inside each element, the recipient's number, e.g. /to")
		case "status":
			r.Status, _ = l.pointer(v, path, "inside each element, its status, e.g. /status/groupName")
		case "reason":
			if ptr, ok := l.pointer(v, path, "inside each element, the words of a refusal, e.g. /status/description"); ok {
				r.Reason = &ptr
			}
		case "sent":
			r.Sent = l.statuses(v, path)
		case "retry":
			r.Retry = l.statuses(v, path)
		case "duplicate":
			r.Duplicate = l.statuses(v, path)
		}
		return true
	})
	if v.Kind != yaml.MappingNode {
		return nil
	}
	for _, key := range []string{"list", "number", "status", "sent"} {
		if !seen[key] {
			l.add(v.Line, path+"."+key, resultsHint, "required key is missing")
		}
	}
	// A status listed under two meanings would make one of them a guess.
	meaning := map[string]string{}
	for _, m := range []struct {
		key  string
		list []string
	}{{"sent", r.Sent}, {"retry", r.Retry}, {"duplicate", r.Duplicate}} {
		for _, s := range m.list {
			if other, dup := meaning[s]; dup {
				l.add(l.lines[path+"."+m.key], path+"."+m.key, "list each status under one meaning only",
					"status %s is listed under both %s and %s", Quote(s), other, m.key)
			}
			meaning[s] = m.key
		}
	}
	if len(l.errs) > before {
		return nil
	}
	return r
}

const resultsHint = "results needs list, number, status and sent: where the answer lists each recipient, and which statuses mean accepted"

// pointer reads a JSON pointer (RFC 6901).
func (l *loader) pointer(v *yaml.Node, path, what string) (api.Pointer, bool) {
	var s string
	if !l.str(v, path, &s) {
		return api.Pointer{}, false
	}
	p, err := api.ParsePointer(s)
	if err != nil || s == "" {
		l.add(v.Line, path, "write a JSON pointer (RFC 6901) to "+what, "%s is not a JSON pointer", Quote(s))
		return api.Pointer{}, false
	}
	return p, true
}

// statuses reads a list of status words; numbers are taken as written
// (a provider's status "1" is a word here).
func (l *loader) statuses(v *yaml.Node, path string) []string {
	if v.Kind != yaml.SequenceNode {
		l.add(v.Line, path, "write a list, e.g. [PENDING, ACCEPTED]", "must be a list of statuses, not %s", kindWords(v))
		return nil
	}
	var out []string
	for i, item := range v.Content {
		if item.Kind != yaml.ScalarNode || item.ShortTag() == "!!null" || strings.TrimSpace(item.Value) == "" {
			l.add(item.Line, fmt.Sprintf("%s[%d]", path, i), "", "must be a status word, not %s", kindWords(item))
			continue
		}
		if !slices.Contains(out, item.Value) {
			out = append(out, item.Value)
		}
	}
	return out
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
	case err != nil:
		l.add(v.Line, path, hint, "%s is not a duration", Quote(s))
		return false
	case d < lo || d > hi:
		l.add(v.Line, path, hint, "%s is out of range %s..%s", s, lo, hi)
		return false
	}
	*dst = d
	return true
}
