package campaign

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/compliance"
)

// allErrors flattens what Load or Read returned into its *Errors.
func allErrors(t *testing.T, err error) []*Error {
	t.Helper()
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []*Error
	for _, e := range errs {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("error %q (%T) is not a *campaign.Error", e, e)
		}
		out = append(out, ce)
	}
	return out
}

// loadAndRead loads a campaign and reads all its sources, returning the
// first error: it is how plan meets a campaign, and so how a user does.
func loadAndRead(path string) error {
	c, err := Load(path)
	if err != nil {
		return err
	}
	for _, s := range append(c.Recipients, c.Exclude...) {
		if err := s.Read(context.Background(), func(Entry) error { return nil }); err != nil {
			return err
		}
	}
	return nil
}

const okHead = "version: 1\nname: bad-case\nsender: ACME\nbody: Hello\n"

// writeCase writes a campaign whose recipients are sources (YAML lines) plus
// list files, into a fresh folder, and returns the campaign's path.
func writeCase(t *testing.T, campaign string, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "campaign.yaml")
	if err := os.WriteFile(p, []byte(campaign), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func withList(name string, data []byte) func(t *testing.T) string {
	return func(t *testing.T) string {
		return writeCase(t, okHead+"recipients:\n  - file: "+name+"\n", map[string][]byte{name: data})
	}
}

func withCampaign(data []byte) func(t *testing.T) string {
	return func(t *testing.T) string { return writeCase(t, string(data), nil) }
}

// TestBadInput is the catalogue of bad campaign files and lists: each must
// fail with a message that names the file, the line and the key.
func TestBadInput(t *testing.T) {
	bigLine := bytes.Repeat([]byte("+14155550101,"), 10<<20/13) // a 10 MB file without a line break
	tests := []struct {
		name  string
		file  string                    // under testdata/bad, or
		setup func(t *testing.T) string // a generated case
		want  []string                  // substrings of the error, in order
		hint  string                    // substring of some error's hint
	}{
		// Structure: unknown keys, wrong types, missing keys.
		{name: "unknown key", file: "unknown_key.yaml", want: []string{"unknown_key.yaml:7: bach_size: unknown key"}, hint: `did you mean "batch_size"?`},
		{name: "unknown key in a source", file: "source_unknown_key.yaml", want: []string{"source_unknown_key.yaml:6: recipients[0].phone_colum: unknown key"}, hint: `"phone_column"`},
		{name: "duplicate key", file: "duplicate_key.yaml", want: []string{"duplicate_key.yaml:7: name: key is repeated (first on line 2)"}},
		{name: "wrong type", file: "wrong_type_batch.yaml", want: []string{`wrong_type_batch.yaml:7: batch_size: must be a whole number, not the text "many"`}, hint: "batch_size: 100"},
		{name: "version as text", file: "version_string.yaml", want: []string{`version_string.yaml:1: version: must be a whole number`}},
		{name: "version 0", setup: withCampaign([]byte("version: 0\nname: x\nsender: ACME\nrecipients: [{numbers: [\"+1\"]}]\nbody: hi\n")), want: []string{"campaign.yaml:1: version: unsupported version 0"}},
		{name: "version 2", file: "version_2.yaml", want: []string{"version_2.yaml:1: version: unsupported version 2"}, hint: "version: 1"},
		{name: "missing sender", file: "missing_sender.yaml", want: []string{"missing_sender.yaml:1: sender: required key is missing"}, hint: "sender: ACME"},
		{name: "missing body", file: "missing_body.yaml", want: []string{"missing_body.yaml:1: body: required key is missing"}},
		{name: "empty body", file: "empty_body.yaml", want: []string{"empty_body.yaml:6: body: must not be empty"}},
		{name: "integer overflow", file: "batch_size_overflow.yaml", want: []string{"batch_size_overflow.yaml:7: batch_size: number 99999999999999999999 is out of range"}},
		{name: "strict as text", file: "strict_string.yaml", want: []string{`strict_string.yaml:7: strict: must be true or false, not the text "yes"`}, hint: "true or false"},
		{name: "provider not a mapping", file: "provider_not_mapping.yaml", want: []string{"provider_not_mapping.yaml:7: provider: must be a mapping of keys (base_url, basic_auth, token_valid_hours, request_id_field, batch_id, max_recipients, max_body_length, expected_latency, results, others)"}},
		{name: "recipients as mapping", file: "recipients_mapping.yaml", want: []string{"recipients_mapping.yaml:5: recipients: must be a list of sources, not a mapping"}},
		{name: "exclude as text", file: "exclude_not_list.yaml", want: []string{`exclude_not_list.yaml:7: exclude: must be a list of sources`}},

		// Values.
		{name: "bad name", file: "bad_name.yaml", want: []string{`bad_name.yaml:2: name: "Spring Sale" is not a valid name`}, hint: "lowercase"},
		{name: "sender too long", file: "bad_sender.yaml", want: []string{`bad_sender.yaml:3: sender: sender "THIS NAME IS TOO LONG" is 21 characters`}},
		{name: "sender as YAML number", file: "sender_number.yaml", want: []string{"sender_number.yaml:3: sender: must be text, not a number (+14155550101)"}, hint: `quote it: "+14155550101"`},
		{name: "unknown region", file: "bad_region.yaml", want: []string{`bad_region.yaml:7: default_region: "XX" is not a known region code`}},
		{name: "region in lower case", file: "lower_region.yaml", want: []string{`lower_region.yaml:7: default_region: "gb" is not a known region code`}, hint: "write it in capitals: GB"},
		{name: "ftp base_url", file: "bad_url.yaml", want: []string{`bad_url.yaml:8: provider.base_url: "ftp://sms.example.com" is not an absolute http or https URL`}},
		{name: "base_url with credentials, not shown", file: "url_credentials.yaml", want: []string{`url_credentials.yaml:8: provider.base_url: "https://xxxxx@sms.example.com" holds credentials before the host`}, hint: "SMSFORM_CLIENT_SECRET"},
		{name: "base_url whose token ends the host early", file: "url_fragment_credentials.yaml", want: []string{`url_fragment_credentials.yaml:8: provider.base_url: "https://xxxxx@sms.example.com" holds credentials before the host`}},
		{name: "relative base_url", file: "relative_url.yaml", want: []string{"relative_url.yaml:8: provider.base_url:"}},
		{name: "basic_auth", file: "bad_basic_auth.yaml", want: []string{`bad_basic_auth.yaml:8: provider.basic_auth: "bearer" is not one of: auto, base64, literal`}},
		{name: "token hours", file: "token_hours.yaml", want: []string{"token_hours.yaml:8: provider.token_valid_hours: 200 is too large: the most allowed is 168"}},
		{name: "batch size", file: "batch_size_big.yaml", want: []string{"batch_size_big.yaml:7: batch_size: 5000 is too large: the most allowed is 1000"}},
		{name: "concurrency 0", file: "concurrency_zero.yaml", want: []string{"concurrency_zero.yaml:7: concurrency: 0 is too small: the least allowed is 1"}},
		{name: "rate unit", file: "bad_rate.yaml", want: []string{`bad_rate.yaml:7: rate: "5/d" is not a rate`}, hint: "N/s, N/m or N/h"},
		{name: "rate zero", file: "rate_zero.yaml", want: []string{`rate_zero.yaml:7: rate: "0/s" is not a rate`}},
		{name: "rate without unit", file: "rate_number.yaml", want: []string{"rate_number.yaml:7: rate: a rate needs a unit"}, hint: "write 5/s"},

		// Secrets.
		{name: "client_secret", file: "secret_provider.yaml", want: []string{"secret_provider.yaml:9: provider.client_secret: secrets must not be written in the campaign file"}, hint: "set SMSFORM_CLIENT_ID and SMSFORM_CLIENT_SECRET in the environment"},
		{name: "access_token", file: "secret_top.yaml", want: []string{"secret_top.yaml:7: access_token: secrets must not be written"}, hint: "SMSFORM_CLIENT_SECRET"},
		{name: "client_id", file: "client_id.yaml", want: []string{"client_id.yaml:8: provider.client_id: unknown key"}, hint: "set SMSFORM_CLIENT_ID in the environment"},

		// Sources.
		{name: "no recipients", file: "no_recipients.yaml", want: []string{"no_recipients.yaml:4: recipients: must list at least 1 source"}},
		{name: "numbers and file", file: "source_both.yaml", want: []string{"source_both.yaml:5: recipients[0]: a source has either numbers: or file:, not both"}},
		{name: "neither numbers nor file", file: "source_neither.yaml", want: []string{"source_neither.yaml:5: recipients[0]: source needs numbers: or file:"}},
		{name: "source as text", file: "source_string.yaml", want: []string{`source_string.yaml:5: recipients[0]: each source must be a mapping`}, hint: `- file: lists/customers.csv`},
		{name: "number as YAML int", file: "numbers_int.yaml", want: []string{"numbers_int.yaml:7: recipients[0].numbers[1]: phone number +14155550102 is written as a YAML number"}, hint: `"+14155550102"`},
		{name: "national number as YAML int", setup: withCampaign([]byte(okHead + "recipients:\n  - numbers: [0740012345]\n")), want: []string{"campaign.yaml:6: recipients[0].numbers[0]: phone number 0740012345 is written as a YAML number"}, hint: `quote it with its leading + or 0: "0740012345"`},
		{name: "international number without +", setup: withCampaign([]byte(okHead + "recipients:\n  - numbers: [447400123459]\n")), want: []string{"recipients[0].numbers[0]: phone number 447400123459"}, hint: `quote it with its leading + or 0: "+447400123459"`},
		{name: "empty numbers", file: "numbers_empty.yaml", want: []string{"numbers_empty.yaml:5: recipients[0].numbers: list is empty"}},
		{name: "phone_column on numbers", file: "numbers_column.yaml", want: []string{"numbers_column.yaml:6: recipients[0].phone_column: phone_column applies only to CSV files"}},
		{name: "phone_column on txt", file: "phone_column_txt.yaml", want: []string{"phone_column_txt.yaml:9: exclude[0].phone_column: phone_column applies only to CSV files"}},
		{name: "missing list", file: "missing_file.yaml", want: []string{"missing_file.yaml:8: exclude[0].file: list testdata/bad/lists/nope.txt: file does not exist"}, hint: "relative to the campaign file's folder"},
		{name: "missing list outside", file: "escape_list.yaml", want: []string{"escape_list.yaml:8: exclude[0].file: list testdata/lists-outside/nope.csv: file does not exist"}},
		{name: "folder as list", file: "folder_as_file.yaml", want: []string{"folder_as_file.yaml:8: exclude[0].file: list testdata/bad/lists.txt: not a regular file"}},
		{name: "spreadsheet", file: "bad_ext.yaml", want: []string{`bad_ext.yaml:8: exclude[0].file: "lists/optout.xlsx" is neither a .csv nor a .txt file`}},

		// Templates.
		{name: "unknown function", file: "template_func.yaml", want: []string{`template_func.yaml:8: body: invalid template: function "env" not defined`}},
		{name: "range loop", file: "template_range.yaml", want: []string{"template_range.yaml:6: body: invalid template: range is not allowed in a body"}},
		{name: "recursive template", file: "template_define.yaml", want: []string{"template_define.yaml:6: body: invalid template: define and block are not allowed"}},
		{name: "template syntax", file: "template_syntax.yaml", want: []string{`template_syntax.yaml:8: body: invalid template: "{{ .name" is never closed with }}`}, hint: "close every action with }}"},
		{name: "unclosed action before words", file: "template_unclosed.yaml", want: []string{`template_unclosed.yaml:8: body: invalid template: "{{ .city book now at…" is never closed with }}`}},

		// YAML itself, and files that are not YAML.
		{name: "alias", file: "alias.yaml", want: []string{"alias.yaml:2: YAML anchors and aliases (&name, *name) are not allowed"}},
		{name: "billion laughs", file: "billion_laughs.yaml", want: []string{"billion_laughs.yaml:1: YAML anchors and aliases"}},
		{name: "deep nesting", file: "deep.yaml", want: []string{"deep.yaml:7: YAML is nested more than 16 levels deep"}},
		{name: "two documents", file: "multi_doc.yaml", want: []string{"multi_doc.yaml:7: file holds more than one YAML document"}},
		{name: "empty file", file: "empty.yaml", want: []string{"empty.yaml: file is empty"}},
		{name: "comments only", file: "comments_only.yaml", want: []string{"comments_only.yaml: file holds no YAML, only comments"}},
		{name: "list at the top", file: "not_mapping.yaml", want: []string{"not_mapping.yaml:1: file must hold a mapping of keys"}},
		{name: "bad indentation", file: "bad_yaml.yaml", want: []string{"bad_yaml.yaml:3: invalid YAML: mapping values are not allowed"}},
		{name: "missing campaign", file: "no-such-campaign.yaml", want: []string{"no-such-campaign.yaml: file does not exist"}},
		{name: "binary campaign", setup: withCampaign([]byte("version: 1\nname: x\x00\x01\x02")), want: []string{"campaign.yaml:2: file holds binary data"}},
		{name: "latin-1 campaign", setup: withCampaign([]byte("version: 1\nname: caf\xe9\n")), want: []string{"campaign.yaml:2: file is not valid UTF-8 text"}, hint: "UTF-8"},
		{name: "huge campaign", setup: withCampaign(bytes.Repeat([]byte("# padding\n"), 200_000)), want: []string{"campaign.yaml: file is larger than 1048576 bytes"}},
		{name: "campaign deeper than YAML allows", setup: withCampaign([]byte(okHead + "x: " + strings.Repeat("[", 20000))), want: []string{"campaign.yaml:5: invalid YAML: exceeded max depth"}},
		{name: "many errors", setup: withCampaign([]byte(okHead + strings.Repeat("x: 1\n", 200))), want: []string{"campaign.yaml:5: x: unknown key", "campaign.yaml:6: x: key is repeated", "too many errors"}},

		// Lists.
		{name: "ragged CSV", file: "csv_ragged.yaml", want: []string{"lists/ragged.csv:3: row has a different number of fields than the header row (2)"}},
		{name: "no phone column", file: "csv_no_phone.yaml", want: []string{`lists/mobile.csv:1: phone: no column "phone" in the header row (columns: mobile, name)`}, hint: "set phone_column"},
		{name: "phone column in other case", file: "csv_case_phone.yaml", want: []string{`lists/case.csv:1: phone: no column "phone"`}, hint: `set phone_column: "Phone"`},
		{name: "duplicate column", file: "csv_dup_header.yaml", want: []string{"lists/dup_header.csv:1: name: column name is used twice (columns 2 and 3)"}},
		{name: "unnamed column", file: "csv_empty_header.yaml", want: []string{"lists/empty_header.csv:1: column 2 has no name"}},
		{name: "empty CSV", file: "csv_empty.yaml", want: []string{"lists/empty.csv: file is empty: a CSV list needs a header row"}},
		{name: "bare quote", file: "csv_bare_quote.yaml", want: []string{`lists/bare_quote.csv:3: a " appears inside an unquoted field`}},
		{name: "unclosed quote", file: "csv_unclosed_quote.yaml", want: []string{"lists/unclosed_quote.csv:3: a quoted field is not closed properly"}},
		{name: "phone column clash", file: "csv_phone_clash.yaml", want: []string{`lists/clash.csv:1: phone: column "phone" is not the phone column ("mobile" is)`}},
		{name: "binary CSV", setup: withList("list.csv", []byte("phone,name\n+14155550101,Ann\n\x00\x01\x02PK")), want: []string{"list.csv:3: file holds binary data (a NUL byte), not CSV text"}},
		{name: "latin-1 CSV", setup: withList("list.csv", []byte("phone,name\n+14155550101,Ren\xe9e\n")), want: []string{"list.csv:2: name: field is not valid UTF-8 text"}},
		{name: "10 MB one-line CSV", setup: withList("list.csv", append([]byte("phone\n"), bigLine...)), want: []string{"list.csv:2: a record is longer than 65536 bytes"}},
		{name: "10 MB unclosed quote", setup: withList("list.csv", append([]byte("phone\n\"+1\n"), bytes.Repeat([]byte("+14155550101\n"), 10<<20/13)...)), want: []string{"list.csv:2: a record is longer than 65536 bytes"}},
		{name: "long record after a multi-line field", setup: withList("list.csv", append([]byte("phone,note\n+1,\"a\nb\"\n"), bigLine...)), want: []string{"list.csv:4: a record is longer than 65536 bytes"}},
		{name: "10 MB one-line text", setup: withList("list.txt", bigLine), want: []string{"list.txt:1: line is longer than 65536 bytes"}},
		{name: "binary text list", setup: withList("list.txt", []byte("+14155550101\n\x7fELF\x02\x01\x01\x00\x00")), want: []string{"list.txt:2: file holds binary data"}},
		{name: "latin-1 text list", setup: withList("list.txt", []byte("# caf\xe9\n+14155550101\n\xff\n")), want: []string{"list.txt:1: line is not valid UTF-8 text"}},
		{name: "list is a dangling symlink", setup: func(t *testing.T) string {
			p := writeCase(t, okHead+"recipients:\n  - file: list.csv\n", nil)
			if err := os.Symlink("gone.csv", filepath.Join(filepath.Dir(p), "list.csv")); err != nil {
				t.Skip(err)
			}
			return p
		}, want: []string{"campaign.yaml:6: recipients[0].file: list ", "list.csv: file does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("testdata", "bad", tt.file)
			if tt.setup != nil {
				path = tt.setup(t)
			}
			err := loadAndRead(path)
			if err == nil {
				t.Fatalf("%s: no error, want %q", path, tt.want)
			}
			msg := err.Error()
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error\n%s\ndoes not contain (in order) %q", msg, w)
				}
				rest = rest[i+len(w):]
			}
			errs := allErrors(t, err)
			if tt.hint != "" && !hasHint(errs, tt.hint) {
				t.Errorf("no hint contains %q in\n%s", tt.hint, msg)
			}
			for _, e := range errs {
				if e.Hint != "" && strings.Contains(e.Error(), e.Hint) {
					t.Errorf("Error() repeats the hint: %q", e.Error())
				}
			}
		})
	}
}

