package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/internal/exitcode"
)

// The ready mappings of docs/providers.md, each applied through the
// command line against a provider of the test's own on loopback that
// answers a send the way that real provider documents its answer (the
// links are in the docs, beside each mapping). The mappings are read from
// the docs, so that the page and the test cannot drift apart.

// fate is what a provider's answer says of one recipient, and what
// smsform's state must then record of it.
type fate struct {
	status   string // the provider's status for it ("" when it gives none)
	words    string // the provider's words beside the status
	deliver  bool   // the provider sends the message
	throttle bool   // "not now", this once: the next request for it gets accept
	parts    int    // elements it lists the message under (one per part), 0: one
	want     string // what the state must record: sent, failed or in_doubt
	reason   string // a part of the reason the state must keep ("" for sent)
	// unnamed: a status the mapping deliberately does not name, which the
	// run's summary must list with its recipients.
	unnamed bool
}

// answered is one recipient of a send, as the provider answers it.
type answered struct {
	to   string // the number as smsform sent it (E.164)
	fate fate   // what the provider says of it in this answer
	id   string // the provider's id for the message, "" when it made none
}

// realProvider is one real provider's documented answer to a send.
type realProvider struct {
	name     string // its heading under "Ready mappings" in docs/providers.md
	accept   fate   // what it answers for a message it takes (a throttled one, sent again)
	fates    []fate // cycled over the campaign's recipients, in order
	idPrefix string // of the ids it gives messages, "" when it gives none per message
	// batchID is the id its answer to a request for to gives the whole
	// request, nil when it gives none.
	batchID func(to string) string
	// body is its answer to one send: HTTP status and body.
	body func(rs []answered) (int, string)
}

