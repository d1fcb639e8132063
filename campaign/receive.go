package campaign

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/words"
)

// What happens after the send is a project's, not a campaign's: `smsform
// receive` serves one project, whose state holds every campaign, so the
// mappings of delivery reports and replies (provider.reports and
// provider.replies) and how the provider's posts are authenticated
// (receive:) are read from the project file only.

// Receive is the project file's receive: block: how `smsform receive`
// knows a post comes from the provider, and which replies opt out. The
// secret itself is never here: it comes from SMSFORM_RECEIVE_SECRET.
type Receive struct {
	Auth string // AuthHMAC, AuthBasic, AuthBearer or AuthQuery
	// Header carries the signature (AuthHMAC only).
	Header string
	// StopWords and StartWords are the replies that opt a number out and
	// back in, as written; nil: the defaults.
	StopWords, StartWords []string
	Line                  int // receive:'s line
}

// How a provider's posts are authenticated (receive.auth).
const (
	AuthHMAC   = "hmac-sha256" // the lowercase hex HMAC-SHA256 of the raw body, in Header
	AuthBasic  = "basic"       // HTTP Basic: any user, the secret as password
	AuthBearer = "bearer"      // Authorization: Bearer SECRET
	AuthQuery  = "query"       // ?token=SECRET in the URL the provider posts to
)

// AuthKinds are receive.auth's values.
var AuthKinds = []string{AuthHMAC, AuthBasic, AuthBearer, AuthQuery}

var (
	// projectProviderKeys are the provider keys of a project file only.
	projectProviderKeys = []string{"reports", "replies"}
	reportsKeys         = []string{"list", "id", "number", "default_region", "status", "at", "reason", "delivered", "undelivered", "export"}
	exportKeys          = []string{"id", "number", "status", "at", "reason"}
	repliesKeys         = []string{"list", "id", "number", "default_region", "text", "at"}
	receiveKeys         = []string{"auth", "header", "stop_words", "start_words"}
)

const (
	reportsHint = "provider.reports needs status, id or number (or both), and the statuses delivered and undelivered name, e.g. {id: /message_id, number: /to, status: /status, delivered: [DELIVERED], undelivered: [UNDELIVERED]}"
	exportHint  = "provider.reports.export names the columns of the provider's CSV export, each /COLUMN: status, and id or number (or both), e.g. {id: /MessageSid, number: /To, status: /Status}"
	repliesHint = "provider.replies needs number and text, e.g. {number: /from, text: /text}"
	receiveHint = "write receive: {auth: hmac-sha256, header: X-Signature} (or auth: basic, bearer or query); the secret goes in SMSFORM_RECEIVE_SECRET"
)

// withoutProjectKeys is a campaign's provider block v without the keys
// only a project's block has, each refused with where it goes.
func (l *loader) withoutProjectKeys(v *yaml.Node, path string) *yaml.Node {
	if v.Kind != yaml.MappingNode {
		return v
	}
	kept := *v
	kept.Content = nil
	for i := 0; i+1 < len(v.Content); i += 2 {
		k := v.Content[i]
		if k.Kind == yaml.ScalarNode && slices.Contains(projectProviderKeys, k.Value) {
			l.add(k.Line, join(path, k.Value), "move it to the provider: block of the project file, "+ProjectFile+": smsform receive and reports import serve a whole project",
				"%s is read from the project file only", k.Value)
			continue
		}
		kept.Content = append(kept.Content, k, v.Content[i+1])
	}
	return &kept
}

// projectProvider reads the project file's provider block: a campaign's
// keys into p's shared block, and the reports and replies mappings.
func (l *loader) projectProvider(v *yaml.Node, path string, p *Project) {
	l.mapping(v, path, slices.Concat(providerKeys, projectProviderKeys), func(key, path string, v *yaml.Node) bool {
		switch key {
		case "reports":
			p.Reports = l.reports(v, path)
		case "replies":
			p.Replies = l.replies(v, path)
		default:
			l.providerKey(key, path, v, &p.provider)
		}
		return true
	})
}

// reports reads provider.reports; nil when it has a problem.
func (l *loader) reports(v *yaml.Node, path string) *mapping.Reports {
	before := len(l.errs)
	r := &mapping.Reports{Where: fmt.Sprintf("%s:%d", l.file, l.lines[path])}
	seen := map[string]int{}
	l.mapping(v, path, reportsKeys, func(key, path string, v *yaml.Node) bool {
		seen[key] = v.Line
		switch key {
		case "list":
			r.List = l.optionalPointer(v, path, `the list of reports in a body, e.g. /results ("" for a body that is the list; leave it out for a body that is one report)`, true)
		case "id":
			r.ID = l.optionalPointer(v, path, "inside each report, the provider's id of the message, e.g. /messageId", false)
		case "number":
			r.Number = l.optionalPointer(v, path, "inside each report, the recipient's number, e.g. /to", false)
		case "default_region":
			l.region(v, path, &r.DefaultRegion)
		case "status":
			r.Status, _ = l.pointer(v, path, "inside each report, its status, e.g. /status", false)
		case "at":
			r.At = l.optionalPointer(v, path, "inside each report, when it happened, e.g. /doneAt", false)
		case "reason":
			r.Reason = l.optionalPointer(v, path, "inside each report, the provider's words, e.g. /error/description", false)
		case "delivered":
			r.Delivered = l.statuses(v, path)
		case "undelivered":
			r.Undelivered = l.statuses(v, path)
		case "export":
			r.Export = l.exportColumns(v, path)
		}
		return true
	})
	if v.Kind == yaml.MappingNode {
		l.checkReports(v, path, r, seen)
	}
	if len(l.errs) > before {
		return nil
	}
	return r
}

