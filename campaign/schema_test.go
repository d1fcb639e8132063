package campaign

// The JSON Schemas in schema/ (for editors: completion, hover, inline
// errors) are generated here from the loader's own key lists (campaignKeys,
// providerKeys, ...), the value rules of validate.go and its patterns,
// so that they cannot drift: TestSchemas fails when a key has no schema or a
// schema names a key the loader does not know, and when the files differ
// from what this generates (go test ./campaign -run TestSchemas -update
// rewrites them). internal/schemacheck checks that the schemas and Load
// agree on every example and on the invalid corpus.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"

	"github.com/smsform/smsform/compliance"
)

var updateSchemas = flag.Bool("update", false, "rewrite schema/*.schema.json")

// js is a JSON Schema object; encoding/json writes its keys sorted, so the
// files are stable.
type js = map[string]any

const schemaBase = "https://raw.githubusercontent.com/smsform/smsform/main/schema/"

// draft is JSON Schema draft-07, the newest draft that every editor's YAML
// support reads in full (VS Code's yaml-language-server, JetBrains).
const draft = "http://json-schema.org/draft-07/schema#"

// Patterns for what the loader checks with code. They accept what it
// accepts; where a rule needs more than a pattern (a valid phone number, a
// duration's range) the schema is looser and Load has the last word.
const (
	e164Pattern     = `^\+[1-9][0-9]{1,14}$`
	durationPattern = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	pointerPattern  = `^(/([^/~]|~[01])*)+$`
	columnPattern   = `^/([^/~]|~[01])*$`    // one step: a column's name
	elementPattern  = `^(/([^/~]|~[01])*)*$` // a pointer inside an element: "" is the element
	clockPattern    = `^([01][0-9]|2[0-3]):[0-5][0-9]$`
	clockEndPattern = `^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$`
	instantPattern  = `^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$`
	// ratePattern is rateRE with a positive N: 0/s is refused.
	ratePattern    = `^\s*([0-9]*[1-9][0-9]*(\.[0-9]+)?|[0-9]+\.[0-9]*[1-9][0-9]*)\s*/\s*[smh]\s*$`
	baseURLPattern = `^[hH][tT][tT][pP][sS]?://[^@/?#\s]+([/?#][^@\s]*)?$`
	listPattern    = `\.([cC][sS][vV]|[tT][xX][tT])$`
	txtPattern     = `\.[tT][xX][tT]$`
)

// mappingRegion is the schema of a reports or replies mapping's
// default_region.
var mappingRegion = js{"description": "The country of a number the provider writes without its country code (4155550123), as an ISO 3166 code such as US; a number with it is read as before.", "$ref": "#/definitions/region"}