// realProviders are the providers of "Ready mappings", each answering as
// its documentation (linked in docs/providers.md) shows.
var realProviders = []realProvider{
	{
		name:     "Infobip",
		accept:   infobipAccept,
		idPrefix: "41637021837204",
		batchID:  constant(infobipBulkID),
		fates: []fate{
			infobipAccept, infobipAccept, infobipAccept, infobipAccept,
			{status: "REJECTED_DESTINATION", words: "Invalid destination address", want: "failed",
				reason: "refused by the provider: REJECTED_DESTINATION: Invalid destination address"},
			{status: "REJECTED_DND", words: "Destination on do-not-disturb list", want: "failed",
				reason: "refused by the provider: REJECTED_DND: Destination on do-not-disturb list"},
			{status: "REJECTED_THROTTLED", words: "Throttled", throttle: true, want: "sent"},
			{status: "REJECTED_SYSTEM_ERROR", words: "System error, please retry", throttle: true, want: "sent"},
			// The v1 API's success: taken and sent, but not named by the
			// mapping (written for v2), so in doubt and never resent.
			{status: "MESSAGE_ACCEPTED", words: "Message accepted", deliver: true, want: "in_doubt",
				reason: `status "MESSAGE_ACCEPTED"`, unnamed: true},
			infobipAccept,
		},
		body: infobipBody,
	},
	{
		name:     "Vonage (SMS API)",
		accept:   fate{status: "0", deliver: true, want: "sent"},
		idPrefix: "0A00000012345",
		fates: []fate{
			{status: "0", deliver: true, want: "sent"},
			{status: "0", deliver: true, parts: 2, want: "sent"},
			{status: "0", deliver: true, want: "sent"},
			{status: "0", deliver: true, parts: 3, want: "sent"},
			{status: "0", deliver: true, want: "sent"},
			{status: "0", deliver: true, want: "sent"},
			// Vonage's error elements carry no "to": with one recipient
			// a request (max_recipients: 1), an element that names no
			// number can only be about that one.
			{status: "7", words: "Number Barred", want: "failed", reason: "refused by the provider: 7: Number Barred"},
			{status: "6", words: "Invalid Message", want: "failed", reason: "refused by the provider: 6: Invalid Message"},
			{status: "1", words: "Throughput Rate Exceeded - please wait and retry", throttle: true, want: "sent"},
			{status: "5", words: "Internal Error", want: "in_doubt", reason: `status "5"`, unnamed: true},
		},
		body: vonageBody,
	},
	{
		name:    "Plivo",
		accept:  fate{deliver: true, want: "sent"},
		batchID: constant(plivoAPIID),
		fates: []fate{
			{deliver: true, want: "sent"}, {deliver: true, want: "sent"}, {deliver: true, want: "sent"},
			{deliver: true, want: "sent"}, {deliver: true, want: "sent"}, {deliver: true, want: "sent"},
			{deliver: true, want: "sent"},
			{status: "invalid", want: "failed", reason: "refused by the provider: listed at /invalid_number"},
			{deliver: true, want: "sent"},
			{status: "invalid", want: "failed", reason: "refused by the provider: listed at /invalid_number"},
		},
		body: plivoBody,
	},
	{
		name:     "Textlocal",
		accept:   fate{deliver: true, want: "sent"},
		idPrefix: "tl-",
		batchID:  constant(textlocalBatchID),
		fates: []fate{
			{deliver: true, want: "sent"}, {deliver: true, want: "sent"}, {deliver: true, want: "sent"},
			// Left out of messages: refused, or not; the docs do not say.
			{status: "absent", want: "in_doubt", reason: "does not mention this recipient"},
			{deliver: true, want: "sent"},
		},
		body: textlocalBody,
	},
	{
		name:     "Africa's Talking",
		accept:   fate{status: "101", words: "Success", deliver: true, want: "sent"},
		idPrefix: "ATXid_",
		fates: []fate{
			{status: "101", words: "Success", deliver: true, want: "sent"},
			{status: "102", words: "Success", deliver: true, want: "sent"},
			{status: "403", words: "InvalidPhoneNumber", want: "failed", reason: "refused by the provider: 403: InvalidPhoneNumber"},
			{status: "100", words: "Success", deliver: true, want: "sent"},
			{status: "406", words: "UserInBlacklist", want: "failed", reason: "refused by the provider: 406: UserInBlacklist"},
			// Held for a risk review: it may still go. The fake lets it go.
			{status: "401", words: "RiskHold", deliver: true, want: "in_doubt", reason: `status "401"`, unnamed: true},
			{status: "101", words: "Success", deliver: true, want: "sent"},
			{status: "500", words: "InternalServerError", want: "in_doubt", reason: `status "500"`, unnamed: true},
			{status: "101", words: "Success", deliver: true, want: "sent"},
			{status: "101", words: "Success", deliver: true, want: "sent"},
		},
		body: africasTalkingBody,
	},
	{
		name:   "CM.com",
		accept: fate{status: "Accepted", deliver: true, want: "sent"},
		fates: []fate{
			{status: "Accepted", deliver: true, want: "sent"},
			{status: "Accepted", deliver: true, want: "sent"},
			{status: "Rejected", words: "A body without content was found", want: "failed",
				reason: "refused by the provider: Rejected: A body without content was found"},
			{status: "Accepted", deliver: true, want: "sent"},
			// CM's words hold the number: the state keeps them without it.
			{status: "Rejected", words: "Gsm '%s' is not a number.", want: "failed", reason: "is not a number."},
			{status: "Accepted", deliver: true, want: "sent"},
			// A status CM does not document (a new one, say): taken here.
			{status: "Scheduled", deliver: true, want: "in_doubt", reason: `status "Scheduled"`, unnamed: true},
			{status: "Accepted", deliver: true, want: "sent"},
		},
		body: cmBody,
	},
	{
		name:    "Telnyx",
		accept:  fate{status: "queued", deliver: true, want: "sent"},
		batchID: telnyxID,
		fates: []fate{
			{status: "queued", deliver: true, want: "sent"},
			{status: "queued", deliver: true, want: "sent"},
			// Refused as a request: a 4xx with Telnyx's errors.
			{status: "10002", words: "Invalid phone number", want: "failed",
				reason: "send: HTTP 400 10002: The phone number is invalid."},
			{status: "sending", deliver: true, want: "sent"},
			// Too many requests: a 429, then taken.
			{status: "10011", words: "Too many requests", throttle: true, want: "sent"},
			{status: "delivery_unconfirmed", deliver: true, want: "in_doubt", reason: `status "delivery_unconfirmed"`, unnamed: true},
			{status: "queued", deliver: true, want: "sent"},
			{status: "sending_failed", want: "failed", reason: "refused by the provider: status sending_failed"},
			{status: "queued", deliver: true, want: "sent"},
			{status: "queued", deliver: true, want: "sent"},
		},
		body: telnyxBody,
	},
}

