package campaign

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/smsform/smsform/internal/baseurl"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/redact"
	"github.com/smsform/smsform/internal/sms"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9\-_.]{0,63}$`)

// A rule is the value rule of one key, checked once the walk has read the
// file: what the walk cannot see key by key (a key that is missing, a
// default that was never overridden) and what a value must be besides its
// type. The JSON Schemas in schema/ are generated from the same rules
// (schema_test.go), so the file, the loader and the editor agree.
//
// The rules are data rather than validator tags: a rule needs the key's
// line and whether it was written, which only the walk knows, and its
// words and hint are smsform's own (see docs/architecture.md).
type rule[T any] struct {
	key      string       // the dotted path, as errors name it
	get      func(*T) any // the value as read: an int, a string or a list
	required bool         // missing, empty or zero is an error
	optional bool         // the empty value passes every other check
	eq       int          // the only value allowed, when not 0
	min, max int          // bounds of a number, a text's length in characters, a list's length; 0: none
	oneOf    []string     // the values allowed, when set
	check    string       // a named check (checks) the schema writes as a pattern or a definition
}

// checks are the named checks a rule may use.
var checks = map[string]func(string) bool{
	"campaign_name": nameRE.MatchString,
	"sender":        func(s string) bool { return sms.CheckSender(s) == nil },
	"region":        e164.ValidRegion,
	"base_url":      func(s string) bool { _, err := baseurl.Check(s); return err == nil },
	"rate":          func(s string) bool { _, ok := parseRate(s); return ok },
}

// providerRules are a provider block's, under the path it is read at.
func providerRules[T any](prefix string, p func(*T) *rawProvider) []rule[T] {
	return []rule[T]{
		{key: join(prefix, "base_url"), get: func(t *T) any { return p(t).BaseURL }, optional: true, check: "base_url"},
		{key: join(prefix, "basic_auth"), get: func(t *T) any { return p(t).BasicAuth }, oneOf: []string{"auto", "base64", "literal"}},
		{key: join(prefix, "token_valid_hours"), get: func(t *T) any { return p(t).TokenValidHours }, min: 1, max: 168},
	}
}

// campaignRules are a campaign file's, in the order of the file's keys.
func campaignRules() []rule[rawCampaign] {
	type rc = rawCampaign
	rules := []rule[rc]{
		{key: "version", get: func(c *rc) any { return c.Version }, required: true, eq: 1},
		{key: "name", get: func(c *rc) any { return c.Name }, required: true, check: "campaign_name"},
		{key: "sender", get: func(c *rc) any { return c.Sender }, required: true, check: "sender"},
	}
	rules = append(rules, providerRules("provider", func(c *rc) *rawProvider { return &c.Provider })...)
	return append(rules, []rule[rc]{
		{key: "default_region", get: func(c *rc) any { return c.DefaultRegion }, optional: true, check: "region"},
		{key: "recipients", get: func(c *rc) any { return c.Recipients }, required: true, min: 1},
		{key: "body", get: func(c *rc) any { return c.Body }, required: true, max: 16000},
		{key: "batch_size", get: func(c *rc) any { return c.BatchSize }, min: 1, max: 1000},
		{key: "rate", get: func(c *rc) any { return c.Rate }, optional: true, check: "rate"},
		{key: "concurrency", get: func(c *rc) any { return c.Concurrency }, min: 1, max: 64},
		{key: "empty_variables", get: func(c *rc) any { return c.EmptyVars }, oneOf: []string{"warn", "error"}},
	}...)
}

// projectRules are a project file's.
func projectRules() []rule[rawProject] {
	return append([]rule[rawProject]{
		{key: "version", get: func(p *rawProject) any { return p.Version }, required: true, eq: 1},
	}, providerRules("provider", func(p *rawProject) *rawProvider { return &p.Provider })...)
}

// validate applies the value rules of a campaign's keys, then the rules
// that tie several keys together (what a source is).
func (l *loader) validate(rc *rawCampaign) {
	applyRules(l, campaignRules(), rc)
	l.validateSources("recipients", rc.Recipients, rc.sourceNodes[0])
	l.validateSources("exclude", rc.Exclude, rc.sourceNodes[1])
}

// applyRules checks each rule against raw, reporting a failure at the line
// of its key (the top of the file for a missing one), unless the walk has
// already said what is wrong there.
func applyRules[T any](l *loader, rules []rule[T], raw *T) {
	for _, r := range rules {
		if l.bad[r.key] {
			continue
		}
		line, present := l.lines[r.key]
		if !present {
			line = 1 // a missing key has no line of its own; the top of the file is where it goes
		}
		if msg, hint, ok := r.apply(r.get(raw), present); !ok {
			l.add(line, r.key, hint, "%s", msg)
		}
	}
}

// apply checks v, the key's value, and words a failure for the person who
// wrote the file, with a hint when there is something specific to do.
func (r rule[T]) apply(v any, present bool) (msg, hint string, ok bool) {
	n, size, empty := measure(v)
	field := lastKey(r.key)
	switch {
	case empty && r.required && field == "version" && present:
		return fmt.Sprintf("unsupported version %v: this smsform reads version 1", v), "set version: 1", false
	case empty && r.required && !present:
		return "required key is missing", requiredHint[field], false
	case empty && r.required:
		return "must not be empty", requiredHint[field], false
	case empty && r.optional:
		return "", "", true
	case r.eq != 0 && n != r.eq:
		return fmt.Sprintf("unsupported version %v: this smsform reads version %d", v, r.eq), "set version: 1", false
	case r.min != 0 && size < r.min:
		if _, list := v.([]rawSource); list {
			return fmt.Sprintf("must list at least %d source", r.min), requiredHint[field], false
		}
		return fmt.Sprintf("%v is too small: the least allowed is %d", v, r.min), "", false
	case r.max != 0 && size > r.max:
		if _, text := v.(string); text {
			return fmt.Sprintf("is longer than %d characters", r.max), "", false
		}
		return fmt.Sprintf("%v is too large: the most allowed is %d", v, r.max), "", false
	case r.oneOf != nil && !slices.Contains(r.oneOf, fmt.Sprint(v)):
		return fmt.Sprintf("%q is not one of: %s", v, strings.Join(r.oneOf, ", ")), "", false
	case r.check != "" && !checks[r.check](fmt.Sprint(v)):
		msg, hint = checkWords(r.check, fmt.Sprint(v))
		return msg, hint, false
	}
	return "", "", true
}

// measure is what the bounds of a rule apply to: a number itself, a text's
// length in characters, a list's length; and whether v is its type's empty
// value (a list is empty only when the file did not write it).
func measure(v any) (n, size int, empty bool) {
	switch v := v.(type) {
	case int:
		return v, v, v == 0
	case string:
		return 0, utf8.RuneCountInString(v), v == ""
	case []rawSource:
		return 0, len(v), v == nil
	}
	panic(fmt.Sprintf("campaign: a rule over a %T", v)) // a programming error: the rules above name their types
}

// checkWords words the failure of a named check.
func checkWords(check, s string) (msg, hint string) {
	switch check {
	case "campaign_name":
		return fmt.Sprintf("%q is not a valid name", s), "use 1-64 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit, e.g. spring-sale-2026"
	case "sender":
		// CheckSender's words already say what is wrong and what would do.
		return sms.CheckSender(s).Error(), ""
	case "region":
		if up := strings.ToUpper(s); up != s && e164.ValidRegion(up) {
			return fmt.Sprintf("%q is not a known region code", s), fmt.Sprintf("write it in capitals: %s", up)
		}
		return fmt.Sprintf("%q is not a known region code", s), "use a two-letter ISO 3166 code such as GB, US or DE"
	case "base_url":
		_, err := baseurl.Check(s)
		hint := "e.g. https://sms.example.com (credentials come from the environment, never the URL)"
		if errors.Is(err, baseurl.ErrCredentials) {
			hint = "remove them: credentials come from SMSFORM_CLIENT_ID and SMSFORM_CLIENT_SECRET, never the file"
		}
		return fmt.Sprintf("%q %v", redact.URL(s), err), hint
	case "rate":
		return fmt.Sprintf("%q is not a rate", s), "write N/s, N/m or N/h with N a positive number, e.g. 5/s"
	}
	return fmt.Sprintf("fails the %q check", check), ""
}

var requiredHint = map[string]string{
	"version":    "add \"version: 1\"",
	"name":       "add a name such as \"name: spring-sale-2026\": state is kept under it",
	"sender":     "add the sender the messages come from, e.g. \"sender: ACME\"",
	"recipients": "add at least one source, e.g. \"recipients: [{file: lists/customers.csv}]\"",
	"body":       "add the message text, e.g. \"body: Hi {{ .name }}\"",
}

// validateSources checks that each source is exactly one kind.
func (l *loader) validateSources(list string, srcs []rawSource, pos []sourcePos) {
	for i := range srcs {
		s, p := srcs[i], pos[i]
		if p.bad {
			continue
		}
		path := fmt.Sprintf("%s[%d]", list, i)
		switch {
		case p.hasNumbers && p.hasFile:
			l.add(p.line, path, "split it into two list items", "a source has either numbers: or file:, not both")
		case !p.hasNumbers && !p.hasFile:
			l.add(p.line, path, "write \"- file: lists/customers.csv\" or \"- numbers: [\\\"+14155550101\\\"]\"", "source needs numbers: or file:")
		case p.hasNumbers && p.hasColumn:
			l.add(l.lines[path+".phone_column"], path+".phone_column", "remove it", "phone_column applies only to CSV files")
		case p.hasNumbers && len(s.Numbers) == 0:
			l.add(l.lines[path+".numbers"], path+".numbers", "list at least one number, or remove the source", "list is empty")
		case p.hasFile && s.File == "":
			l.add(l.lines[path+".file"], path+".file", "", "must not be empty")
		case p.hasFile && p.hasColumn && s.PhoneColumn == "":
			l.add(l.lines[path+".phone_column"], path+".phone_column", "remove it to use the default, phone", "must not be empty")
		}
	}
}