// keySchemas is the schema of every key the loader knows, by dotted path
// (a list item's keys under "recipients[]"). Types, bounds and enums that a
// key's value rule (validate.go) states are added from the rule.
var keySchemas = map[string]js{
	"version":           {"description": "The file format's version: 1.", "type": "integer"},
	"name":              {"description": "The campaign's identity: its state is kept under this name. 1-64 lowercase letters, digits, '-', '_' or '.'.", "type": "string", "pattern": nameRE.String()},
	"sender":            {"description": "Who the messages come from (the API's \"from\"): an alphanumeric name of at most 11 letters, digits and spaces, a short code of 3-8 digits, or a phone number in E.164.", "$ref": "#/definitions/sender"},
	"provider":          {"description": "Where and how the messaging API is reached. Secrets never go here: SMSFORM_CLIENT_ID and SMSFORM_CLIENT_SECRET come from the environment.", "$ref": "#/definitions/provider"},
	"default_region":    {"description": "The country of numbers written without +country code, as an ISO 3166 code such as GB or US.", "$ref": "#/definitions/region"},
	"recipients":        {"description": "Who gets the message: lists (.csv with a header row, .txt with one number a line) and numbers.", "type": "array", "items": js{"$ref": "#/definitions/source"}},
	"exclude":           {"description": "Numbers never to message (opt-outs): lists and numbers, like recipients.", "type": "array", "items": js{"$ref": "#/definitions/source"}},
	"body":              {"description": "The message: a Go template; {{ .column }} is a value from the recipient's CSV row.", "type": "string"},
	"batch_size":        {"description": "Recipients per request to the API (default 100).", "type": "integer"},
	"rate":              {"description": "At most this many messages per second, minute or hour: N/s, N/m or N/h (default: no limit).", "type": "string", "pattern": ratePattern},
	"concurrency":       {"description": "Requests in flight at once (default 1).", "type": "integer"},
	"strict":            {"description": "Refuse the campaign when a list holds an invalid number, instead of leaving it out.", "type": "boolean"},
	"send_window":       {"description": "When messages may land, in each recipient's own local time.", "$ref": "#/definitions/send_window"},
	"fallback_timezone": {"description": "The time zone for numbers whose zone cannot be told from the number (an IANA name such as Europe/London). Needs a send_window.", "type": "string", "minLength": 1},
	"not_before":        {"description": "Send nothing before this moment: an RFC 3339 time with its offset, e.g. 2026-12-01T09:00:00+01:00.", "type": "string", "pattern": instantPattern},
	"not_after":         {"description": "Send nothing after this moment: an RFC 3339 time with its offset.", "type": "string", "pattern": instantPattern},
	"prices":            {"description": "A price table (CSV: country,prefix,price_per_segment,currency), relative to the campaign file: plan shows the cost.", "type": "string", "minLength": 1},
	"budget":            {"description": "Limits that stop a campaign before it sends.", "$ref": "#/definitions/budget"},
	"empty_variables":   {"description": "What an empty template variable does: warn (default) or error.", "type": "string"},
	"frequency_cap":     {"description": "A stricter frequency cap than the project's (campaigns in a project only).", "$ref": "#/definitions/frequency_cap"},
	"kind":              kindSchema,
	"compliance":        complianceSchema,
	"opt_out_words":     wordsSchema,
	"dlt":               {"description": "The campaign's DLT registration in India (with compliance: [in]): its template id and template; the registration's other keys may sit beside them.", "$ref": "#/definitions/dlt"},

	"dlt.template_id":  {"description": "The template's id on the DLT platform, quoted.", "type": "string", "pattern": `\S`},
	"dlt.template":     {"description": "The template as registered, each variable part written {#var#}.", "type": "string", "pattern": `\S`},
	"dlt.max_variable": {"description": "The longest a variable may be, in characters: 1 to 1000 (default 30).", "type": "integer", "minimum": 1, "maximum": 1000},

	"budget.max_total": {"description": "The most the campaign may cost, in the price table's currency.",
		"anyOf": []any{js{"type": "number", "minimum": 0}, js{"type": "string", "pattern": `^[0-9]+(\.[0-9]+)?$`}}},
	"budget.max_segments_per_message": {"description": "The most segments one message may take.", "type": "integer", "minimum": 1},
	"budget.max_recipients":           {"description": "The most recipients the campaign may have.", "type": "integer", "minimum": 1},

	"recipients[].numbers":      {"description": "Phone numbers, quoted: in E.164 (\"+14155550101\") or national with default_region.", "type": "array", "minItems": 1, "items": js{"type": "string"}},
	"recipients[].file":         {"description": "A list file relative to the campaign file: .csv (a header row; one column holds the number) or .txt (one number a line).", "type": "string", "pattern": listPattern},
	"recipients[].phone_column": {"description": "The CSV column that holds the number (default phone).", "type": "string", "minLength": 1},

	"send_window.days": {"description": "The days messages may land (default: every day).", "type": "array", "minItems": 1, "uniqueItems": true,
		"items": js{"enum": []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}}},
	"send_window.from": {"description": "The local time the window opens, \"HH:MM\" in quotes.", "type": "string", "pattern": clockPattern},
	"send_window.to":   {"description": "The local time the window closes, \"HH:MM\" in quotes (\"24:00\" for midnight); after from.", "type": "string", "pattern": clockEndPattern},

	"frequency_cap.max": {"description": "At most this many messages to one number...", "type": "integer", "minimum": 1},
	"frequency_cap.per": {"description": "...in any window this long (e.g. 24h; at most 2160h).", "type": "string", "pattern": durationPattern},

	"provider.base_url":          {"description": "The API's base URL: https, or http on this machine only. No credentials in it.", "type": "string", "pattern": baseURLPattern},
	"provider.basic_auth":        {"description": "How the token request's Basic credentials are encoded: auto (default), base64 (RFC 7617) or literal.", "type": "string"},
	"provider.token_valid_hours": {"description": "How long a token is kept before a new one is asked for (default 24).", "type": "integer"},
	"provider.request_id_field":  {"description": "The older name of batch_id.", "type": "string", "pattern": pointerPattern},
	"provider.batch_id":          {"description": "A JSON pointer to the provider's id for the whole request in a send's success answer, e.g. /bulkId.", "type": "string", "pattern": pointerPattern},
	"provider.others":            {"description": "What a recipient no list of results names means: in_doubt (default) or sent (for providers that list only refusals).", "enum": []string{"in_doubt", "sent"}},
	"provider.max_recipients":    {"description": "The most recipients one request may carry.", "type": "integer", "minimum": 1},
	"provider.max_body_length":   {"description": "The longest body the provider takes, in characters.", "type": "integer", "minimum": 1},
	"provider.expected_latency":  {"description": "How long the provider takes to answer a send (default 200ms), for plan's estimate.", "type": "string", "pattern": durationPattern},
	"provider.results":           {"description": "Where a send's answer lists each recipient, for providers that answer per recipient: one list, or several.", "$ref": "#/definitions/results_lists"},

	"provider.results.list":      {"description": "A JSON pointer to a list in the answer, e.g. /messages.", "type": "string", "pattern": pointerPattern},
	"provider.results.number":    {"description": "Inside each element, a JSON pointer to the recipient's number, e.g. /to (\"\" for an element that is the number).", "type": "string", "pattern": elementPattern},
	"provider.results.status":    {"description": "Inside each element, a JSON pointer to its status, e.g. /status/name (\"\" for an element that is the status).", "type": "string", "pattern": elementPattern},
	"provider.results.outcome":   {"description": "Instead of status: what every element of this list means (sent, failed, retry or in_doubt).", "enum": []string{"sent", "failed", "retry", "in_doubt"}},
	"provider.results.id":        {"description": "Inside each element, a JSON pointer to the provider's id for the message, e.g. /messageId.", "type": "string", "pattern": elementPattern},
	"provider.results.reason":    {"description": "Inside each element, a JSON pointer to the provider's words.", "type": "string", "pattern": elementPattern},
	"provider.results.sent":      {"description": "Statuses that mean accepted.", "$ref": "#/definitions/statuses"},
	"provider.results.failed":    {"description": "Statuses that mean refused for good. A status no list names leaves its recipients in doubt.", "$ref": "#/definitions/statuses"},
	"provider.results.retry":     {"description": "Statuses that mean: not taken, try again later.", "$ref": "#/definitions/statuses"},
	"provider.results.duplicate": {"description": "Statuses that mean the provider may already have the message.", "$ref": "#/definitions/statuses"},
	"provider.results.optional":  {"description": "An answer without this list has it empty (else the batch is in doubt).", "type": "boolean"},

	"project.version":         {"description": "The file format's version: 1.", "type": "integer"},
	"project.state":           {"description": "The project's state: a PostgreSQL URL or keyword string (no password: PGPASSWORD or ~/.pgpass give it), or a folder for the state file, relative to this file.", "type": "string", "pattern": `\S`, "not": js{"pattern": `^postgres(ql)?://[^/?#@]*:[^/?#@]*@|[?&]password=|(^|\s)password\s*=`}},
	"project.provider":        {"description": "Provider settings every campaign shares; a campaign's own provider keys win, key by key. reports and replies are read from here only.", "$ref": "#/definitions/project_provider"},
	"project.frequency_cap":   {"description": "At most max messages to one number in any window of per, across every campaign of the project.", "$ref": "#/definitions/frequency_cap"},
	"project.test_recipients": {"description": "Numbers test sends may go to.", "type": "array", "items": js{"type": "string"}},
	"project.kind":            kindSchema,
	"project.compliance":      complianceSchema,
	"project.opt_out_words":   wordsSchema,
	"project.receive":         {"description": "How smsform receive takes the provider's delivery reports and replies: how a post is authenticated (the secret comes from SMSFORM_RECEIVE_SECRET) and which replies opt out.", "$ref": "#/definitions/receive"},
	"project.campaigns":       {"description": "Globs, relative to this file, that find the project's campaign files (default campaigns/*.yaml and *.yaml).", "type": "array", "minItems": 1, "items": js{"type": "string", "minLength": 1}},

	"project.provider.reports": {"description": "How the provider's delivery reports are read (smsform receive's POST /reports, smsform reports import): JSON pointers into each report, and the statuses that settle a message.", "$ref": "#/definitions/reports"},
	"project.provider.replies": {"description": "How the replies the provider forwards are read (smsform receive's POST /replies): JSON pointers into each reply.", "$ref": "#/definitions/replies"},

	"project.provider.reports.list":           {"description": "A JSON pointer to the list of reports in a body (\"\" for a body that is the list); leave it out when a body is one report.", "type": "string", "pattern": elementPattern},
	"project.provider.reports.id":             {"description": "Inside each report, a JSON pointer to the provider's id of the message, as its send answer gave it, e.g. /messageId.", "type": "string", "pattern": pointerPattern},
	"project.provider.reports.number":         {"description": "Inside each report, a JSON pointer to the recipient's number, e.g. /to.", "type": "string", "pattern": pointerPattern},
	"project.provider.reports.default_region": mappingRegion,
	"project.provider.reports.status":         {"description": "Inside each report, a JSON pointer to its status, e.g. /status.", "type": "string", "pattern": pointerPattern},
	"project.provider.reports.at":             {"description": "Inside each report, a JSON pointer to when it happened (RFC 3339, or a Unix time).", "type": "string", "pattern": pointerPattern},
	"project.provider.reports.reason":         {"description": "Inside each report, a JSON pointer to the provider's words on an undelivered message.", "type": "string", "pattern": pointerPattern},
	"project.provider.reports.delivered":      {"description": "Statuses that mean the message reached the phone.", "$ref": "#/definitions/statuses"},
	"project.provider.reports.undelivered":    {"description": "Statuses that mean it never will. A status no list names is pending, never delivered.", "$ref": "#/definitions/statuses"},
	"project.provider.reports.export":         {"description": "For reports import of a CSV export whose columns are named otherwise than the posted reports' fields: the columns to read instead, /COLUMN each.", "$ref": "#/definitions/reports_export"},

	"project.provider.reports.export.id":     {"description": "The column of the provider's id of the message, e.g. /MessageSid.", "type": "string", "pattern": columnPattern},
	"project.provider.reports.export.number": {"description": "The column of the recipient's number, e.g. /To.", "type": "string", "pattern": columnPattern},
	"project.provider.reports.export.status": {"description": "The column of the status, e.g. /Status.", "type": "string", "pattern": columnPattern},
	"project.provider.reports.export.at":     {"description": "The column of when it happened (RFC 3339, or a Unix time).", "type": "string", "pattern": columnPattern},
	"project.provider.reports.export.reason": {"description": "The column of the provider's words on an undelivered message.", "type": "string", "pattern": columnPattern},

	"project.provider.replies.list":           {"description": "A JSON pointer to the list of replies in a body (\"\" for a body that is the list); leave it out when a body is one reply.", "type": "string", "pattern": elementPattern},
	"project.provider.replies.number":         {"description": "Inside each reply, a JSON pointer to who sent it, e.g. /from.", "type": "string", "pattern": pointerPattern},
	"project.provider.replies.id":             {"description": "Inside each reply, a JSON pointer to the provider's own id of it (Twilio's /MessageSid): a reply posted again is known by it, and a second STOP or START of the same words counts.", "type": "string", "pattern": pointerPattern},
	"project.provider.replies.default_region": mappingRegion,
	"project.provider.replies.text":           {"description": "Inside each reply, a JSON pointer to what they wrote, e.g. /text.", "type": "string", "pattern": pointerPattern},
	"project.provider.replies.at":             {"description": "Inside each reply, a JSON pointer to when it was received.", "type": "string", "pattern": pointerPattern},

	"project.receive.auth":        {"description": "How a post is authenticated: hmac-sha256 (the lowercase hex HMAC-SHA256 of the raw body, in header), basic (any user, the secret as password), bearer (Authorization: Bearer SECRET) or query (?token=SECRET).", "enum": []string{"hmac-sha256", "basic", "bearer", "query"}},
	"project.receive.header":      {"description": "With auth: hmac-sha256, the header that carries the signature, e.g. X-Signature.", "type": "string", "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"},
	"project.receive.stop_words":  {"description": "Replies that opt the number out of every campaign of the project, case and the spaces, punctuation and emoji around a word aside (default STOP, STOPALL, STOP ALL, UNSUBSCRIBE, CANCEL, END, QUIT, REVOKE, OPT OUT, OPTOUT; the words of a phrase parted by any white space).", "$ref": "#/definitions/reply_words"},
	"project.receive.start_words": {"description": "Replies that opt the number back in (default START, UNSTOP).", "$ref": "#/definitions/reply_words"},
}