// The ids the providers' answers give a whole request.
const (
	infobipBulkID    = "4163702183720462729"
	plivoAPIID       = "5e1a7c1e-4b6f-11ef-9a0b-0242ac120002"
	textlocalBatchID = "300120"
)

func constant(id string) func(string) string { return func(string) string { return id } }

// telnyxID is the id of Telnyx's message to to, which the mapping keeps
// as the request's (Telnyx takes one number a request).
func telnyxID(to string) string { return "40385f64-5717-4562-b3fc-" + strings.TrimPrefix(to, "+") }

var infobipAccept = fate{status: "PENDING_ACCEPTED", words: "Message sent to next instance", deliver: true, want: "sent"}

// infobipStatus is a status object of Infobip's answers: its group and id
// by name (REJECTED_THROTTLED is in no published table: no id known).
func infobipStatus(name, description string) map[string]any {
	group := map[string]struct {
		groupID, id int
		groupName   string
	}{
		"PENDING_ACCEPTED":      {1, 26, "PENDING"},
		"REJECTED_DESTINATION":  {5, 52, "REJECTED"},
		"REJECTED_DND":          {5, 10, "REJECTED"},
		"REJECTED_SYSTEM_ERROR": {5, 21, "REJECTED"},
		"REJECTED_THROTTLED":    {5, 0, "REJECTED"},
		"MESSAGE_ACCEPTED":      {0, 0, "ACCEPTED"},
	}[name]
	return map[string]any{"groupId": group.groupID, "groupName": group.groupName, "id": group.id, "name": name, "description": description}
}

// infobipBody answers as /sms/2/text/advanced: every destination listed,
// without its +.
func infobipBody(rs []answered) (int, string) {
	msgs := make([]map[string]any, 0, len(rs))
	for _, r := range rs {
		m := map[string]any{"to": strings.TrimPrefix(r.to, "+"), "status": infobipStatus(r.fate.status, r.fate.words)}
		if r.id != "" {
			m["messageId"] = r.id
		}
		msgs = append(msgs, m)
	}
	return http.StatusOK, marshal(map[string]any{"bulkId": infobipBulkID, "messages": msgs})
}

// vonageBody answers as /sms/json: a message taken is listed once per
// part, with its number and id; a refusal is only a status and words.
func vonageBody(rs []answered) (int, string) {
	var msgs []map[string]any
	for _, r := range rs {
		if r.fate.status != "0" {
			msgs = append(msgs, map[string]any{"status": r.fate.status, "error-text": r.fate.words})
			continue
		}
		for part := range max(r.fate.parts, 1) {
			id := r.id
			if part > 0 {
				id = fmt.Sprintf("%s-%d", r.id, part+1)
			}
			msgs = append(msgs, map[string]any{"to": strings.TrimPrefix(r.to, "+"), "message-id": id, "status": "0",
				"remaining-balance": "3.14159265", "message-price": "0.03330000", "network": "23410"})
		}
	}
	return http.StatusOK, marshal(map[string]any{"message-count": fmt.Sprint(len(msgs)), "messages": msgs})
}

// plivoBody answers as the Message API to several numbers: 202, a uuid
// per number taken (in no stated order) and the numbers refused under
// invalid_number, left out when there are none.
func plivoBody(rs []answered) (int, string) {
	doc := map[string]any{"api_id": plivoAPIID, "message": "message(s) queued"}
	var uuids, invalid []string
	for i, r := range rs {
		if r.fate.deliver {
			uuids = append(uuids, fmt.Sprintf("0d4c%04d-4b6f-11ef-8f1d-0242ac120002", i))
		} else {
			invalid = append(invalid, strings.TrimPrefix(r.to, "+"))
		}
	}
	slices.Reverse(uuids)
	doc["message_uuid"] = uuids
	if invalid != nil {
		doc["invalid_number"] = invalid
	}
	return http.StatusAccepted, marshal(doc)
}

