package campaign

import (
	"fmt"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
)

// resultsKeys are the keys of one list of provider.results.
var resultsKeys = []string{"list", "number", "status", "outcome", "id", "reason", "sent", "retry", "duplicate", "failed", "optional"}

const resultsHint = "each entry of results needs list and number, and either status with the statuses it names (sent, failed, retry, duplicate) or outcome"

// results reads provider.results: one mapping (the first form smsform
// took) or a list of them. Nil when it has a problem.
func (l *loader) results(v *yaml.Node, path string) *mapping.Results {
	before := len(l.errs)
	r := &mapping.Results{Others: mapping.InDoubt}
	switch v.Kind {
	case yaml.MappingNode:
		r.Lists = append(r.Lists, l.resultsList(v, path))
	case yaml.SequenceNode:
		if len(v.Content) == 0 {
			l.add(v.Line, path, resultsHint, "lists no answer lists")
		}
		for i, item := range v.Content {
			r.Lists = append(r.Lists, l.resultsList(item, fmt.Sprintf("%s[%d]", path, i)))
		}
	default:
		l.add(v.Line, path, resultsHint, "must be a mapping, or a list of them, not %s", kindWords(v))
	}
	if len(l.errs) > before {
		return nil
	}
	return r
}

// resultsList reads one list of provider.results.
func (l *loader) resultsList(v *yaml.Node, path string) mapping.List {
	// Where is kept in the reasons the state records: the file's name,
	// not the path it was reached by, which goes stale when the
	// repository moves.
	m := mapping.List{Where: fmt.Sprintf("%s:%d", filepath.Base(l.file), v.Line)}
	seen := map[string]int{}
	statuses := map[string]*[]mapping.Value{"sent": &m.Sent, "retry": &m.Retry, "duplicate": &m.Duplicate, "failed": &m.Failed}
	l.mapping(v, path, resultsKeys, func(key, path string, v *yaml.Node) bool {
		seen[key] = v.Line
		switch key {
		case "list":
			m.List, _ = l.pointer(v, path, "the list in the answer, e.g. /messages", false)
		case "number":
			m.Number, _ = l.pointer(v, path, `inside each element, the recipient's number, e.g. /to ("" for an element that is the number itself)`, true)
		case "status":
			if ptr, ok := l.pointer(v, path, `inside each element, its status, e.g. /status/name ("" for an element that is the status itself)`, true); ok {
				m.Status = &ptr
			}
		case "outcome":
			m.Outcome = l.outcome(v, path, "what every element of this list means: sent, failed, retry or in_doubt")
		case "id":
			if ptr, ok := l.pointer(v, path, "inside each element, the provider's id for the message, e.g. /messageId", true); ok {
				m.ID = &ptr
			}
		case "reason":
			if ptr, ok := l.pointer(v, path, "inside each element, the provider's words, e.g. /status/description", true); ok {
				m.Reason = &ptr
			}
		case "optional":
			l.bool(v, path, &m.Optional)
		default:
			*statuses[key] = l.statuses(v, path)
		}
		return true
	})
	if v.Kind != yaml.MappingNode {
		return m
	}
	l.checkResultsList(v, path, &m, seen)
	return m
}

