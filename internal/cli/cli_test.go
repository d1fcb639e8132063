package cli

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/smsform/smsform/campaign"
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
		{campaign: "https://me:hunter2@sms.example.com:port", err: `"https://xxxxx@sms.example.com:port" (provider.base_url in c.yaml) is not an http(s) URL`},
		{campaign: "me:hunter2@sms.example.com", err: "not an http(s) URL"},
		{campaign: "https://sms.example.com/p?q=a@b", want: "https://sms.example.com/p?q=a@b"},
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

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://sms.example.com":                  "https://sms.example.com",
		"https://me:hunter2@sms.example.com/a@b":   "https://xxxxx@sms.example.com/a@b",
		"https://tok@en@sms.example.com?x=@":       "https://xxxxx@sms.example.com?x=@",
		"http://me:hunter2@[::1]:80#frag@":         "http://xxxxx@[::1]:80#frag@",
		"me:hunter2@sms.example.com/path":          "xxxxx@sms.example.com/path",
		"https://me:hunter2@sms.example.com:bad/x": "https://xxxxx@sms.example.com:bad/x",
		"":  "",
		"@": "xxxxx@",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
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