// textlocalBody answers as /send/: the messages it made, each number a
// JSON number; a number it did not take is simply not there.
func textlocalBody(rs []answered) (int, string) {
	var msgs []string
	for _, r := range rs {
		if r.fate.deliver {
			msgs = append(msgs, fmt.Sprintf(`{"id":%q,"recipient":%s}`, r.id, strings.TrimPrefix(r.to, "+")))
		}
	}
	return http.StatusOK, fmt.Sprintf(`{"balance":980,"batch_id":%s,"cost":%d,"num_messages":%d,`+
		`"message":{"num_parts":1,"sender":"ACME","content":"Hello."},"messages":[%s],"status":"success"}`,
		textlocalBatchID, len(msgs), len(msgs), strings.Join(msgs, ","))
}

// africasTalkingBody answers as /version1/messaging: every number, in
// E.164, with a numeric statusCode and Success or the error's name.
func africasTalkingBody(rs []answered) (int, string) {
	recipients := make([]string, 0, len(rs))
	taken := 0
	for _, r := range rs {
		el := fmt.Sprintf(`{"statusCode":%s,"number":%q,"status":%q`, r.fate.status, r.to, r.fate.words)
		if r.id != "" {
			taken++
			el = fmt.Sprintf(`{"statusCode":%s,"number":%q,"status":%q,"cost":"KES 0.8000","messageId":%q`, r.fate.status, r.to, r.fate.words, r.id)
		}
		recipients = append(recipients, el+"}")
	}
	return http.StatusCreated, fmt.Sprintf(`{"SMSMessageData":{"Message":"Sent to %d/%d Total Cost: KES %.4f","Recipients":[%s]}}`,
		taken, len(rs), 0.8*float64(taken), strings.Join(recipients, ","))
}

// cmBody answers as /v1.0/message: every message, its number in the 00
// form; a 400 when none was accepted.
func cmBody(rs []answered) (int, string) {
	msgs := make([]map[string]any, 0, len(rs))
	accepted := 0
	for _, r := range rs {
		to := "00" + strings.TrimPrefix(r.to, "+")
		m := map[string]any{"to": to, "status": r.fate.status, "reference": nil, "parts": 1, "messageDetails": nil, "messageErrorCode": 0}
		if r.fate.status == "Accepted" {
			accepted++
		}
		if r.fate.words != "" {
			m["parts"] = 0
			m["messageDetails"] = strings.ReplaceAll(r.fate.words, "%s", to)
			delete(m, "messageErrorCode") // no code is made up for the fake's refusals
		}
		msgs = append(msgs, m)
	}
	code, status := 201, http.StatusOK
	if accepted == len(rs) {
		code = 0
	}
	if accepted == 0 {
		status = http.StatusBadRequest
	}
	return status, marshal(map[string]any{"details": fmt.Sprintf("Created %d message(s)", accepted), "errorCode": code, "messages": msgs})
}

