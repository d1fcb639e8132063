package api

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
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

// TestRedactEncodedForms: a secret echoed HTML-entity encoded (decimal,
// hex, named, some characters or all) or URL-encoded twice is redacted too,
// and the provider's other words are kept.
func TestRedactEncodedForms(t *testing.T) {
	const id, secret = "me", "Adv$Secr3t&<x>"
	token := "tok_" + strings.Repeat("Zq9", 8)
	var all strings.Builder
	for _, r := range secret {
		fmt.Fprintf(&all, "&#%d;", r)
	}
	echoes := []string{
		"Adv&#36;Secr3t&amp;&lt;x&gt;",                           // decimal, and named for the rest
		"Adv&#x24;Secr3t&#x26;&#x3c;x&#x3e;",                     // hex
		"Adv&dollar;Secr3t&amp;&lt;x&gt;",                        // named
		all.String(),                                             // every character
		url.QueryEscape(url.QueryEscape(secret)),                 // URL-encoded twice
		url.QueryEscape("Adv&#36;Secr3t&amp;&lt;x&gt;"),          // entities, then URL-encoded
		url.PathEscape(url.QueryEscape(url.QueryEscape(secret))), // three times
	}
	for i, echo := range echoes {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"code":"bad_auth","message":"client secret %s is not valid for account 42"}}`, echo)
		}))
		c := &Client{BaseURL: srv.URL, ClientID: id, ClientSecret: secret, Basic: BasicBase64}
		_, err := c.Send(context.Background(), token, testReq)
		srv.Close()
		if err == nil {
			t.Fatal("no error")
		}
		for _, leak := range []string{echo, secret, "Secr3t"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("echo %d: error %q holds %q", i, err, leak)
			}
		}
		if !strings.Contains(err.Error(), "is not valid for account 42") {
			t.Errorf("echo %d: error %q lost the provider's words", i, err)
		}
	}
}

// TestIDPrefilter: the look that lets an id pass without redacting it
// never lets through an id that redact would change. Each id is random
// text (letters, digits, and the characters that escape or decode: & % +
// ; # \ < > spaces, non-ASCII) with, most of the time, a piece of a
// secret inside it (whole or cut) in one of the ways redact knows it: the
// redactor's own forms and base64 cores, HTML entities, URL-encoded twice,
// after "Bearer". ID of it is "[redacted]" exactly when redact changes it.
func TestIDPrefilter(t *testing.T) {
	for _, secret := range []string{"s3cr3t-Secret-Value", "TOP SECRET/+?=x&<é>"} {
		c := &Client{ClientID: "acct-7", ClientSecret: secret}
		token := "tok_" + strings.Repeat("Zq9", 8)
		r := c.redactor(token)
		var entities strings.Builder
		for _, ch := range secret {
			fmt.Fprintf(&entities, "&#%d;", ch)
		}
		pieces := append(slices.Concat(r.forms, r.cores, secretForms(c.ClientID, secret, token)),
			entities.String(), url.QueryEscape(url.QueryEscape(secret)), "Bearer "+token, "basic%20"+token, "Basic x", "a&amp;b", "50%25", "a+b")
		rng := rand.New(rand.NewPCG(1, 2))
		alphabet := []rune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_:/=&%+;#\\<> é€")
		text := func(n int) string {
			b := make([]rune, n)
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			return string(b)
		}
		passed, hidden := 0, 0
		for range 200_000 {
			id := text(rng.IntN(40))
			if rng.IntN(4) > 0 {
				p := pieces[rng.IntN(len(pieces))]
				lo := rng.IntN(len(p))
				hi := lo + rng.IntN(len(p)-lo+1)
				if rng.IntN(2) == 0 {
					lo, hi = 0, len(p)
				}
				at := rng.IntN(len(id) + 1)
				id = id[:at] + p[lo:hi] + id[at:]
			}
			changes := r.redact(id) != id
			if changes && !r.mayHoldSecret(id) {
				t.Fatalf("%q: redact changes it, the prefilter lets it pass", id)
			}
			if got := r.ID(id); (got == redacted) != changes {
				t.Fatalf("ID(%q) = %q; redact changes it: %v", id, got, changes)
			}
			if changes {
				hidden++
			} else if !r.mayHoldSecret(id) {
				passed++
			}
		}
		// Both ways were tried: ids the look passes, ids it redacts.
		if passed < 10_000 || hidden < 10_000 {
			t.Errorf("secret %q: passed %d, redacted %d of 200,000: the test no longer tries both ways", secret, passed, hidden)
		}
	}
}

// TestControlCharactersHideNoSecret: a secret split by a control
// character is found in an id and in the provider's words, whose control
// characters are taken out (or made spaces) before the secrets are looked
// for: it comes out whole in neither.
func TestControlCharactersHideNoSecret(t *testing.T) {
	for _, secret := range []string{"s3cr3t-Secret-Value", "TOP SECRET/+?=x"} {
		r := (&Client{ClientID: "me", ClientSecret: secret}).redactor("")
		for at := 1; at < len(secret); at++ {
			for _, ctl := range []string{"\x00", "\t", "\n", "\x7f"} {
				split := secret[:at] + ctl + secret[at:]
				if secret[at] == ' ' { // "TOP\x00SECRET": a control character for the space
					split = secret[:at] + ctl + secret[at+1:]
				}
				in := "id " + split + " end"
				if got := r.ID(in); strings.Contains(got, secret) {
					t.Errorf("ID(%q) = %q", in, got)
				}
				if got := r.Words(in); strings.Contains(got, secret) {
					t.Errorf("Words(%q) = %q", in, got)
				}
			}
		}
	}
}
