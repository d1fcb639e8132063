package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"github.com/smsform/smsform/internal/cli"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// runContact runs smsform with args and env, and returns its exit code, stdout
// and stderr as main would write them.
func runContact(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	err := cli.Run(context.Background(), args, cli.Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }})
	code := exitCode(err, &stderr)
	return code, stdout.String(), stderr.String()
}

// contactCampaign writes a two-recipient campaign into a new folder and
// returns its path and the environment of a run against base.
func contactCampaign(t *testing.T, base string) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	writeFile(t, path, "version: 1\nname: contact\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123459\", \"+447400123564\"]\nbody: \"Hello.\"\n")
	return path, map[string]string{
		"SMSFORM_BASE_URL": base, "SMSFORM_CLIENT_ID": confID, "SMSFORM_CLIENT_SECRET": confSecret,
		"SMSFORM_TOKEN_DIR": filepath.Join(dir, "tokens"), "CI": "true",
	}
}

// TestFirstContact: on the run's first contact (the token), a base URL at
// which nothing can be asked is a configuration error: apply fails after
// at most 2 tries (1 for a certificate), names the base URL and where it
// came from, and says what to do; the state is not created.
func TestFirstContact(t *testing.T) {
	var conns atomic.Int32
	count := func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	tlsSrv := httptest.NewUnstartedServer(ok)
	tlsSrv.Config.ConnState = count
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plain := httptest.NewUnstartedServer(ok)
	plain.Config.ConnState = count
	plain.Start()
	defer plain.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	for _, tt := range []struct {
		name, base string
		says       []string
		maxConns   int32 // 0: nothing listens to count
		maxRetries int
	}{
		{"certificate not trusted", tlsSrv.URL, []string{"certificate", strings.TrimPrefix(tlsSrv.URL, "https://"), "SSL_CERT_FILE"}, 1, 0},
		{"plain http behind https", strings.Replace(plain.URL, "http://", "https://", 1), []string{"plain HTTP", "use http://"}, 2, 1},
		{"connection refused", closed, []string{"refused", "nothing accepts connections"}, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conns.Store(0)
			path, env := contactCampaign(t, tt.base)
			code, stdout, stderr := runContact(t, env, "apply", path, "--auto-approve", "--json")
			if code != 1 {
				t.Errorf("exit %d, want 1\n%s", code, stderr)
			}
			for _, s := range append(tt.says, tt.base, "SMSFORM_BASE_URL") {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr does not say %q:\n%s", s, stderr)
				}
			}
			if n := conns.Load(); tt.maxConns > 0 && n > tt.maxConns {
				t.Errorf("%d connections, want at most %d", n, tt.maxConns)
			}
			if n := strings.Count(stdout, `"type":"retry"`); n > tt.maxRetries {
				t.Errorf("%d retries, want at most %d", n, tt.maxRetries)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), "c.smsstate")); err == nil {
				t.Error("a state was created")
			}
			// smsform token says the same.
			code, _, stderr = runContact(t, env, "token", path)
			if code != 1 || !strings.Contains(stderr, tt.says[0]) || !strings.Contains(stderr, "SMSFORM_BASE_URL") {
				t.Errorf("token: exit %d:\n%s", code, stderr)
			}
		})
	}
}

// TestSecretsNeverEchoed: a token endpoint that echoes the Authorization
// header (and the secret in other forms) in its error body: neither
// smsform token nor apply prints the secret in any encoding.
func TestSecretsNeverEchoed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		cred := strings.TrimPrefix(auth, "Basic ")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":"invalid_request","error_description":"bad header %q (credentials %s, %s, %s, %s, %s)"}`,
			auth, strings.TrimRight(cred, "="), url.QueryEscape(confSecret), url.PathEscape(confSecret),
			base64.StdEncoding.EncodeToString([]byte(confSecret)), base64.RawURLEncoding.EncodeToString([]byte(confID+":"+confSecret)))
	}))
	defer srv.Close()
	path, env := contactCampaign(t, srv.URL)
	var forbidden []string
	for _, s := range []string{confSecret, confID + ":" + confSecret} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			forbidden = append(forbidden, enc.EncodeToString([]byte(s)))
		}
	}
	forbidden = append(forbidden, confSecret, url.QueryEscape(confSecret), url.PathEscape(confSecret))
	for _, args := range [][]string{{"token", path}, {"apply", path, "--auto-approve"}} {
		code, stdout, stderr := runContact(t, env, args...)
		if code != 1 || !strings.Contains(stderr, "bad header") {
			t.Errorf("%s: exit %d, want 1 and the provider's words:\n%s", args[0], code, stderr)
		}
		for _, f := range forbidden {
			if strings.Contains(stdout+stderr, f) {
				t.Errorf("%s prints %q:\n%s", args[0], f, stderr)
			}
		}
	}
}
