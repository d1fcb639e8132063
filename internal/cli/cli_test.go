package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/state"
)

func TestBaseURL(t *testing.T) {
	tests := []struct {
		campaign, env string
		insecure      bool
		want, err     string
	}{
		{campaign: "https://sms.example.com/", want: "https://sms.example.com"},
		{campaign: "http://127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		{campaign: "http://localhost:8080", want: "http://localhost:8080"},
		{campaign: "http://[::1]:8080", want: "http://[::1]:8080"},
		{campaign: "http://sms.example.com", err: "plain http"},
		{campaign: "http://sms.example.com", insecure: true, want: "http://sms.example.com"},
		{campaign: "http://sms.example.com", env: "https://other.example.com", want: "https://other.example.com"},
		{campaign: "", err: "no API base URL"},
		{campaign: "ftp://sms.example.com", err: "not an http(s) URL"},
		{campaign: "sms.example.com", err: "not an http(s) URL"},
		{campaign: "https://sms.example.com", env: "https://me:hunter2@sms.example.com", err: "base URL https://xxxxx@sms.example.com (SMSFORM_BASE_URL) holds credentials"},
		{campaign: "https://ghp_tok3n@sms.example.com/api", err: "base URL https://xxxxx@sms.example.com/api (provider.base_url in c.yaml) holds credentials"},
		{campaign: "http://me:hunter2@127.0.0.1:8080", err: "holds credentials"},
		{campaign: "https://@sms.example.com", err: "holds credentials"},
		{campaign: "https://me:hunter2@sms.example.com:port", err: `base URL https://xxxxx@sms.example.com:port (provider.base_url in c.yaml) holds credentials`},
		{campaign: "me:hunter2@sms.example.com", err: "base URL xxxxx@sms.example.com (provider.base_url in c.yaml) holds credentials"},
		// An @ anywhere is refused: "tok#en@host" parses with host "tok".
		{campaign: "https://tok#en@sms.example.com", err: `base URL https://xxxxx@sms.example.com (provider.base_url in c.yaml) holds credentials`},
		{campaign: "https://me:s3cr/et@sms.example.com", err: `base URL https://xxxxx@sms.example.com (provider.base_url in c.yaml) holds credentials`},
	}
	for _, tt := range tests {
		t.Run(tt.campaign+" "+tt.env, func(t *testing.T) {
			c := &campaign.Campaign{Path: "c.yaml", Provider: campaign.Provider{BaseURL: tt.campaign}}
			env := Env{Getenv: func(k string) string {
				if k == envBaseURL {
					return tt.env
				}
				return ""
			}}
			got, err := baseURL(c, env, tt.insecure)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				var h *HintError
				if !errors.As(err, &h) || h.Hint == "" {
					t.Errorf("error %v has no hint", err)
				}
				for _, secret := range []string{"hunter2", "ghp_tok3n", "me:"} {
					if strings.Contains(err.Error(), secret) || strings.Contains(h.Hint, secret) {
						t.Errorf("error %q / hint %q shows the URL's credentials", err, h.Hint)
					}
				}
				if strings.Contains(err.Error(), "credentials") && !strings.Contains(h.Hint, envClientSecret) {
					t.Errorf("hint %q does not say where credentials go", h.Hint)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestStatePath(t *testing.T) {
	for in, want := range map[string]string{
		"spring-sale.yaml":       "spring-sale.smsstate",
		"campaigns/x.yml":        "campaigns/x.smsstate",
		"campaigns/x.campaign":   "campaigns/x.campaign.smsstate",
		"dir.yaml/campaign.yaml": "dir.yaml/campaign.smsstate",
	} {
		if got := statePath(in, ""); got != want {
			t.Errorf("statePath(%q) = %q, want %q", in, got, want)
		}
	}
	if got := statePath("a.yaml", "elsewhere.db"); got != "elsewhere.db" {
		t.Errorf("--state is ignored: %q", got)
	}
}

func TestParseInterleavesFlagsAndArguments(t *testing.T) {
	env := Env{Stderr: io.Discard}
	for _, args := range [][]string{
		{"c.yaml", "--json", "--state", "s"},
		{"--json", "c.yaml", "--state", "s"},
		{"--state", "s", "--json", "c.yaml"},
	} {
		fs := newFlags("plan", "plan", env)
		j := fs.Bool("json", false, "")
		st := fs.String("state", "", "")
		pos, err := parse(fs, args, env, 1, 1, "one campaign file")
		if err != nil || len(pos) != 1 || pos[0] != "c.yaml" || !*j || *st != "s" {
			t.Errorf("%v: pos %v json %v state %q err %v", args, pos, *j, *st, err)
		}
	}
	fs := newFlags("plan", "plan", env)
	if _, err := parse(fs, []string{"a.yaml", "b.yaml"}, env, 1, 1, "one campaign file"); !errors.Is(err, ErrUsage) {
		t.Errorf("two files: err = %v, want ErrUsage", err)
	}
	fs = newFlags("plan", "plan", env)
	if _, err := parse(fs, []string{"--bogus"}, env, 1, 1, "one campaign file"); !errors.Is(err, ErrUsage) {
		t.Errorf("unknown flag: err = %v, want ErrUsage", err)
	}
	fs = newFlags("plan", "plan", env)
	if _, err := parse(fs, []string{"--help"}, env, 1, 1, "one campaign file"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: err = %v, want flag.ErrHelp", err)
	}
}

func TestSkipGlobalFlags(t *testing.T) {
	tests := []struct {
		in, want []string
		err      bool
	}{
		{in: []string{"--no-color", "list"}, want: []string{"list"}},
		{in: []string{"-no-color", "--no-color=false", "--no-color=1", "list", "--no-color"}, want: []string{"list", "--no-color"}},
		{in: []string{"list", "--json"}, want: []string{"list", "--json"}},
		{in: []string{"--json", "list"}, want: []string{"--json", "list"}},
		{in: []string{"---no-color", "list"}, want: []string{"---no-color", "list"}},
		{in: []string{"--no-colour", "list"}, want: []string{"--no-colour", "list"}},
		{in: []string{"--no-color"}, want: []string{}},
		{in: []string{}, want: []string{}},
		{in: []string{"--no-color=maybe", "list"}, err: true},
	}
	for _, tt := range tests {
		got, err := skipGlobalFlags(tt.in)
		if tt.err {
			if !errors.Is(err, ErrUsage) {
				t.Errorf("%q: err = %v, want ErrUsage", tt.in, err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%q: got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestStateTakesGlobalFlagsBeforeItsSubcommand runs state list on a real
// state file with --no-color before the command, before the subcommand
// and after it, and refuses a subcommand's flag given too early.
func TestStateTakesGlobalFlagsBeforeItsSubcommand(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.smsstate")
	st, err := state.Open(ctx, path, state.Options{Campaign: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"state", "list", "--state", path, "--no-color"},
		{"state", "--no-color", "list", "--state", path},
		{"--no-color", "state", "--no-color=true", "list", "--state", path},
	} {
		var stdout, stderr strings.Builder
		if err := Run(ctx, args, Env{Stdout: &stdout, Stderr: &stderr}); err != nil {
			t.Errorf("%q: %v\n%s", args, err, stderr.String())
			continue
		}
		if !strings.Contains(stdout.String(), "campaign c") {
			t.Errorf("%q printed %q", args, stdout.String())
		}
	}

	var stderr strings.Builder
	err = Run(ctx, []string{"state", "--json", "list", "--state", path}, Env{Stdout: io.Discard, Stderr: &stderr})
	var h *HintError
	if !errors.Is(err, ErrUsage) || !errors.As(err, &h) || !strings.Contains(h.Hint, "smsform state list --json") {
		t.Errorf("state --json list: %v (%+v)", err, h)
	}
	err = Run(ctx, []string{"state", "--help"}, Env{Stdout: io.Discard, Stderr: &stderr})
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "smsform state resolve") {
		t.Errorf("state --help: %v, %q", err, stderr.String())
	}
}

// commandHelp is every command's --help, by command.
func commandHelp(t *testing.T) map[string]string {
	t.Helper()
	help := map[string]string{}
	for _, cmd := range []string{"validate", "plan", "show", "apply", "token", "state list", "state resolve", "sandbox"} {
		var stderr strings.Builder
		err := Run(context.Background(), append(strings.Fields(cmd), "--help"), Env{Stdout: io.Discard, Stderr: &stderr})
		if !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		help[cmd] = stderr.String()
	}
	return help
}

// flagsOf lists the flags a command's --help prints, --no-color aside
// (every command takes it, and the texts say so once).
func flagsOf(help string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`).FindAllStringSubmatch(help, -1) {
		if m[1] != "no-color" {
			names = append(names, m[1])
		}
	}
	return names
}

var flagRef = regexp.MustCompile(`--([a-z][a-z0-9-]*)`)

// TestUsageListsEveryFlag holds the usage text against the flags each
// command really takes, both ways.
func TestUsageListsEveryFlag(t *testing.T) {
	entries := map[string]string{} // command → its lines in usage
	var cur string
	for line := range strings.Lines(usage) {
		if rest, ok := strings.CutPrefix(line, "  smsform "); ok {
			var words []string
			for _, w := range strings.Fields(rest) {
				if w != strings.ToLower(w) || strings.ContainsAny(w, "[-") {
					break
				}
				words = append(words, w)
			}
			cur = strings.Join(words, " ")
			entries[cur] = line
			continue
		}
		if strings.HasPrefix(line, "    ") && cur != "" {
			entries[cur] += line
			continue
		}
		cur = ""
	}
	if !strings.Contains(usage, "--no-color") {
		t.Error("usage does not mention --no-color")
	}
	for cmd, help := range commandHelp(t) {
		entry, ok := entries[cmd]
		if !ok {
			t.Errorf("usage has no line for %s", cmd)
			continue
		}
		takes := map[string]bool{}
		for _, f := range flagsOf(help) {
			takes[f] = true
			if !strings.Contains(entry, "--"+f) {
				t.Errorf("usage of %s lacks --%s", cmd, f)
			}
		}
		for _, m := range flagRef.FindAllStringSubmatch(entry, -1) {
			if !takes[m[1]] {
				t.Errorf("usage of %s lists --%s, which it does not take", cmd, m[1])
			}
		}
	}
}

// TestREADMEListsEveryFlag checks README's command reference (the commands
// table, and the sandbox's own section) names every flag of every command.
func TestREADMEListsEveryFlag(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	section := func(title string) string {
		_, after, ok := strings.Cut(readme, "\n"+title+"\n")
		if !ok {
			t.Fatalf("README has no %q", title)
		}
		if i := strings.Index(after, "\n## "); i >= 0 {
			after = after[:i]
		}
		return after
	}
	commands := section("## Commands")
	sandboxDoc := section("## The sandbox")
	if !strings.Contains(commands, "`--no-color`") {
		t.Error("README's commands do not mention --no-color")
	}
	for cmd, help := range commandHelp(t) {
		var doc string
		if cmd == "sandbox" {
			doc = sandboxDoc
		}
		for line := range strings.Lines(commands) {
			if strings.HasPrefix(line, "| `smsform "+cmd+" ") || strings.HasPrefix(line, "| `smsform "+cmd+"`") {
				doc += line
			}
		}
		if doc == "" {
			t.Errorf("README's commands table has no row for %s", cmd)
			continue
		}
		for _, f := range flagsOf(help) {
			if !regexp.MustCompile(`--` + f + `\b`).MatchString(doc) {
				t.Errorf("README does not list %s --%s", cmd, f)
			}
		}
	}
}
