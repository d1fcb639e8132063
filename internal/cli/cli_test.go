package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/ledger"
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

func TestFlagsBeforeOrAfterArguments(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.smsstate")
	st, err := state.Open(context.Background(), state.MustParseLocation(path), state.Options{Campaign: "c"})
	if err != nil {
		t.Fatal(err)
	}
	recordOne(t, st)
	st.Close()
	for _, args := range [][]string{
		{"state", "list", "--state", path, "--json"},
		{"state", "list", "--json", "--state", path},
		{"--no-color", "state", "list", "--json", "--state=" + path},
	} {
		var stdout strings.Builder
		if err := Run(context.Background(), args, Env{Stdout: &stdout, Stderr: io.Discard}); err != nil {
			t.Errorf("%q: %v", args, err)
		} else if !strings.Contains(stdout.String(), `"campaign": "c"`) {
			t.Errorf("%q printed %q", args, stdout.String())
		}
	}
}

func TestUsageMistakes(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		err, hint string
	}{
		{[]string{"plna"}, `unknown command "plna"`, "did you mean smsform plan?"},
		{[]string{"state", "lsit"}, `unknown command "lsit" for smsform state`, "did you mean smsform state list?"},
		{[]string{"plan", "--fromat", "json", "c.yaml"}, "unknown flag --fromat", "did you mean --format?"},
		{[]string{"apply", "--auto-aprove", "c.yaml"}, "unknown flag --auto-aprove", "did you mean --auto-approve?"},
		{[]string{"plan", "--zzz", "c.yaml"}, "unknown flag --zzz", "run smsform plan --help"},
		{[]string{"apply", "a.yaml", "b.yaml"}, "smsform apply takes one campaign file, saved plan or folder of saved plans", "run smsform apply --help"},
		{[]string{"plan", "--state"}, "flag needs an argument", "run smsform plan --help"},
		{[]string{}, "no command given", "smsform plan CAMPAIGN.yaml"},
	} {
		var stdout, stderr strings.Builder
		err := Run(context.Background(), tt.args, Env{Stdout: &stdout, Stderr: &stderr})
		var h *HintError
		if !errors.Is(err, ErrUsage) || !errors.As(err, &h) {
			t.Errorf("%q: err = %v, want a usage error with a hint", tt.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.err) || !strings.Contains(h.Hint, tt.hint) {
			t.Errorf("%q: %q, hint %q; want %q, hint %q", tt.args, err, h.Hint, tt.err, tt.hint)
		}
		if stdout.Len() != 0 {
			t.Errorf("%q wrote to stdout: %q", tt.args, stdout.String())
		}
	}
}

// TestStateTakesGlobalFlagsBeforeItsSubcommand runs state list on a real
// state file with --no-color before the command, before the subcommand
// and after it, and refuses a subcommand's flag given too early.
func TestStateTakesGlobalFlagsBeforeItsSubcommand(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.smsstate")
	st, err := state.Open(ctx, state.MustParseLocation(path), state.Options{Campaign: "c"})
	if err != nil {
		t.Fatal(err)
	}
	recordOne(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"state", "list", "--state", path, "--no-color"},
		{"state", "--no-color", "list", "--state", path},
		{"--no-color", "state", "--no-color=true", "list", "--state", path},
		{"--no-color=false", "state", "list", "--state", path},
	} {
		var stdout, stderr strings.Builder
		if err := Run(ctx, args, Env{Stdout: &stdout, Stderr: &stderr}); err != nil {
			t.Errorf("%q: %v\n%s", args, err, stderr.String())
			continue
		}
		if !strings.Contains(stdout.String(), "Campaign c") {
			t.Errorf("%q printed %q", args, stdout.String())
		}
	}

	var stderr strings.Builder
	err = Run(ctx, []string{"state", "--json", "list", "--state", path}, Env{Stdout: io.Discard, Stderr: &stderr})
	var h *HintError
	if !errors.Is(err, ErrUsage) || !errors.As(err, &h) || !strings.Contains(h.Hint, "smsform state list --json") {
		t.Errorf("state --json list: %v (%+v)", err, h)
	}
	var stdout strings.Builder
	err = Run(ctx, []string{"state", "--help"}, Env{Stdout: &stdout, Stderr: &stderr})
	if err != nil || !strings.Contains(stdout.String(), "resolve") || !strings.Contains(stdout.String(), "migrate") {
		t.Errorf("state --help: %v, %q", err, stdout.String())
	}
}

// commands is every command that does something, as typed after smsform.
var commands = []string{"validate", "plan", "show", "apply", "token", "state list", "state resolve", "state migrate", "sandbox", "version",
	"state prune", "optout add", "optout import", "optout remove", "optout list", "pause", "resume", "test", "receive", "reports import", "man"}