// TestNumberAsYAMLNumberHint: the hint quotes a number YAML read as a number
// as it was written, so a national number keeps its leading 0 and gains no
// +; only a number written without a leading 0 gets the +.
func TestNumberAsYAMLNumberHint(t *testing.T) {
	p := writeCase(t, okHead+"recipients:\n  - numbers: [0740012345, 07400123456, 07400123459, 447400123459, +447400123458]\n", nil)
	errs := allErrors(t, loadAndRead(p))
	want := []string{`"0740012345"`, `"07400123456"`, `"07400123459"`, `"+447400123459"`, `"+447400123458"`}
	if len(errs) != len(want) {
		t.Fatalf("%d errors, want %d: %v", len(errs), len(want), errs)
	}
	for i, e := range errs {
		if h := "quote it with its leading + or 0: " + want[i]; e.Hint != h {
			t.Errorf("%s: hint %q, want %q", e.Field, e.Hint, h)
		}
	}
}

func hasHint(errs []*Error, s string) bool {
	for _, e := range errs {
		if strings.Contains(e.Hint, s) {
			return true
		}
	}
	return false
}

func TestBadInputCatalogueIsComplete(t *testing.T) {
	// Every file under testdata/bad must be exercised by TestBadInput.
	src, err := os.ReadFile("load_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) < 25 {
		t.Errorf("only %d bad campaign files", len(files))
	}
	for _, f := range files {
		if !bytes.Contains(src, []byte(`file: "`+filepath.Base(f)+`"`)) {
			t.Errorf("%s is not in TestBadInput", f)
		}
	}
}