// telnyxBody answers as /v2/messages, one number a request: the message
// and its destination's status, or Telnyx's errors for a request it
// refuses (4xx) or has too many of (429).
func telnyxBody(rs []answered) (int, string) {
	if len(rs) != 1 {
		return http.StatusBadRequest, `{"errors":[{"code":"10015","title":"Bad Request","detail":"to must be one number"}]}`
	}
	r := rs[0]
	switch r.fate.status {
	case "10002":
		return http.StatusBadRequest, `{"errors":[{"code":"10002","title":"Invalid phone number","detail":"The phone number is invalid."}]}`
	case "10011":
		return http.StatusTooManyRequests, `{"errors":[{"code":"10011","title":"Too many requests","detail":"You have exceeded the maximum number of allowed requests."}]}`
	}
	return http.StatusOK, marshal(map[string]any{"data": map[string]any{
		"record_type": "message", "direction": "outbound", "type": "SMS", "id": telnyxID(r.to),
		"from":   map[string]any{"phone_number": "+18445550001", "carrier": "TELNYX LLC", "line_type": "VoIP"},
		"to":     []map[string]any{{"phone_number": r.to, "status": r.fate.status, "carrier": "EE", "line_type": "Wireless"}},
		"text":   "Hello.",
		"parts":  1,
		"errors": []any{},
	}})
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// realFake serves one realProvider on loopback: smsform's token endpoint,
// and its send answered in the provider's shape. It keeps its own account
// of what it delivered and the id it gave each message, the ground truth
// the state is held to.
type realFake struct {
	p     *realProvider
	fates map[string]fate // by number (E.164)

	mu        sync.Mutex
	sends     int               // send requests
	asked     map[string]int    // send requests that named each number
	delivered map[string]int    // messages delivered to each number
	ids       map[string]string // the id of each number's message, "" when none
	lastHTTP  map[string]int    // the HTTP status of the last answer to name each number
	nextID    int
	strangers []string // numbers asked for that the campaign does not hold
}

func newRealFake(p *realProvider, numbers []string) *realFake {
	f := &realFake{p: p, fates: map[string]fate{}, asked: map[string]int{}, delivered: map[string]int{},
		ids: map[string]string{}, lastHTTP: map[string]int{}}
	for i, n := range numbers {
		f.fates[n] = p.fates[i%len(p.fates)]
	}
	return f
}

func (f *realFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case api.TokenPath:
		validToken(w, r)
	case api.SendPath:
		f.send(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *realFake) send(w http.ResponseWriter, r *http.Request) {
	var req api.SendRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.sends++
	rs := make([]answered, len(req.To))
	for i, to := range req.To {
		rs[i] = f.answer(to)
	}
	status, body := f.p.body(rs)
	for _, to := range req.To {
		f.lastHTTP[to] = status
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// answer decides what the provider says of one recipient of a send, and
// delivers the message when it takes it. f.mu is held.
func (f *realFake) answer(to string) answered {
	ft, ok := f.fates[to]
	if !ok {
		f.strangers = append(f.strangers, to)
		ft = fate{status: "REJECTED", words: "unknown number"}
	}
	f.asked[to]++
	if ft.throttle && f.asked[to] > 1 {
		ft = f.p.accept
	}
	a := answered{to: to, fate: ft}
	if !ft.deliver {
		return a
	}
	f.delivered[to]++
	if f.p.idPrefix != "" {
		f.nextID++
		a.id = fmt.Sprintf("%s%04d", f.p.idPrefix, f.nextID)
		if f.ids[to] == "" {
			f.ids[to] = a.id
		}
	}
	return a
}

// snapshot is what the fake did so far.
func (f *realFake) snapshot() (sends int, delivered map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sends, maps.Clone(f.delivered)
}

// realNumbers are the campaign's recipients: 20 numbers, in the order
// the fates are dealt.
func realNumbers() []string {
	out := make([]string, 20)
	for i := range out {
		out[i] = fmt.Sprintf("+4474001234%02d", i)
	}
	return out
}

// TestRealProviders applies, for each ready mapping of docs/providers.md,
// a 20-recipient campaign through the command line against a fake of
// that provider, then applies it again, and holds the state to what the
// fake did: recorded sent is exactly what it accepted, nobody delivered
// twice, refusals failed with the provider's words, statuses the mapping
// does not name in doubt (and in the run's summary).
func TestRealProviders(t *testing.T) {
	mappings := readyMappings(t)
	for _, p := range realProviders {
		if _, ok := mappings[p.name]; !ok {
			t.Errorf("docs/providers.md has no ready mapping for %s", p.name)
		}
	}
	for name := range mappings {
		if !slices.ContainsFunc(realProviders, func(p realProvider) bool { return p.name == name }) {
			t.Errorf("the ready mapping for %s in docs/providers.md is tested against no fake", name)
		}
	}
	for i := range realProviders {
		p := &realProviders[i]
		mapping, ok := mappings[p.name]
		if !ok {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			testRealProvider(t, p, mapping)
		})
	}
}

func testRealProvider(t *testing.T, p *realProvider, mapping string) {
	numbers := realNumbers()
	fake := newRealFake(p, numbers)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	run := realCampaign(t, srv.URL, numbers, mapping)

	code, stdout, stderr := run("apply", "--auto-approve", "--json")
	if code != exitcode.Incomplete {
		t.Errorf("first apply: exit %d, want %d (some recipients failed or in doubt)\n%s", code, exitcode.Incomplete, stderr)
	}
	checkUnnamed(t, fake, stdout)
	sends, delivered := fake.snapshot()

	// A second apply must send nobody: the sent are done, the failed and
	// in doubt wait for a person.
	if code, _, stderr := run("apply", "--auto-approve", "--json"); code != exitcode.Incomplete {
		t.Errorf("second apply: exit %d, want %d\n%s", code, exitcode.Incomplete, stderr)
	}
	if again, deliveredAgain := fake.snapshot(); again != sends || !maps.Equal(deliveredAgain, delivered) {
		t.Errorf("second apply made %d more send requests; delivered %v, then %v", again-sends, delivered, deliveredAgain)
	}

	_, list, stderr := run("state", "list", "--json", "--show-numbers")
	recorded := stateRecipients(t, list, stderr)
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.strangers) > 0 {
		t.Errorf("the provider was asked for numbers the campaign does not hold: %v", fake.strangers)
	}
	for _, n := range numbers {
		checkRecipient(t, fake, n, recorded[n])
		checkProviderWords(t, fake, n, recorded[n])
	}
}

// realCampaign writes a campaign to numbers with the provider block
// mapping, its state in a temporary folder, and returns how to run
// smsform on it against the provider at baseURL.
func realCampaign(t *testing.T, baseURL string, numbers []string, mapping string) func(args ...string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	writeFile(t, path, fmt.Sprintf("version: 1\nname: ready-mapping\nsender: ACME\nrecipients:\n  - numbers: [%s]\nbody: \"Hello.\"\nbatch_size: 5\n%s",
		`"`+strings.Join(numbers, `", "`)+`"`, mapping))
	env := map[string]string{"SMSFORM_BASE_URL": baseURL, "SMSFORM_CLIENT_ID": confID, "SMSFORM_CLIENT_SECRET": confSecret,
		"SMSFORM_TOKEN_DIR": filepath.Join(dir, "tokens"), "CI": "true"}
	return func(args ...string) (int, string, string) {
		if args[0] == "state" {
			args = append([]string{"state", args[1], path}, args[2:]...)
		} else {
			args = append([]string{args[0], path}, args[1:]...)
		}
		var stdout, stderr strings.Builder
		err := cli.Run(context.Background(), args, cli.Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }})
		return exitCode(err, &stderr), stdout.String(), stderr.String()
	}
}

