package campaign

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// write puts files (path -> content) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const tinyCampaign = `version: 1
name: tiny
sender: ACME
recipients:
  - numbers: ["+447400123459"]
body: Hello.
`

func TestFindProject(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"repo/.git/HEAD":                  "ref: refs/heads/main\n",
		"repo/smsform.yaml":               "version: 1\n",
		"repo/campaigns/deep/c.yaml":      tinyCampaign,
		"repo/sub/smsform.yaml":           "version: 1\n",
		"repo/sub/c.yaml":                 tinyCampaign,
		"norepo/.git/HEAD":                "",
		"norepo/campaigns/c.yaml":         tinyCampaign,
		"above/smsform.yaml":              "version: 1\n",
		"above/inner/.git/HEAD":           "",
		"above/inner/campaigns/c.yaml":    tinyCampaign,
		"above/inner/campaigns/x/d.yaml":  tinyCampaign,
		"above/inner/campaigns/x/e/f.yml": tinyCampaign,
		// A .git inside a project hides it not: an empty folder is no
		// repository, and a repository nested in the project's is part
		// of it.
		"repo/empty/.git/.keep":      "",
		"repo/empty/c.yaml":          tinyCampaign,
		"repo/module/.git":           "gitdir: ../.git/modules/module\n",
		"repo/module/c.yaml":         tinyCampaign,
		"repo/clone/.git/HEAD":       "ref: refs/heads/main\n",
		"repo/clone/deep/c.yaml":     tinyCampaign,
		"plain/smsform.yaml":         "version: 1\n",
		"plain/campaigns/.git/.keep": "",
		"plain/campaigns/c.yaml":     tinyCampaign,
		"plain/notgit/.git":          "not a repository\n",
		"plain/notgit/c.yaml":        tinyCampaign,
	})
	for _, tc := range []struct{ dir, want string }{
		{"repo/campaigns/deep", "repo/smsform.yaml"},
		{"repo/sub", "repo/sub/smsform.yaml"}, // the nearest wins
		{"repo", "repo/smsform.yaml"},
		{"norepo/campaigns", ""},          // stops at the repository's root
		{"above/inner/campaigns/x/e", ""}, // never above .git
		{"above", "above/smsform.yaml"},   // outside the repository
		{"above/nonexistent/..", "above/smsform.yaml"},
		{"repo/empty", "repo/smsform.yaml"},      // an empty .git folder is no repository
		{"repo/module", "repo/smsform.yaml"},     // a submodule is part of its superproject
		{"repo/clone/deep", "repo/smsform.yaml"}, // so is a repository inside another
		{"plain/campaigns", "plain/smsform.yaml"},
		{"plain/notgit", "plain/smsform.yaml"},
	} {
		got, err := FindProject(filepath.Join(root, tc.dir))
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		want := ""
		if tc.want != "" {
			want = filepath.Join(root, tc.want)
		}
		if got != want {
			t.Errorf("FindProject(%s) = %q, want %q", tc.dir, got, want)
		}
	}
}

func TestProjectProviderLaidUnderCampaign(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"smsform.yaml": `version: 1
state: postgres://smsform@db.internal:5432/campaigns?sslmode=verify-full
provider:
  base_url: https://sms.example.com
  basic_auth: literal
  max_recipients: 100
  expected_latency: 1.5s
  results:
    list: /messages
    number: /to
    status: /status/groupName
    reason: /status/description
    sent: [PENDING, ACCEPTED]
    retry: [THROTTLED]
    duplicate: [DUPLICATE]
frequency_cap:
  max: 3
  per: 24h