func TestLoadErrorsInFileOrder(t *testing.T) {
	p := writeCase(t, "version: 3\nname: Bad Name\nsender: ACME\nbatch: 1\nrecipients: []\nbody: hi\n", nil)
	_, err := Load(p)
	errs := allErrors(t, err)
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	want := []string{"version", "name", "batch", "recipients"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields = %q, want %q\n%v", got, want, err)
	}
	for i := 1; i < len(errs); i++ {
		if errs[i].Line < errs[i-1].Line {
			t.Errorf("errors out of file order: %v", err)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "c.yaml", Line: 12, Field: "recipients[0].phone_column", Msg: "must be text", Hint: "quote it"}, "c.yaml:12: recipients[0].phone_column: must be text"},
		{Error{File: "c.yaml", Line: 3, Msg: "invalid YAML"}, "c.yaml:3: invalid YAML"},
		{Error{File: "c.yaml", Field: "body", Msg: "x"}, "c.yaml: body: x"},
		{Error{File: "c.yaml", Msg: "file does not exist"}, "c.yaml: file does not exist"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestLoadMinimalDefaults(t *testing.T) {
	c, err := Load("testdata/good/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Campaign{
		Path:           "testdata/good/minimal.yaml",
		Dir:            "testdata/good",
		Version:        1,
		Name:           "hello",
		Sender:         "ACME",
		Provider:       Provider{BasicAuth: "auto", TokenValidHours: 24, ExpectedLatency: DefaultExpectedLatency},
		Body:           "Hello from ACME.",
		BodyLine:       6,
		BatchSize:      100,
		Concurrency:    1,
		EmptyVariables: "warn",
		Recipients: []Source{{Kind: KindInline, Numbers: []string{"+14155550101"}, Line: 5,
			campaignFile: "testdata/good/minimal.yaml", numberLines: []int{5}}},
		Exclude:    []Source{},
		Compliance: Compliance{Kind: compliance.Marketing},
	}
	c.tmpl = nil
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", c, want)
	}
	if c.Rate.PerSecond() != 0 {
		t.Errorf("rate = %v, want unlimited", c.Rate)
	}
}

func TestLoadFull(t *testing.T) {
	c, err := Load("testdata/good/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Provider != (Provider{BaseURL: "http://127.0.0.1:8080", BasicAuth: "literal", TokenValidHours: 12, ExpectedLatency: DefaultExpectedLatency}) {
		t.Errorf("provider = %+v", c.Provider)
	}
	if c.DefaultRegion != "GB" || c.BatchSize != 50 || c.Concurrency != 4 || !c.Strict {
		t.Errorf("settings = %q %d %d %v", c.DefaultRegion, c.BatchSize, c.Concurrency, c.Strict)
	}
	if c.Rate != (Rate{N: 30, Per: time.Minute}) || c.Rate.PerSecond() != 0.5 {
		t.Errorf("rate = %+v", c.Rate)
	}
	if want := `Hi {{ default "friend" .name | title }}, the spring sale starts today.`; c.Body != want {
		t.Errorf("body = %q, want %q (trailing newline dropped)", c.Body, want)
	}
	kinds := []SourceKind{KindCSV, KindCSV, KindInline}
	for i, s := range c.Recipients {
		if s.Kind != kinds[i] || s.Escapes {
			t.Errorf("recipients[%d] = %+v", i, s)
		}
	}
	if s := c.Recipients[1]; s.PhoneColumn != "mobile" || s.Path != filepath.Join("testdata", "good", "lists", "people.csv") || s.Line != 11 {
		t.Errorf("recipients[1] = %+v", s)
	}
	if c.Recipients[0].PhoneColumn != "phone" {
		t.Errorf("default phone_column = %q", c.Recipients[0].PhoneColumn)
	}
	if c.Exclude[0].Kind != KindText {
		t.Errorf("exclude[0] = %+v", c.Exclude[0])
	}
	wantFiles := []string{"testdata/good/full.yaml", "testdata/good/lists/customers.csv", "testdata/good/lists/people.csv", "testdata/good/lists/optout.txt"}
	if got := c.Files(); !reflect.DeepEqual(got, wantFiles) {
		t.Errorf("Files() = %q, want %q", got, wantFiles)
	}
}

func TestLoadValues(t *testing.T) {
	// Values at the edges of what is allowed.
	tests := []struct {
		yaml  string
		check func(c *Campaign) bool
	}{
		{"rate: 5/s", func(c *Campaign) bool { return c.Rate.PerSecond() == 5 }},
		{"rate: 0.5/s", func(c *Campaign) bool { return c.Rate.PerSecond() == 0.5 }},
		{"rate: 3600/h", func(c *Campaign) bool { return c.Rate.PerSecond() == 1 }},
		{"batch_size: 1000", func(c *Campaign) bool { return c.BatchSize == 1000 }},
		{"concurrency: 64", func(c *Campaign) bool { return c.Concurrency == 64 }},
		{"strict: false", func(c *Campaign) bool { return !c.Strict }},
		{"rate:", func(c *Campaign) bool { return c.Rate == Rate{} }},
		{"exclude:", func(c *Campaign) bool { return len(c.Exclude) == 0 }},
		{"provider:\n  base_url: https://sms.example.com/v1", func(c *Campaign) bool { return c.Provider.BaseURL == "https://sms.example.com/v1" }},
		{"provider:\n  token_valid_hours: 168", func(c *Campaign) bool { return c.Provider.TokenValidHours == 168 }},
		{"default_region: US", func(c *Campaign) bool { return c.DefaultRegion == "US" }},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			p := writeCase(t, okHead+"recipients:\n  - numbers: [\"+14155550101\"]\n"+tt.yaml+"\n", nil)
			c, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("unexpected campaign %+v", c)
			}
		})
	}
}