// recorded is one recipient as `state list --json` shows it.
type recorded struct {
	Status, Reason  string
	ProviderStatus  string `json:"provider_status"`
	ProviderID      string `json:"provider_id"`
	ProviderBatchID string `json:"provider_batch_id"`
}

func stateRecipients(t *testing.T, list, stderr string) map[string]recorded {
	t.Helper()
	var doc struct {
		Recipients []struct {
			Phone string
			recorded
		} `json:"recipients"`
	}
	if err := json.Unmarshal([]byte(list), &doc); err != nil {
		t.Fatalf("state list: %v\n%s\n%s", err, list, stderr)
	}
	out := map[string]recorded{}
	for _, r := range doc.Recipients {
		out[r.Phone] = r.recorded
	}
	return out
}

// checkRecipient holds one recipient's record to what the fake did.
// fake.mu is held.
func checkRecipient(t *testing.T, fake *realFake, n string, r recorded) {
	t.Helper()
	ft := fake.fates[n]
	got := fake.delivered[n]
	if got > 1 {
		t.Errorf("%s was delivered %d times", n, got)
	}
	if r.Status != ft.want {
		t.Errorf("%s (%s %s): state %q, want %q (reason %q)", n, ft.status, ft.words, r.Status, ft.want, r.Reason)
	}
	switch r.Status {
	case "sent":
		if got != 1 {
			t.Errorf("%s recorded sent, but the provider delivered it %d times", n, got)
		}
	case "failed":
		if got != 0 {
			t.Errorf("%s recorded failed, but the provider delivered it", n)
		}
	}
	if ft.want == "sent" {
		return
	}
	if !strings.Contains(r.Reason, ft.reason) {
		t.Errorf("%s: reason %q, want it to hold %q", n, r.Reason, ft.reason)
	}
	if digits := strings.TrimPrefix(n, "+44"); strings.Contains(r.Reason, digits) {
		t.Errorf("%s: the reason shows the number: %q", n, r.Reason)
	}
}

