package campaign

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smsform/smsform/internal/mapping"
)

// sandboxProject is the project file of examples/delivery (make demo's),
// the one docs/sandbox.md gives for the sandbox's reports and replies (a
// test of internal/testharness keeps the two the same), and the line of
// each of its keys.
func sandboxProject(t *testing.T) (text string, line func(key string) int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "delivery", ProjectFile))
	if err != nil {
		t.Fatal(err)
	}
	text = string(b)
	return text, func(key string) int {
		for i, l := range strings.Split(text, "\n") {
			if l == key {
				return i + 1
			}
		}
		t.Fatalf("no line %q in the example", key)
		return 0
	}
}

// TestProjectReceive: the project file's reports and replies mappings and
// its receive: block are read as written.
func TestProjectReceive(t *testing.T) {
	dir := t.TempDir()
	project, line := sandboxProject(t)
	write(t, dir, map[string]string{"smsform.yaml": project})
	p, err := LoadProject(filepath.Join(dir, "smsform.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Reports
	if r == nil || r.List != nil || r.ID.String() != "/message_id" || r.Number.String() != "/to" || r.Status.String() != "/status" ||
		r.Reason.String() != "/reason" || r.At.String() != "/at" || r.Where != fmt.Sprintf("%s:%d", filepath.Join(dir, "smsform.yaml"), line("  reports:")) {
		t.Fatalf("reports: %+v", r)
	}
	if r.DeliveryOf(mapping.StringValue("DELIVERED")) != mapping.Delivered || r.DeliveryOf(mapping.StringValue("UNDELIVERED")) != mapping.Undelivered ||
		r.DeliveryOf(mapping.StringValue("delivered")) != mapping.Pending {
		t.Errorf("statuses: %+v", r)
	}
	if q := p.Replies; q == nil || q.Number.String() != "/from" || q.Text.String() != "/text" || q.At.String() != "/at" || q.List != nil {
		t.Errorf("replies: %+v", q)
	}
	if rc := p.Receive; rc == nil || rc.Auth != AuthHMAC || rc.Header != "X-Smsform-Signature" || rc.StopWords != nil || rc.Line != line("receive:") {
		t.Errorf("receive: %+v", rc)
	}

	write(t, dir, map[string]string{"smsform.yaml": `version: 1
provider:
  reports:
    list: ""
    number: /to
    status: /ok
    delivered: [true, 1]
receive:
  auth: basic
  stop_words: [STOP, "Arrêt"]
  start_words: [START]
`})
	p, err = LoadProject(filepath.Join(dir, "smsform.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Reports; r.List == nil || r.List.String() != "" || r.ID != nil || r.DeliveryOf(mapping.StringValue("1.0")) != mapping.Delivered ||
		r.DeliveryOf(mapping.BoolValue(true)) != mapping.Delivered {
		t.Errorf("reports: %+v", r)
	}
	if rc := p.Receive; rc.Auth != AuthBasic || strings.Join(rc.StopWords, ",") != "STOP,Arrêt" || strings.Join(rc.StartWords, ",") != "START" {
		t.Errorf("receive: %+v", rc)
	}
}

// TestProjectReceiveErrors: a mapping or a receive block that cannot work
// is refused with its line, the key and what to write.
func TestProjectReceiveErrors(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		want       []string
	}{
		{"reports without status, id or number, delivered", "provider:\n  reports:\n    reason: /r\n", []string{
			"smsform.yaml:4: provider.reports.status: required key is missing",
			"smsform.yaml:4: provider.reports.id: required key is missing (or number): a report must name its message",
			"smsform.yaml:4: provider.reports.delivered: required key is missing (or undelivered): without them every report is pending",
			"hint: provider.reports needs status"}},
		{"a status under both meanings", "provider:\n  reports:\n    id: /id\n    status: /s\n    delivered: [OK, 2]\n    undelivered: [\"2.0\"]\n", []string{
			`smsform.yaml:7: provider.reports.undelivered: status "2" is listed under both delivered and undelivered`}},
		{"a bad pointer", "provider:\n  reports:\n    id: message_id\n    status: /s\n    delivered: [OK]\n", []string{
			`smsform.yaml:4: provider.reports.id: "message_id" is not a JSON pointer`, "hint: write a JSON pointer (RFC 6901) to inside each report"}},
		{"an empty status pointer", "provider:\n  reports:\n    id: /id\n    status: \"\"\n    delivered: [OK]\n", []string{
			`smsform.yaml:5: provider.reports.status: "" is not a JSON pointer`}},
		{"an unknown key", "provider:\n  reports:\n    id: /id\n    status: /s\n    delivred: [OK]\n", []string{
			`smsform.yaml:6: provider.reports.delivred: unknown key`, `did you mean "delivered"?`}},
		{"an export without status or id", "provider:\n  reports:\n    id: /id\n    status: /s\n    delivered: [OK]\n    export:\n      at: /When\n", []string{
			"smsform.yaml:8: provider.reports.export.status: required key is missing",
			"smsform.yaml:8: provider.reports.export.id: required key is missing (or number)",
			"hint: provider.reports.export names the columns of the provider's CSV export"}},
		{"an export pointer that is no column", "provider:\n  reports:\n    id: /id\n    status: /s\n    delivered: [OK]\n    export:\n      id: /a/b\n      status: /S\n", []string{
			`smsform.yaml:8: provider.reports.export.id: "/a/b" names no column: a column is /NAME`}},
		{"a region that is none", "provider:\n  replies: {number: /f, text: /t, default_region: usa}\n  reports:\n    number: /to\n    default_region: us\n    status: /s\n    delivered: [OK]\n", []string{
			`smsform.yaml:3: provider.replies.default_region: "usa" is not a known region code`, "hint: use a two-letter ISO 3166 code",
			`smsform.yaml:6: provider.reports.default_region: "us" is not a known region code`, "hint: write it in capitals: US"}},
		{"replies without text", "provider:\n  replies:\n    number: /from\n", []string{
			"smsform.yaml:4: provider.replies.text: required key is missing", "hint: provider.replies needs number and text"}},
		{"receive without auth", "provider:\n  replies: {number: /f, text: /t}\nreceive:\n  header: X-Sig\n", []string{
			"smsform.yaml:5: receive.auth: required key is missing: smsform receive takes only posts it can authenticate"}},
		{"an unknown auth", "provider:\n  replies: {number: /f, text: /t}\nreceive:\n  auth: none\n", []string{
			`smsform.yaml:5: receive.auth: "none" is not a way to authenticate: write hmac-sha256, basic, bearer, query`}},
		{"hmac without its header", "provider:\n  replies: {number: /f, text: /t}\nreceive:\n  auth: hmac-sha256\n", []string{
			"smsform.yaml:5: receive.header: required key is missing with auth: hmac-sha256"}},
		{"a header with bearer", "provider:\n  replies: {number: /f, text: /t}\nreceive:\n  auth: bearer\n  header: X-Token\n", []string{
			"smsform.yaml:6: receive.header: header is read with auth: hmac-sha256 only"}},
		{"a header that is not one", "provider:\n  replies: {number: /f, text: /t}\nreceive:\n  auth: hmac-sha256\n  header: \"X Sig\"\n", []string{
			`smsform.yaml:6: receive.header: "X Sig" is not a header name`}},
		{"a word both ways", "provider:\n  replies: {number: /f, text: /t}\nreceive:\n  auth: query\n  stop_words: [STOP, stop]\n  start_words: [\" Stop! \"]\n", []string{
			`smsform.yaml:6: receive.stop_words[1]: "stop" is listed twice (case and punctuation aside)`,
			`smsform.yaml:7: receive.start_words: "STOP" is both a stop word and a start word`}},
		{"words that are not", "provider:\n  replies: {number: /f, text: /t}\nreceive:\n  auth: query\n  stop_words: [1, \"\", \"?!\"]\n  start_words: []\n", []string{
			"smsform.yaml:6: receive.stop_words[0]: must be a word, not a number (1)", `receive.stop_words[1]: must be a word, not the text ""`,
			`receive.stop_words[2]: must be a word, not the text "?!"`,
			"smsform.yaml:7: receive.start_words: must be a non-empty list of words, not a list"}},
		{"receive with nothing to receive", "receive:\n  auth: query\n", []string{
			"smsform.yaml:2: receive: receive has nothing to receive: the provider block maps no reports and no replies"}},
		{"a secret written in receive", "provider:\n  replies: {number: /f, text: /t}\nreceive:\n  auth: query\n  secret: abc\n", []string{
			"smsform.yaml:6: receive.secret: secrets must not be written"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{"smsform.yaml": "version: 1\n" + tt.file})
			_, err := LoadProject(filepath.Join(dir, "smsform.yaml"))
			if err == nil {
				t.Fatal("accepted")
			}
			got := errorText(err)
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("%s\ndoes not say %q", got, want)
				}
			}
		})
	}
}