func TestSenders(t *testing.T) {
	// The sender rules are sms.CheckSender's; Load must let each kind through.
	for _, s := range []string{"ACME", "ACME Shop", `"+14155550101"`, `"12345"`} {
		t.Run(s, func(t *testing.T) {
			p := writeCase(t, "version: 1\nname: x\nsender: "+s+"\nrecipients: [{numbers: [\"+14155550101\"]}]\nbody: hi\n", nil)
			if _, err := Load(p); err != nil {
				t.Error(err)
			}
		})
	}
	for _, s := range []string{`"AC-ME"`, `"12"`, `"123456789"`} {
		t.Run(s, func(t *testing.T) {
			p := writeCase(t, "version: 1\nname: x\nsender: "+s+"\nrecipients: [{numbers: [\"+14155550101\"]}]\nbody: hi\n", nil)
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), "campaign.yaml:3: sender: ") {
				t.Errorf("err = %v, want a sender error on line 3", err)
			}
		})
	}
}

func TestSecretKeys(t *testing.T) {
	for _, k := range []string{"client_secret", "secret", "token", "access_token", "password", "api_key", "apikey", "clientSecret", "API-KEY", "auth_token"} {
		if !isSecretKey(k) {
			t.Errorf("isSecretKey(%q) = false", k)
		}
	}
	for _, k := range []string{"token_valid_hours", "base_url", "name", "sender", "client_id", "phone_column"} {
		if isSecretKey(k) {
			t.Errorf("isSecretKey(%q) = true", k)
		}
	}
}

