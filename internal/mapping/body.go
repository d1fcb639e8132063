package mapping

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// Bounds of what a provider may post in one request: one report is a few
// hundred bytes, and providers that batch them send at most a few hundred
// at once (Infobip 100, Sinch 1,000), so a body past these is a mistake or
// an attack, never a report worth reading at any cost.
const (
	// MaxBody is the largest body of reports or replies read, in bytes.
	MaxBody = 1 << 20
	// MaxBodyElements is the most reports (or replies) one body may hold.
	MaxBodyElements = 10_000
)

// ErrTooMany is wrapped by the error of a body holding more than
// MaxBodyElements reports or replies.
var ErrTooMany = fmt.Errorf("more than %d elements in one body", MaxBodyElements)

// ErrNotJSON is wrapped by the error of a body that is neither JSON nor a
// form.
var ErrNotJSON = errors.New("the body is not JSON")

// Doc is the JSON text a posted body is read as, so that every mapping is
// a set of JSON pointers whatever the provider posts: a JSON body as it is
// (checked valid); a form-encoded one (application/x-www-form-urlencoded,
// as Twilio's StatusCallback posts) as a flat object of strings, each
// field by its name, so that /MessageStatus points at the form field
// MessageStatus. A field written twice is its last value, as a key written
// twice in JSON is.
func Doc(contentType string, body []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	// A JSON object or list under a form's type (curl's default for
	// --data) is read as the JSON it is: as a form it is one field named
	// by the whole body, and every report of it would be refused as
	// lacking its status, which points the wrong way.
	if trimmed := bytes.TrimSpace(body); mt == "application/x-www-form-urlencoded" &&
		len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		return body, nil
	}
	if mt == "application/x-www-form-urlencoded" {
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("the form body cannot be read: %w", err)
		}
		keys := make([]string, 0, len(vals))
		last := make([]string, 0, len(vals))
		for _, k := range slices.Sorted(maps.Keys(vals)) {
			keys = append(keys, k)
			last = append(last, vals[k][len(vals[k])-1])
		}
		return AppendObject(nil, keys, last), nil
	}
	if !json.Valid(body) {
		what := "Content-Type " + strconv.Quote(contentType)
		if contentType == "" {
			what = "no Content-Type"
		}
		return nil, fmt.Errorf("%w (%s; a form body needs Content-Type application/x-www-form-urlencoded)", ErrNotJSON, what)
	}
	return body, nil
}

// AppendObject appends to b the JSON object whose members are keys (each
// once) and values, all strings: a form's fields or a CSV row read as a
// report.
func AppendObject(b []byte, keys, values []string) []byte {
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, values[i])
	}
	return append(b, '}')
}

// appendString appends s as a JSON string: as is when it needs no escape,
// through encoding/json otherwise.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// timeLayouts are the ways providers write when a report's event happened,
// tried in order: RFC 3339 (Sinch, Telnyx, the sandbox), ISO 8601 with a
// +0000 offset (Infobip's doneAt), and a plain date and time in UTC
// (Vonage's message-timestamp).
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999-0700",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
}

// ParseTime reads when a provider says a report's event happened: one of
// timeLayouts (a time without an offset is UTC), or a Unix time in seconds
// (10 digits) or milliseconds (13 digits). ok is false for anything else:
// a time read wrong would match a report to the wrong message.
func ParseTime(s string) (t time.Time, ok bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && s[0] != '+' && s[0] != '-' {
		switch len(s) {
		case 10:
			return time.Unix(n, 0).UTC(), true
		case 13:
			return time.UnixMilli(n).UTC(), true
		}
		return time.Time{}, false
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
