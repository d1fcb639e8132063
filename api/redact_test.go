package api

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// secretForms are the ways a provider might send back the secret or the
// token, and that no error text may hold.
func secretForms(id, secret, token string) []string {
	var forms []string
	for _, s := range []string{secret, id + ":" + secret, token} {
		if s == "" {
			continue
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			forms = append(forms, enc.EncodeToString([]byte(s)))
		}
	}
	for _, s := range []string{secret, token} {
		if s == "" {
			continue
		}
		forms = append(forms, s, url.QueryEscape(s), url.PathEscape(s))
	}
	return forms
}

// TestRedactEveryForm: whatever form of the credentials an error body
// echoes, the error text holds none of them.
func TestRedactEveryForm(t *testing.T) {
	const id, secret = "me", "TOP SECRET/+?=x"
	token := "tok_" + strings.Repeat("Zq9", 8)
	var forms []string
	echo := func(r *http.Request) []string {
		auth := r.Header.Get("Authorization")
		return append([]string{
			"Authorization: " + auth, `{"authorization":"` + auth + `"}`, "auth=" + url.QueryEscape(auth),
			"cred " + strings.TrimPrefix(strings.TrimPrefix(auth, "Basic "), "Bearer ") + " refused",
		}, forms...)
	}
	for _, path := range []string{TokenPath, SendPath} {
		// The token endpoint cannot be sent a token it has not issued yet.
		forms = secretForms(id, secret, map[string]string{SendPath: token}[path])
		for i := range len(forms) + 4 {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(400)
				fmt.Fprintf(w, "bad request: %s; Basic authentication failed", echo(r)[i])
			}))
			c := &Client{BaseURL: srv.URL, ClientID: id, ClientSecret: secret, Basic: BasicBase64}
			var err error
			if path == TokenPath {
				_, err = c.IssueToken(context.Background(), 1)
			} else {
				_, err = c.Send(context.Background(), token, testReq)
			}
			srv.Close()
			if err == nil {
				t.Fatal("no error")
			}
			for _, f := range forms {
				if strings.Contains(err.Error(), f) {
					t.Errorf("%s, echo %d: error %q holds %q", path, i, err, f)
				}
			}
			if !strings.Contains(err.Error(), "Basic authentication failed") {
				t.Errorf("%s: error %q lost the provider's words", path, err)
			}
		}
	}
}

// TestRedactOffsets: the base64 of the secret is found at any offset of any
// base64 text around it.
func TestRedactOffsets(t *testing.T) {
	c := &Client{ClientID: "id", ClientSecret: "s3cr3t-Secret-Value"}
	for _, prefix := range []string{"", "a", "ab", "abc", "user:", "x:y:"} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
			b := enc.EncodeToString([]byte(prefix + c.ClientSecret + "tail"))
			if got := c.redactor("").redact("echo " + b + " end"); strings.Contains(got, b) || got != "echo [redacted] end" {
				t.Errorf("prefix %q: %q", prefix, got)
			}
		}
	}
	if got := c.redactor("").redact("Basic authentication is required"); got != "Basic authentication is required" {
		t.Errorf("plain words redacted: %q", got)
	}
}