// errorText is err as a person reads it: each error, then its hint.
func errorText(err error) string {
	var b strings.Builder
	var each []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		each = j.Unwrap()
	} else {
		each = []error{err}
	}
	for _, e := range each {
		b.WriteString(e.Error() + "\n")
		if ce, ok := e.(*Error); ok && ce.Hint != "" {
			b.WriteString("hint: " + ce.Hint + "\n")
		}
	}
	return b.String()
}

// TestCampaignRefusesReports: a campaign's provider block may not map
// reports or replies: receive serves the project, and would never read it.
func TestCampaignRefusesReports(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"c.yaml": tinyCampaign + "provider:\n  base_url: https://sms.example.com\n  reports:\n    id: /id\n  replies: {}\n"})
	_, err := Load(filepath.Join(dir, "c.yaml"))
	got := errorText(err)
	for _, want := range []string{
		"c.yaml:9: provider.reports: reports is read from the project file only",
		"c.yaml:11: provider.replies: replies is read from the project file only",
		"hint: move it to the provider: block of the project file, smsform.yaml",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%s\ndoes not say %q", got, want)
		}
	}
	if strings.Count(got, "provider.reports") != 1 {
		t.Errorf("reports refused more than once:\n%s", got)
	}
}

// TestProjectReportsExport: provider.reports.export is read as the
// export's columns, beside the posted reports' pointers.
func TestProjectReportsExport(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"smsform.yaml": "version: 1\nprovider:\n  reports:\n    id: /data/id\n    status: /data/status\n    delivered: [OK]\n    export:\n      number: /To\n      status: /Status\n      reason: /Error~1Code\n"})
	p, err := LoadProject(filepath.Join(dir, "smsform.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e := p.Reports.Export
	if e == nil || !strings.HasSuffix(e.Where, "smsform.yaml:7") || e.ID != nil || e.Number.String() != "/To" || e.Status.String() != "/Status" || e.Reason.String() != "/Error~1Code" || e.At != nil ||
		p.Reports.Status.String() != "/data/status" {
		t.Errorf("export: %+v", e)
	}
}