// commandHelp is every command's --help, by command, checking that it is the
// same text as smsform help CMD, on stdout.
func commandHelp(t *testing.T) map[string]string {
	t.Helper()
	help := map[string]string{}
	for _, cmd := range commands {
		var flagOut, helpOut strings.Builder
		if err := Run(context.Background(), append(strings.Fields(cmd), "--help"), Env{Stdout: &flagOut, Stderr: io.Discard}); err != nil {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		if err := Run(context.Background(), append([]string{"help"}, strings.Fields(cmd)...), Env{Stdout: &helpOut, Stderr: io.Discard}); err != nil {
			t.Fatalf("help %s: %v", cmd, err)
		}
		if flagOut.String() != helpOut.String() {
			t.Errorf("smsform %s --help and smsform help %s differ", cmd, cmd)
		}
		help[cmd] = flagOut.String()
	}
	return help
}

// flagsOf lists the flags a command's --help prints, --help and --no-color
// aside (every command takes them, and the texts say so once).
func flagsOf(help string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(help, -1) {
		if m[1] != "no-color" && m[1] != "help" {
			names = append(names, m[1])
		}
	}
	return names
}

// TestHelpSaysEverything holds each command's help to what docs/commands.md
// promises of it: what it does, an example, its exit codes, and the
// environment of the commands that read it.
func TestHelpSaysEverything(t *testing.T) {
	for cmd, help := range commandHelp(t) {
		for _, want := range []string{"Usage:\n  smsform " + cmd, "Examples:\n  ", "Exit codes:\n  0  success", "Flags:\n"} {
			if cmd == "sandbox" || cmd == "version" || !strings.Contains(want, "Flags") {
				if !strings.Contains(help, want) {
					t.Errorf("smsform %s --help lacks %q:\n%s", cmd, want, help)
				}
			}
		}
	}
	help := commandHelp(t)
	if !strings.Contains(help["apply"], "SMSFORM_CLIENT_SECRET") || !strings.Contains(help["apply"], "5  stopped") {
		t.Errorf("apply's help lacks its environment or exit code 5:\n%s", help["apply"])
	}
	var top strings.Builder
	if err := Run(context.Background(), []string{"--help"}, Env{Stdout: &top, Stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"validate", "plan", "show", "apply", "token", "state", "sandbox", "version", "completion"} {
		if !regexp.MustCompile(`(?m)^  ` + cmd + ` +[A-Z]`).MatchString(top.String()) {
			t.Errorf("top-level help has no one-line description of %s:\n%s", cmd, top.String())
		}
	}
}

// TestDocsListEveryFlag checks the command reference (the commands table of
// docs/commands.md, and docs/sandbox.md for the sandbox) names every flag
// of every command.
func TestDocsListEveryFlag(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	_, commands, ok := strings.Cut(read("commands.md"), "\n## Commands\n")
	if !ok {
		t.Fatal(`docs/commands.md has no "## Commands"`)
	}
	if i := strings.Index(commands, "\n## "); i >= 0 {
		commands = commands[:i]
	}
	sandboxDoc := read("sandbox.md")
	if !strings.Contains(commands, "`--no-color`") {
		t.Error("docs/commands.md's commands do not mention --no-color")
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
			t.Errorf("docs/commands.md's commands table has no row for %s", cmd)
			continue
		}
		for _, f := range flagsOf(help) {
			if !regexp.MustCompile(`--` + f + `\b`).MatchString(doc) {
				t.Errorf("the command reference (docs/commands.md, docs/sandbox.md) does not list %s --%s", cmd, f)
			}
		}
	}
}

// recordOne records a sent batch, so that the state exists: opening one
// creates nothing.
func recordOne(t *testing.T, st *state.State) {
	t.Helper()
	ctx := context.Background()
	if err := st.RecordIntent(ctx, state.Intent{BatchID: "b", Phones: []string{"+447400123459"}, BodyHash: state.BodyHash("x")}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordOutcome(ctx, "b", state.Outcome{Status: state.Sent, HTTPStatus: 200}); err != nil {
		t.Fatal(err)
	}
}

// TestColourErrors: Run says whether its error may be red on stderr by the
// command line it parsed itself: a terminal, and not --no-color (anywhere,
// =true or bare), NO_COLOR or automation.
func TestColourErrors(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tt := range []struct {
		args     []string
		getenv   func(string) string
		terminal bool
		want     bool
	}{
		{[]string{"version"}, env(), true, true},
		{[]string{"version"}, env(), false, false},
		{[]string{"version"}, env("NO_COLOR", "1"), true, false},
		{[]string{"version"}, env("CI", "true"), true, false},
		{[]string{"--no-color", "version"}, env(), true, false},
		{[]string{"version", "--no-color=true"}, env(), true, false},
		{[]string{"version", "--no-color=false"}, env(), true, true},
		{[]string{"plan", "missing.yaml", "--no-color"}, env(), true, false}, // a command that fails
	} {
		var got bool
		var out strings.Builder
		_ = Run(context.Background(), tt.args, Env{Stdout: &out, Stderr: &out, Getenv: tt.getenv,
			IsTerminal: func(any) bool { return tt.terminal }, ColourErrors: &got})
		if got != tt.want {
			t.Errorf("%q, terminal %v: colour %v, want %v", tt.args, tt.terminal, got, tt.want)
		}
	}
}

// TestLeftBehind: the hint after one campaign moved names each kind of
// thing the source still holds, and only those.
func TestLeftBehind(t *testing.T) {
	for _, tc := range []struct {
		campaigns []string
		size      ledger.Size
		want      string
	}{
		{nil, ledger.Size{}, ""},
		{[]string{"b"}, ledger.Size{}, "1 other campaign (b)"},
		{nil, ledger.Size{CapNumbers: 2}, "the project's opt-outs and frequency-cap history"},
		{nil, ledger.Size{Received: 1}, "the replies and delivery reports matched to no campaign"},
		{[]string{"b", "c"}, ledger.Size{OptOutSeq: 1}, "2 other campaigns (b, c), and the project's opt-outs and frequency-cap history"},
		{[]string{"b"}, ledger.Size{OptOutSeq: 1, Received: 3},
			"1 other campaign (b), the project's opt-outs and frequency-cap history, and the replies and delivery reports matched to no campaign"},
	} {
		if got := leftBehind(tc.campaigns, tc.size); got != tc.want {
			t.Errorf("leftBehind(%v, %+v) = %q, want %q", tc.campaigns, tc.size, got, tc.want)
		}
	}
}