// The compliance keys, the same in a campaign and its project file.
var (
	kindSchema = js{"description": "What the campaign is: marketing (the default, held to every rule) or transactional (not held to the marketing rules).",
		"type": "string", "enum": []string{"marketing", "transactional"}}
	complianceSchema = js{"description": "The rule sets of law and carriers the campaign is held to (docs/compliance.md); a campaign's add to its project's.",
		"type": "array", "uniqueItems": true, "items": js{"enum": compliance.Known()}}
	wordsSchema = js{"description": "The opt-out words a marketing body must hold one of (default: STOP, UNSUBSCRIBE, OPT OUT, OPT-OUT, OPTOUT).",
		"type": "array", "minItems": 1, "items": js{"type": "string", "pattern": `\S`}}
)

// keyLists are the loader's key lists by the path of the mapping they
// belong to.
func keyLists() map[string][]string {
	return map[string][]string{
		"":                 topKeys(),
		"budget":           budgetKeys,
		"recipients[]":     sourceKeys,
		"send_window":      windowKeys,
		"frequency_cap":    {"max", "per"}, // frequencyCap's literal list
		"provider":         providerKeys,
		"provider.results": resultsKeys,
		"project":          projectKeys,
		"dlt":              dltKeys,
		// The keys of a project's provider block besides a campaign's.
		"project.provider":                projectProviderKeys,
		"project.provider.reports":        reportsKeys,
		"project.provider.reports.export": exportKeys,
		"project.provider.replies":        repliesKeys,
		"project.receive":                 receiveKeys,
	}
}