func TestSecretValueNotInError(t *testing.T) {
	p := writeCase(t, okHead+"recipients: [{numbers: [\"+14155550101\"]}]\nprovider:\n  password: s3cr3t-value\n", nil)
	_, err := Load(p)
	if err == nil {
		t.Fatal("no error")
	}
	for _, e := range allErrors(t, err) {
		if strings.Contains(e.Error()+e.Hint, "s3cr3t-value") {
			t.Errorf("error shows the secret: %v", e)
		}
	}
}

func TestEscapes(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "campaign")
	for _, d := range []string{filepath.Join(dir, "lists"), filepath.Join(root, "shared")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(dir, "lists", "in.txt"), filepath.Join(root, "shared", "out.txt")} {
		if err := os.WriteFile(f, []byte("+14155550101\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A link out of the folder is refused (TestListLinks).
	campaign := okHead + "recipients:\n  - file: lists/in.txt\n  - file: ../shared/out.txt\n  - file: lists/../lists/in.txt\n  - file: " + filepath.Join(root, "shared", "out.txt") + "\n"
	p := filepath.Join(dir, "campaign.yaml")
	if err := os.WriteFile(p, []byte(campaign), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{false, true, false, true}
	for i, s := range c.Recipients {
		if s.Escapes != want[i] {
			t.Errorf("recipients[%d] %s: Escapes = %v, want %v", i, s.File, s.Escapes, want[i])
		}
	}
}