// checkReports refuses a reports mapping that cannot work: no status, no
// way to name the message, no status that settles one, a status under both
// meanings.
func (l *loader) checkReports(v *yaml.Node, path string, r *mapping.Reports, seen map[string]int) {
	if _, ok := seen["status"]; !ok {
		l.add(v.Line, join(path, "status"), reportsHint, "required key is missing")
	}
	_, id := seen["id"]
	_, number := seen["number"]
	if !id && !number {
		l.add(v.Line, join(path, "id"), reportsHint, "required key is missing (or number): a report must name its message")
	}
	_, delivered := seen["delivered"]
	_, undelivered := seen["undelivered"]
	if !delivered && !undelivered {
		l.add(v.Line, join(path, "delivered"), reportsHint, "required key is missing (or undelivered): without them every report is pending")
	}
	for _, s := range r.Delivered {
		if contains(r.Undelivered, s) {
			l.add(seen["undelivered"], join(path, "undelivered"), "list each status under one meaning only",
				"status %s is listed under both delivered and undelivered", Quote(s.String()))
		}
	}
}

// exportColumns reads provider.reports.export, the columns of the
// provider's CSV export (reports import reads them instead of the posted
// body's pointers): /COLUMN each, a status and a way to name the message.
func (l *loader) exportColumns(v *yaml.Node, path string) *mapping.ExportColumns {
	before := len(l.errs)
	e := &mapping.ExportColumns{Where: fmt.Sprintf("%s:%d", l.file, l.lines[path])}
	seen := map[string]bool{}
	column := func(v *yaml.Node, path, what string) *rawjson.Pointer {
		p := l.optionalPointer(v, path, what, false)
		if p != nil && strings.Contains(p.String()[1:], "/") {
			l.add(v.Line, path, "write the column's name after one /, e.g. /Status (a / inside a name is written ~1)",
				"%s names no column: a column is /NAME", Quote(p.String()))
			return nil
		}
		return p
	}
	l.mapping(v, path, exportKeys, func(key, path string, v *yaml.Node) bool {
		seen[key] = true
		switch key {
		case "id":
			e.ID = column(v, path, "the column of the provider's id of the message, e.g. /MessageSid")
		case "number":
			e.Number = column(v, path, "the column of the recipient's number, e.g. /To")
		case "status":
			if p := column(v, path, "the column of the status, e.g. /Status"); p != nil {
				e.Status = *p
			}
		case "at":
			e.At = column(v, path, "the column of when it happened, e.g. /DateUpdated")
		case "reason":
			e.Reason = column(v, path, "the column of the provider's words, e.g. /ErrorCode")
		}
		return true
	})
	if v.Kind == yaml.MappingNode {
		if !seen["status"] {
			l.add(v.Line, join(path, "status"), exportHint, "required key is missing")
		}
		if !seen["id"] && !seen["number"] {
			l.add(v.Line, join(path, "id"), exportHint, "required key is missing (or number): a report must name its message")
		}
	}
	if len(l.errs) > before {
		return nil
	}
	return e
}

// replies reads provider.replies; nil when it has a problem.
func (l *loader) replies(v *yaml.Node, path string) *mapping.Replies {
	before := len(l.errs)
	r := &mapping.Replies{Where: fmt.Sprintf("%s:%d", l.file, l.lines[path])}
	seen := map[string]bool{}
	l.mapping(v, path, repliesKeys, func(key, path string, v *yaml.Node) bool {
		seen[key] = true
		switch key {
		case "list":
			r.List = l.optionalPointer(v, path, `the list of replies in a body, e.g. /messages ("" for a body that is the list; leave it out for a body that is one reply)`, true)
		case "id":
			r.ID = l.optionalPointer(v, path, "inside each reply, the provider's id of it, e.g. /MessageSid", false)
		case "number":
			r.Number, _ = l.pointer(v, path, "inside each reply, who sent it, e.g. /from", false)
		case "default_region":
			l.region(v, path, &r.DefaultRegion)
		case "text":
			r.Text, _ = l.pointer(v, path, "inside each reply, what they wrote, e.g. /text", false)
		case "at":
			r.At = l.optionalPointer(v, path, "inside each reply, when it was received, e.g. /at", false)
		}
		return true
	})
	for _, key := range []string{"number", "text"} {
		if !seen[key] && v.Kind == yaml.MappingNode {
			l.add(v.Line, join(path, key), repliesHint, "required key is missing")
		}
	}
	if len(l.errs) > before {
		return nil
	}
	return r
}