test_recipients: ["+447400123456"]
`,
		"campaigns/c.yaml": strings.Replace(tinyCampaign, "body:", "provider:\n  max_recipients: 50\n  token_valid_hours: 12\nfrequency_cap: {max: 1, per: 72h}\nbody:", 1),
	})
	c, err := Load(filepath.Join(dir, "campaigns/c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Provider
	if p.BaseURL != "https://sms.example.com" || p.BasicAuth != "literal" || p.MaxRecipients != 50 || p.TokenValidHours != 12 ||
		p.ExpectedLatency != 1500*time.Millisecond {
		t.Errorf("provider = %+v", p)
	}
	if p.Results == nil || len(p.Results.Lists) != 1 || p.Results.Lists[0].List.String() != "/messages" || p.Results.Lists[0].Reason.String() != "/status/description" ||
		fmt.Sprint(p.Results.Lists[0].Sent) != "[PENDING ACCEPTED]" || fmt.Sprint(p.Results.Lists[0].Duplicate) != "[DUPLICATE]" {
		t.Errorf("results = %+v", p.Results)
	}
	if c.Project == nil || c.Project.State == "" || c.Project.FrequencyCap.String() != "3 per 24h" || c.FrequencyCap.String() != "1 per 72h" {
		t.Errorf("project = %+v, cap %v", c.Project, c.FrequencyCap)
	}
	files := c.Files()
	if len(files) < 2 || files[1] != filepath.Join(dir, "smsform.yaml") {
		t.Errorf("Files() = %v: the project file is one of what a campaign reads", files)
	}
}

func TestProjectErrors(t *testing.T) {
	for _, tc := range []struct {
		name, project, campaign string
		want                    []string
	}{
		{name: "password in URL", project: "version: 1\nstate: postgres://sms:hunter2@db/x\n",
			want: []string{"smsform.yaml:2: state: a password must not be written in the project file", "PGPASSWORD"}},
		{name: "password keyword", project: "version: 1\nstate: host=db user=sms password=hunter2 dbname=x\n",
			want: []string{"smsform.yaml:2: state: a password must not be written"}},
		{name: "password parameter", project: "version: 1\nstate: postgres://db/x?password=hunter2\n",
			want: []string{"smsform.yaml:2: state: a password"}},
		{name: "unknown key", project: "version: 1\nstat: x\n", want: []string{"smsform.yaml:2: stat: unknown key", `did you mean "state"?`}},
		{name: "secret key", project: "version: 1\nprovider:\n  client_secret: x\n", want: []string{"smsform.yaml:3: provider.client_secret: secrets must not be written"}},
		{name: "no version", project: "state: x\n", want: []string{"smsform.yaml:1: version: required key is missing"}},
		{name: "bad provider value", project: "version: 1\nprovider:\n  basic_auth: maybe\n", want: []string{"smsform.yaml:3: provider.basic_auth"}},
		{name: "bad pointer", project: "version: 1\nprovider:\n  results: {list: messages, number: /to, status: /s, sent: [OK]}\n",
			want: []string{"smsform.yaml:3: provider.results.list: \"messages\" is not a JSON pointer"}},
		{name: "results incomplete", project: "version: 1\nprovider:\n  results: {list: /m, number: /to}\n",
			want: []string{"provider.results.status: required key is missing (or outcome)"}},
		{name: "status naming nothing", project: "version: 1\nprovider:\n  results: {list: /m, number: /to, status: /s}\n",
			want: []string{"provider.results.sent: status names no statuses: list them under sent, failed, retry or duplicate"}},
		{name: "status and outcome", project: "version: 1\nprovider:\n  results: {list: /m, number: /to, status: /s, outcome: failed, sent: [OK]}\n",
			want: []string{"provider.results.outcome: write status or outcome, not both", "provider.results.sent: sent needs status, not outcome"}},
		{name: "bad outcome", project: "version: 1\nprovider:\n  results: {list: /m, number: /to, outcome: refused}\n",
			want: []string{`provider.results.outcome: "refused" is not an outcome`, "sent, failed, retry or in_doubt"}},
		{name: "whole answer as a list", project: "version: 1\nprovider:\n  results: {list: \"\", number: /to, outcome: failed}\n",
			want: []string{`provider.results.list: "" is not a JSON pointer`}},
		{name: "a status that is no value", project: "version: 1\nprovider:\n  results: {list: /m, number: /to, status: /s, sent: [OK, null, {a: 1}, [x]]}\n",
			want: []string{"provider.results.sent[1]: must be a status, not nothing", "provider.results.sent[2]: must be a status", "provider.results.sent[3]: must be a status"}},
		{name: "one value under two meanings", project: "version: 1\nprovider:\n  results: {list: /m, number: /to, status: /s, sent: [1], failed: [\"1.0\"]}\n",
			want: []string{`status "1" is listed under both sent and failed`}},
		{name: "others sent without results", project: "version: 1\nprovider:\n  others: sent\n",
			want: []string{"smsform.yaml:3: provider.others: others: sent needs results"}},
		{name: "others failed", project: "version: 1\nprovider:\n  others: failed\n", want: []string{"provider.others: failed is not allowed here"}},
		{name: "empty results list", project: "version: 1\nprovider:\n  results: []\n", want: []string{"provider.results: lists no answer lists"}},
		{name: "batch_id twice", project: "version: 1\nprovider:\n  batch_id: /a\n  request_id_field: /b\n", want: []string{"batch_id and request_id_field name the same thing"}},
		{name: "status with two meanings", project: "version: 1\nprovider:\n  results: {list: /m, number: /to, status: /s, sent: [OK], retry: [OK]}\n",
			want: []string{`status "OK" is listed under both sent and retry`}},
		{name: "cap without per", project: "version: 1\nfrequency_cap: {max: 3}\n", want: []string{"frequency_cap: needs both max and per"}},
		{name: "cap of 0", project: "version: 1\nfrequency_cap: {max: 0, per: 24h}\n",
			want: []string{"frequency_cap.max: 0 is too small", "remove frequency_cap for no cap"}},
		{name: "cap per without unit", project: "version: 1\nfrequency_cap: {max: 3, per: 24}\n", want: []string{"frequency_cap.per: a duration needs a unit"}},
		{name: "cap per with a sign", project: "version: 1\nfrequency_cap: {max: 3, per: +48h}\n", want: []string{`frequency_cap.per: "+48h" is not a duration`}},
		{name: "looser campaign cap", project: "version: 1\nfrequency_cap: {max: 3, per: 24h}\n",
			campaign: strings.Replace(tinyCampaign, "body:", "frequency_cap: {max: 5, per: 24h}\nbody:", 1),
			want:     []string{"c.yaml:6: frequency_cap: 5 per 24h is looser than the project's 3 per 24h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.campaign == "" {
				tc.campaign = tinyCampaign
			}
			write(t, dir, map[string]string{"smsform.yaml": tc.project, "c.yaml": tc.campaign})
			_, err := Load(filepath.Join(dir, "c.yaml"))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg+hints(err), w) {
					t.Errorf("error %q (hints %q) lacks %q", msg, hints(err), w)
				}
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("error shows the password: %s", msg)
			}
		})
	}
}

func TestCampaignCapNeedsProject(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{".git/HEAD": "", "c.yaml": strings.Replace(tinyCampaign, "body:", "frequency_cap: {max: 1, per: 24h}\nbody:", 1)})
	_, err := Load(filepath.Join(dir, "c.yaml"))
	if err == nil || !strings.Contains(err.Error(), "a frequency cap needs a project file") {
		t.Fatalf("err = %v", err)
	}
}

func TestProjectCampaignFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"smsform.yaml": "version: 1\n", "a.yaml": tinyCampaign, "campaigns/b.yaml": tinyCampaign,
		"campaigns/notes.txt": "", "other/c.yaml": tinyCampaign})
	p, err := LoadProject(filepath.Join(dir, "smsform.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := p.CampaignFiles()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "campaigns/b.yaml")}
	if strings.Join(files, "\n") != strings.Join(want, "\n") {
		t.Errorf("CampaignFiles = %v, want %v", files, want)
	}
	if _, err := Load(filepath.Join(dir, "smsform.yaml")); err == nil || !strings.Contains(err.Error(), "this is the project file, not a campaign") {
		t.Errorf("Load(smsform.yaml) = %v", err)
	}
}

// hints joins the hints of every *Error in err.
func hints(err error) string {
	var b strings.Builder
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if ce, ok := e.(*Error); ok {
			b.WriteString(" " + ce.Hint)
		}
	}
	walk(err)
	return b.String()
}

// A campaign file that is a link belongs to the project it really sits in,
// not to the project of the folder the link is in.
func TestProjectOfLinkedFile(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, map[string]string{
		"p4/.git/HEAD":          "",
		"p4/smsform.yaml":       "version: 1\nstate: .smsform/\n",
		"p4/campaigns/abs.yaml": tinyCampaign,
		"other/.git/HEAD":       "",
		"other/smsform.yaml":    "version: 1\nstate: .other/\n",
	})
	if err := os.Symlink(filepath.Join(root, "p4/campaigns/abs.yaml"), filepath.Join(root, "other/abs.yaml")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Symlink("../p4/campaigns/abs.yaml", filepath.Join(root, "other/rel.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"other/abs.yaml", "other/rel.yaml"} {
		p, err := ProjectOfFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if p == nil || p.Path != filepath.Join(root, "p4/smsform.yaml") || p.State != ".smsform/" {
			t.Errorf("ProjectOfFile(%s) = %+v, want the project of p4", name, p)
		}
		c, err := Load(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if c.Project == nil || c.Project.Dir != filepath.Join(root, "p4") {
			t.Errorf("Load(%s).Project = %+v", name, c.Project)
		}
	}
}

// An enclosing project is found past any .git: a submodule or a clone
// between two project files hides no ledger from the check.
func TestEnclosingProjects(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, map[string]string{
		"top/smsform.yaml":                       "version: 1\n",
		"top/repo/.git/HEAD":                     "",
		"top/repo/smsform.yaml":                  "version: 1\n",
		"top/repo/a/b/module/.git":               "gitdir: ../../../.git/modules/module\n",
		"top/repo/a/b/module/smsform.yaml":       "version: 1\n",
		"top/repo/a/b/module/clone/.git/HEAD":    "",
		"top/repo/a/b/module/clone/smsform.yaml": "version: 1\n",
	})
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{"top/repo/a/b/module/clone", []string{"top/repo/a/b/module/smsform.yaml", "top/repo/smsform.yaml", "top/smsform.yaml"}},
		{"top/repo/a/b/module", []string{"top/repo/smsform.yaml", "top/smsform.yaml"}},
		{"top/repo", []string{"top/smsform.yaml"}},
		{"top", nil},
	} {
		got, err := EnclosingProjects(filepath.Join(root, tc.dir))
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		var want []string
		for _, w := range tc.want {
			want = append(want, filepath.Join(root, w))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("EnclosingProjects(%s) = %v, want %v", tc.dir, got, want)
		}
	}
}