// checkResultsList refuses a list that cannot work: keys missing, status
// and outcome both or neither, statuses with an outcome, none without, a
// status under two meanings.
func (l *loader) checkResultsList(v *yaml.Node, path string, m *mapping.List, seen map[string]int) {
	for _, key := range []string{"list", "number"} {
		if _, ok := seen[key]; !ok {
			l.add(v.Line, join(path, key), resultsHint, "required key is missing")
		}
	}
	_, hasStatus := seen["status"]
	_, hasOutcome := seen["outcome"]
	named := 0
	for _, key := range []string{"sent", "failed", "retry", "duplicate"} {
		if line, ok := seen[key]; ok {
			named++
			if hasOutcome {
				l.add(line, join(path, key), "leave it out, or read each element's status: with outcome, every element of the list means the same",
					"%s needs status, not outcome", key)
			}
		}
	}
	switch {
	case hasStatus && hasOutcome:
		l.add(seen["outcome"], join(path, "outcome"), resultsHint, "write status or outcome, not both")
	case !hasStatus && !hasOutcome:
		l.add(v.Line, join(path, "status"), resultsHint, "required key is missing (or outcome)")
	case hasStatus && named == 0:
		l.add(v.Line, join(path, "sent"), resultsHint, "status names no statuses: list them under sent, failed, retry or duplicate")
	}
	// A status listed under two meanings would make one of them a guess.
	meaning := map[mapping.Value]string{}
	for _, key := range []string{"sent", "failed", "retry", "duplicate"} {
		for _, s := range map[string][]mapping.Value{"sent": m.Sent, "failed": m.Failed, "retry": m.Retry, "duplicate": m.Duplicate}[key] {
			if other, dup := meaning[s]; dup {
				l.add(seen[key], join(path, key), "list each status under one meaning only",
					"status %s is listed under both %s and %s", Quote(s.String()), other, key)
			}
			meaning[s] = key
		}
	}
}

// others reads provider.others: in_doubt (the default) or sent.
func (l *loader) others(v *yaml.Node, path string) mapping.Outcome {
	o := l.outcome(v, path, "in_doubt (the default) or sent: what a recipient no list of results names means")
	if o != 0 && o != mapping.InDoubt && o != mapping.Sent {
		l.add(v.Line, path, "in_doubt (the default) or sent", "%s is not allowed here", o)
		return 0
	}
	return o
}

// outcome reads an outcome: sent, failed, retry or in_doubt.
func (l *loader) outcome(v *yaml.Node, path, hint string) mapping.Outcome {
	var s string
	if !l.str(v, path, &s) {
		return 0
	}
	o, ok := mapping.ParseOutcome(s)
	if !ok {
		l.add(v.Line, path, hint, "%s is not an outcome", Quote(s))
	}
	return o
}

// pointer reads a JSON pointer (RFC 6901); "" (the element itself) only
// where orWhole allows it.
func (l *loader) pointer(v *yaml.Node, path, what string, orWhole bool) (rawjson.Pointer, bool) {
	var s string
	if !l.str(v, path, &s) {
		return rawjson.Pointer{}, false
	}
	p, err := rawjson.ParsePointer(s)
	if err != nil || (s == "" && !orWhole) {
		l.add(v.Line, path, "write a JSON pointer (RFC 6901) to "+what, "%s is not a JSON pointer", Quote(s))
		return rawjson.Pointer{}, false
	}
	return p, true
}

// statuses reads a list of statuses: words, numbers or true/false, each
// compared by value ([mapping.Value]).
func (l *loader) statuses(v *yaml.Node, path string) []mapping.Value {
	if v.Kind != yaml.SequenceNode {
		l.add(v.Line, path, "write a list, e.g. [PENDING, ACCEPTED]", "must be a list of statuses, not %s", kindWords(v))
		return nil
	}
	var out []mapping.Value
	for i, item := range v.Content {
		val, ok := statusValue(item)
		if !ok {
			l.add(item.Line, fmt.Sprintf("%s[%d]", path, i), "a status is a word, a number or true/false, as the provider writes it",
				"must be a status, not %s", kindWords(item))
			continue
		}
		if !contains(out, val) {
			out = append(out, val)
		}
	}
	return out
}

// statusValue is the value of a YAML scalar written as a status.
func statusValue(n *yaml.Node) (mapping.Value, bool) {
	if n.Kind != yaml.ScalarNode || strings.TrimSpace(n.Value) == "" {
		return mapping.Value{}, false
	}
	switch n.ShortTag() {
	case "!!null":
		return mapping.Value{}, false
	case "!!bool":
		return mapping.BoolValue(strings.EqualFold(n.Value, "true")), true
	case "!!int", "!!float":
		if v, ok := mapping.NumberValue(n.Value); ok {
			return v, true
		}
	}
	return mapping.StringValue(n.Value), true
}

func contains(vs []mapping.Value, v mapping.Value) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}