// object is the schema of the mapping at path: every key the loader knows
// there, nothing else, nulls allowed where the loader takes them for
// absent (every key it does not require).
func object(t *testing.T, path, description string, required []string, tags map[string]js) js {
	t.Helper()
	props := js{}
	for _, key := range keyLists()[path] {
		p := join(path, key)
		s, ok := keySchemas[p]
		if !ok {
			t.Errorf("the loader knows %s but the schema has no entry for it: add it to keySchemas", p)
			continue
		}
		s = maps.Clone(s)
		maps.Copy(s, tags[key])
		if ref, ok := s["$ref"]; ok {
			// draft-07 ignores whatever stands beside a $ref.
			delete(s, "$ref")
			s["allOf"] = []any{js{"$ref": ref}}
		}
		if !slices.Contains(required, key) {
			s = nullable(s)
		}
		props[key] = s
	}
	o := js{"type": "object", "additionalProperties": false, "properties": props}
	if description != "" {
		o["description"] = description
	}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// nullable lets a key be written with nothing after it, which the loader
// takes for absent.
func nullable(s js) js {
	desc := s["description"]
	inner := maps.Clone(s)
	delete(inner, "description")
	return js{"description": desc, "anyOf": []any{inner, js{"type": "null"}}}
}

// ruleSchemas is what the value rules (validate.go) of the keys of the
// mapping at path say, as schema keywords by key: required, eq, min, max
// and oneOf.
func ruleSchemas[T any](t *testing.T, path string, rules []rule[T]) (required []string, schemas map[string]js) {
	t.Helper()
	schemas = map[string]js{}
	var zero T
	for _, r := range rules {
		parent, key := "", r.key
		if dot := strings.LastIndex(r.key, "."); dot >= 0 {
			parent, key = r.key[:dot], r.key[dot+1:]
		}
		if parent != path {
			continue
		}
		kind := reflect.TypeOf(r.get(&zero)).Kind()
		s := js{}
		if r.required {
			required = append(required, key)
			// Strict validators want the type beside a keyword of it.
			switch kind {
			case reflect.String:
				s["type"], s["minLength"] = "string", 1
			case reflect.Slice:
				s["type"], s["minItems"] = "array", 1
			}
		}
		if r.eq != 0 {
			s["const"] = r.eq
		}
		bound := map[string]map[reflect.Kind]string{
			"min": {reflect.Int: "minimum", reflect.String: "minLength", reflect.Slice: "minItems"},
			"max": {reflect.Int: "maximum", reflect.String: "maxLength", reflect.Slice: "maxItems"},
		}
		if r.min != 0 {
			s[bound["min"][kind]] = r.min
		}
		if r.max != 0 {
			s[bound["max"][kind]] = r.max
		}
		if r.oneOf != nil {
			s["enum"] = r.oneOf
		}
		if r.check != "" && checkSchemas[r.check] == "" {
			t.Errorf("%s: check %q has no schema: add it to checkSchemas", r.key, r.check)
		}
		schemas[key] = s
	}
	return required, schemas
}

// checkSchemas says where the schema states each named check of a rule.
var checkSchemas = map[string]string{
	"campaign_name": "keySchemas[name]: pattern",
	"sender":        "definitions/sender",
	"region":        "definitions/region",
	"base_url":      "keySchemas[provider.base_url]: pattern",
	"rate":          "keySchemas[rate]: pattern",
}

// has is the schema of an object that holds key, with a value: the loader
// takes a key written with nothing after it (null) for absent. Strict
// validators (ajv --strict) want the type and the property said where
// required names it.
func has(key string) js {
	return js{"type": "object", "required": []string{key}, "properties": js{key: js{"not": js{"type": "null"}}}}
}

// with is s with one more keyword.
func with(s js, keyword string, v any) js {
	s = maps.Clone(s)
	if p, ok := v.(js); ok && keyword == "properties" {
		props := maps.Clone(s["properties"].(js))
		maps.Copy(props, p)
		v = props
	}
	s[keyword] = v
	return s
}

// defs are the shared definitions both schemas refer to.
func defs(t *testing.T) js {
	t.Helper()
	_, providerTags := ruleSchemas(t, "provider", campaignRules())
	regions := slices.Sorted(maps.Keys(phonenumbers.GetSupportedRegions()))
	source := object(t, "recipients[]", "A list file, or numbers written in the campaign.", nil, nil)
	// Exactly one of numbers and file; phone_column only with a .csv file.
	source["oneOf"] = []any{
		with(has("numbers"), "not", js{"anyOf": []any{has("file"), has("phone_column")}}),
		with(has("file"), "not", has("numbers")),
	}
	source["if"] = with(has("file"), "properties", js{"file": js{"type": "string", "pattern": txtPattern}})
	source["then"] = js{"type": "object", "not": has("phone_column")}
	window := object(t, "send_window", "", []string{"from", "to"}, nil)
	results := object(t, "provider.results", "", []string{"list", "number"}, nil)
	// status with its statuses, or outcome alone.
	results["oneOf"] = []any{
		with(has("status"), "not", has("outcome")),
		with(has("outcome"), "not", js{"anyOf": []any{has("status"), has("sent"), has("failed"), has("retry"), has("duplicate")}}),
	}
	dlt := object(t, "dlt", "", []string{"template_id", "template"}, nil)
	dlt["additionalProperties"] = js{"anyOf": []any{js{"type": "string"}, js{"type": "number"}}} // the registration's other keys
	provider := object(t, "provider", "", nil, providerTags)
	return js{
		"provider":         provider,
		"project_provider": projectProvider(t, provider),
		"reports":          reportsSchema(t),
		"reports_export":   exportSchema(t),
		"replies":          object(t, "project.provider.replies", "", []string{"number", "text"}, nil),
		"receive":          receiveSchema(t),
		"reply_words":      js{"type": "array", "minItems": 1, "items": js{"type": "string", "pattern": `\S`}},
		"results":          results,
		"results_lists":    js{"anyOf": []any{js{"$ref": "#/definitions/results"}, js{"type": "array", "minItems": 1, "items": js{"$ref": "#/definitions/results"}}}},
		"source":           source,
		"send_window":      window,
		"budget":           object(t, "budget", "", nil, nil),
		"dlt":              dlt,
		"frequency_cap":    object(t, "frequency_cap", "", []string{"max", "per"}, nil),
		"statuses":         js{"type": "array", "items": js{"anyOf": []any{js{"type": "string", "pattern": `\S`}, js{"type": "number"}, js{"type": "boolean"}}}},
		"sender": js{"type": "string", "anyOf": []any{
			js{"pattern": e164Pattern},
			js{"pattern": `^[0-9]{3,8}$`},
			js{"pattern": `^[A-Za-z0-9 ]*[A-Za-z][A-Za-z0-9 ]*$`, "maxLength": 11},
		}},
		"region": js{"enum": regions},
	}
}

// projectProvider is a project's provider block: a campaign's, and the
// keys read from a project file only.
func projectProvider(t *testing.T, provider js) js {
	t.Helper()
	s := maps.Clone(provider)
	props := maps.Clone(provider["properties"].(js))
	maps.Copy(props, object(t, "project.provider", "", nil, nil)["properties"].(js))
	s["properties"] = props
	return s
}

// reportsSchema is provider.reports: a status, a way to name the message
// (id or number) and a status that settles one.
func reportsSchema(t *testing.T) js {
	t.Helper()
	s := object(t, "project.provider.reports", "", []string{"status"}, nil)
	s["allOf"] = []any{
		js{"anyOf": []any{has("id"), has("number")}},
		js{"anyOf": []any{has("delivered"), has("undelivered")}},
	}
	return s
}

// exportSchema is provider.reports.export: a status and a way to name the
// message, as columns.
func exportSchema(t *testing.T) js {
	t.Helper()
	s := object(t, "project.provider.reports.export", "", []string{"status"}, nil)
	s["anyOf"] = []any{has("id"), has("number")}
	return s
}

// receiveSchema is receive:, whose header goes with hmac-sha256 alone.
func receiveSchema(t *testing.T) js {
	t.Helper()
	s := object(t, "project.receive", "", []string{"auth"}, nil)
	s["if"] = with(has("auth"), "properties", js{"auth": js{"const": "hmac-sha256"}})
	s["then"] = has("header")
	s["else"] = js{"type": "object", "not": has("header")}
	return s
}

func campaignSchema(t *testing.T) js {
	t.Helper()
	required, tags := ruleSchemas(t, "", campaignRules())
	s := object(t, "", "", required, tags)
	s["dependencies"] = js{"fallback_timezone": []string{"send_window"}}
	s["$schema"] = draft
	s["$id"] = schemaBase + "campaign.schema.json"
	s["title"] = "smsform campaign"
	s["description"] = "A campaign file of smsform (one campaign per file). `smsform validate` checks what a schema cannot: numbers, list files, templates, and the rules between keys."
	d := defs(t)
	for _, projectOnly := range []string{"project_provider", "reports", "replies", "receive", "reply_words"} {
		delete(d, projectOnly)
	}
	s["definitions"] = d
	return s
}

func projectSchema(t *testing.T) js {
	t.Helper()
	required, tags := ruleSchemas(t, "", projectRules())
	s := object(t, "project", "", required, tags)
	s["$schema"] = draft
	// receive: needs something to receive.
	mapped := func(key string) js { return with(has(key), "properties", js{key: js{"type": "object"}}) }
	s["dependencies"] = js{"receive": with(has("provider"), "properties", js{"provider": js{"anyOf": []any{mapped("reports"), mapped("replies")}}})}
	s["$id"] = schemaBase + "project.schema.json"
	s["title"] = "smsform project file (smsform.yaml)"
	s["description"] = "What every campaign of a project shares: the state, provider settings, the frequency cap, test recipients and where the campaign files are."
	d := defs(t)
	for _, unused := range []string{"source", "send_window", "budget", "sender", "dlt", "provider"} {
		delete(d, unused)
	}
	s["definitions"] = d
	return s
}

// TestSchemas regenerates schema/*.schema.json and compares them with the
// files: a key added to the loader without its schema fails here.
func TestSchemas(t *testing.T) {
	for name, schema := range map[string]js{"campaign.schema.json": campaignSchema(t), "project.schema.json": projectSchema(t)} {
		got, err := json.MarshalIndent(schema, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("..", "schema", name)
		if *updateSchemas {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./campaign -run TestSchemas -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what the loader's keys make: run go test ./campaign -run TestSchemas -update and commit it\n%s", path, firstDiff(string(want), string(got)))
		}
	}
	// Every entry is a key the loader knows: a key removed from it goes
	// from the schema too.
	for p := range keySchemas {
		dot := strings.LastIndex(p, ".")
		parent, key := "", p
		if dot >= 0 {
			parent, key = p[:dot], p[dot+1:]
		}
		if !slices.Contains(keyLists()[parent], key) {
			t.Errorf("keySchemas has %s, which the loader does not know", p)
		}
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d: file has %q, loader makes %q", i+1, w[i], g[i])
		}
	}
	return fmt.Sprintf("file has %d lines, loader makes %d", len(w), len(g))
}