// region reads a mapping's default_region: the country of the numbers a
// provider writes without their country code (a US provider's
// "4155550123"), which nothing else in a report or reply says.
func (l *loader) region(v *yaml.Node, path string, dst *string) {
	if l.str(v, path, dst) && !e164.ValidRegion(*dst) {
		msg, hint := checkWords("region", *dst)
		l.add(v.Line, path, hint, "%s", msg)
	}
}

// optionalPointer is pointer for a key that may be left out: nil when it
// has a problem.
func (l *loader) optionalPointer(v *yaml.Node, path, what string, orWhole bool) *rawjson.Pointer {
	p, ok := l.pointer(v, path, what, orWhole)
	if !ok {
		return nil
	}
	return &p
}

// receive reads the project file's receive: block; nil when it has a
// problem.
func (l *loader) receive(v *yaml.Node, path string) *Receive {
	before := len(l.errs)
	r := &Receive{Line: l.lines[path]}
	seen := map[string]int{}
	l.mapping(v, path, receiveKeys, func(key, path string, v *yaml.Node) bool {
		seen[key] = v.Line
		switch key {
		case "auth":
			if l.str(v, path, &r.Auth) && !slices.Contains(AuthKinds, r.Auth) {
				l.add(v.Line, path, receiveHint, "%s is not a way to authenticate: write %s", Quote(r.Auth), strings.Join(AuthKinds, ", "))
			}
		case "header":
			if l.str(v, path, &r.Header) && !headerName(r.Header) {
				l.add(v.Line, path, "write an HTTP header's name, e.g. X-Signature", "%s is not a header name", Quote(r.Header))
			}
		case "stop_words":
			r.StopWords = l.words(v, path)
		case "start_words":
			r.StartWords = l.words(v, path)
		}
		return true
	})
	if v.Kind == yaml.MappingNode {
		l.checkReceive(v, path, r, seen)
	}
	if len(l.errs) > before {
		return nil
	}
	return r
}

// checkReceive refuses a receive block that leaves the way in open or
// unclear: no auth, a signature without its header, a header the auth
// does not read, a word that both stops and starts.
func (l *loader) checkReceive(v *yaml.Node, path string, r *Receive, seen map[string]int) {
	line, hasHeader := seen["header"]
	switch _, hasAuth := seen["auth"]; {
	case !hasAuth:
		l.add(v.Line, join(path, "auth"), receiveHint, "required key is missing: smsform receive takes only posts it can authenticate")
	case r.Auth == AuthHMAC && !hasHeader:
		l.add(v.Line, join(path, "header"), "name the header the provider puts the signature in, e.g. header: X-Signature", "required key is missing with auth: hmac-sha256")
	case r.Auth != AuthHMAC && hasHeader && slices.Contains(AuthKinds, r.Auth):
		l.add(line, join(path, "header"), "leave it out: basic and bearer read the Authorization header, query the URL's token",
			"header is read with auth: hmac-sha256 only")
	}
	for _, w := range r.StopWords {
		for _, s := range r.StartWords {
			if words.ReplyWord(w) == words.ReplyWord(s) {
				l.add(seen["start_words"], join(path, "start_words"), "list each word under one meaning only", "%s is both a stop word and a start word", Quote(w))
			}
		}
	}
}

// words reads a list of reply words: each a word once case, spaces and
// punctuation around it are set aside, as replies are compared
// (words.ReplyWord), and listed once in that form.
func (l *loader) words(v *yaml.Node, path string) []string {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		l.add(v.Line, path, "write a list of words, e.g. [STOP, UNSUBSCRIBE]", "must be a non-empty list of words, not %s", kindWords(v))
		return nil
	}
	out := []string{}
	for i, item := range v.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" || words.ReplyWord(item.Value) == "" {
			l.add(item.Line, p, "write a word as recipients would reply it, e.g. STOP (quoted if YAML reads it otherwise)", "must be a word, not %s", kindWords(item))
			continue
		}
		s := item.Value
		if slices.ContainsFunc(out, func(w string) bool { return words.ReplyWord(w) == words.ReplyWord(s) }) {
			l.add(item.Line, p, "remove one of them", "%s is listed twice (case and punctuation aside)", Quote(s))
			continue
		}
		out = append(out, s)
	}
	return out
}

// headerName reports whether s is an HTTP header's name (RFC 9110's token).
func headerName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// checkProjectReceive refuses a receive block with nothing to receive,
// and opt_out_words it would not take as stop words.
func (l *loader) checkProjectReceive(p *Project) {
	l.wordsReceived(p.compliance.words, p.compliance.wordsLine, p.Receive, p.Path)
	if p.Receive != nil && p.Reports == nil && p.Replies == nil && !l.bad["provider.reports"] && !l.bad["provider.replies"] && len(l.errs) == 0 {
		l.add(p.Receive.Line, "receive", "add provider.reports (delivery reports) or provider.replies (replies), or remove receive:",
			"receive has nothing to receive: the provider block maps no reports and no replies")
	}
}