// checkUnnamed checks that the first run's summary names each status the
// mapping leaves unnamed, with the recipients that got it. fake.mu is
// not held.
func checkUnnamed(t *testing.T, fake *realFake, stdout string) {
	t.Helper()
	want := map[string]int{}
	for _, ft := range fake.fates {
		if ft.unnamed {
			want[ft.status]++
		}
	}
	got := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Type    string `json:"type"`
			Summary *struct {
				Unrecognised []struct {
					Status     string `json:"status"`
					Recipients int    `json:"recipients"`
				} `json:"unrecognised_statuses"`
			} `json:"summary"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Type != "summary" || e.Summary == nil {
			continue
		}
		for _, u := range e.Summary.Unrecognised {
			got[u.Status] += u.Recipients
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("the summary names unrecognised statuses %v, want %v", got, want)
	}
}

// checkProviderWords holds what the state keeps of the provider's own
// words for a recipient to the fake's: the id it gave the message, the
// id of the request in its answer, and, for a status the mapping does not
// name, that status. fake.mu is held.
func checkProviderWords(t *testing.T, fake *realFake, n string, r recorded) {
	t.Helper()
	if want := fake.ids[n]; r.ProviderID != want {
		t.Errorf("%s: provider_id %q, want %q (the id the provider gave its message)", n, r.ProviderID, want)
	}
	want := ""
	if code := fake.lastHTTP[n]; fake.p.batchID != nil && code >= 200 && code < 300 {
		want = fake.p.batchID(n)
	}
	if r.ProviderBatchID != want {
		t.Errorf("%s: provider_batch_id %q, want %q (the id the provider's answer gave the request)", n, r.ProviderBatchID, want)
	}
	switch ft := fake.fates[n]; {
	case ft.unnamed && r.ProviderStatus != ft.status:
		t.Errorf("%s: provider_status %q, want %q, the status the mapping does not name", n, r.ProviderStatus, ft.status)
	case r.Status == "sent" && r.ProviderStatus != "":
		t.Errorf("%s: recorded sent with provider_status %q: only a status that is not plainly sent is kept", n, r.ProviderStatus)
	}
}

// readyMappings reads the section "Ready mappings" of docs/providers.md:
// each provider's heading and the one YAML block under it, its
// provider: block. Every JSON block there (an example answer) must be
// JSON.
func readyMappings(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("docs", "providers.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Ready mappings\n")
	if !ok {
		t.Fatal(`docs/providers.md has no section "Ready mappings"`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	out := map[string]string{}
	for _, sub := range strings.Split(section, "\n### ")[1:] {
		name, text, _ := strings.Cut(sub, "\n")
		blocks := fenced(text)
		for _, b := range blocks["json"] {
			if !json.Valid([]byte(b)) {
				t.Errorf("%s: an example answer is not JSON:\n%s", name, b)
			}
		}
		if len(blocks["yaml"]) != 1 || !strings.HasPrefix(blocks["yaml"][0], "provider:\n") {
			t.Errorf("%s: want one YAML block, a provider: block; found %q", name, blocks["yaml"])
			continue
		}
		out[name] = blocks["yaml"][0]
	}
	if len(out) < 6 {
		t.Errorf("%d ready mappings in docs/providers.md, want at least 6", len(out))
	}
	return out
}

// fenced returns the fenced code blocks of Markdown text by language.
func fenced(text string) map[string][]string {
	out := map[string][]string{}
	lang, block, in := "", []string{}, false
	for line := range strings.Lines(text) {
		switch {
		case !in && strings.HasPrefix(line, "```"):
			lang, block, in = strings.TrimSpace(strings.TrimPrefix(line, "```")), nil, true
		case in && strings.HasPrefix(line, "```"):
			out[lang] = append(out[lang], strings.Join(block, ""))
			in = false
		case in:
			block = append(block, line)
		}
	}
	return out
}
