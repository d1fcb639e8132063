package tokenstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
)

func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache", "smsform", "tokens")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %04o, want 0700", fi.Mode().Perm())
	}
	if _, ok, err := s.Get(key("https://a", "id", "s3cret")); ok || err != nil {
		t.Fatalf("empty store: %v %v", ok, err)
	}
	till := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, tok := range []string{"secret-1", "secret-2"} { // the second replaces the first
		if err := s.Put(key("https://a", "id", "s3cret"), api.Token{Value: tok, ValidTill: till.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(key("https://b", "id", "s3cret"), api.Token{Value: "other", ValidTill: till}); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir) // a later run
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		base, id, secret, want string
		ok                     bool
	}{
		{"https://a", "id", "s3cret", "secret-2", true},
		{"https://b", "id", "s3cret", "other", true},
		{"https://a", "id2", "s3cret", "", false},
		// Another secret for the same client finds no token: a wrong
		// secret must not ride on the token the right one got.
		{"https://a", "id", "wrong", "", false},
	} {
		got, ok, err := s.Get(key(tc.base, tc.id, tc.secret))
		if err != nil || ok != tc.ok || got.Value != tc.want {
			t.Errorf("Get(%s, %s) = %+v %v %v", tc.base, tc.id, got, ok, err)
		}
	}
	if got, _, _ := s.Get(key("https://a", "id", "s3cret")); !got.ValidTill.Equal(till.Add(time.Hour)) {
		t.Errorf("valid till %v", got.ValidTill)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d files, want 2 (no temp files left)", len(entries))
	}
	for _, e := range entries {
		fi, _ := e.Info()
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", e.Name(), fi.Mode().Perm())
		}
		if strings.Contains(e.Name(), "secret") || strings.Contains(e.Name(), "id") || strings.Contains(e.Name(), "https") {
			t.Errorf("file name %q reveals its key", e.Name())
		}
	}
}

func TestRefusesWhatOthersCanRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) // dir holds one stored token
		want  string
	}{
		{"folder readable by group", func(t *testing.T, dir string) { os.Chmod(dir, 0o750) }, "chmod 700 " + "DIR"},
		{"folder readable by all", func(t *testing.T, dir string) { os.Chmod(dir, 0o755) }, "chmod 700 " + "DIR"},
		{"file readable by all", func(t *testing.T, dir string) {
			es, _ := os.ReadDir(dir)
			os.Chmod(filepath.Join(dir, es[0].Name()), 0o644)
		}, "chmod 600 DIR/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tokens")
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Put(key("https://a", "id", "s3cret"), api.Token{Value: "secret", ValidTill: time.Now().Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, dir)
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Open: %v, want it to say %q", err, want)
			}
			// A store opened earlier also refuses to hand the token out.
			if _, _, err := s.Get(key("https://a", "id", "s3cret")); tc.name == "file readable by all" && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Errorf("Get: %v, want it to say %q", err, want)
			}
		})
	}
}

func TestCorruptFile(t *testing.T) {
	for _, content := range []string{"", "{", "not json", `{"base_url":"https://a","client_id":"id"}`, `{"token":"x","valid_till":"yesterday"}`} {
		dir := filepath.Join(t.TempDir(), "tokens")
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		p := s.path(keyOf(key("https://a", "id", "s3cret")))
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, ok, err := s.Get(key("https://a", "id", "s3cret"))
		if ok || err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "delete it") {
			t.Errorf("%q: ok %v err %v, want an error naming %s", content, ok, err, p)
		}
		// Put repairs it.
		if err := s.Put(key("https://a", "id", "s3cret"), api.Token{Value: "new", ValidTill: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := s.Get(key("https://a", "id", "s3cret")); !ok || err != nil || got.Value != "new" {
			t.Errorf("after Put: %+v %v %v", got, ok, err)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	given := func(k string) string {
		if k == EnvDir {
			return "/tmp/x/tokens"
		}
		return ""
	}
	if d, err := DefaultDir(given); err != nil || d != "/tmp/x/tokens" {
		t.Errorf("with %s: %q %v", EnvDir, d, err)
	}
	t.Setenv(EnvDir, "/not/this/one") // the process's own is not read
	t.Setenv("XDG_CACHE_HOME", "/tmp/cache")
	t.Setenv("HOME", "/tmp/home")
	d, err := DefaultDir(func(string) string { return "" })
	if err != nil || !strings.HasSuffix(d, filepath.Join("smsform", "tokens")) {
		t.Errorf("default: %q %v", d, err)
	}
}

func TestOpenRefusesAFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(p, nil, 0o600)
	if _, err := Open(p); err == nil {
		t.Error("Open of a file succeeded")
	}
}

func key(base, id, secret string) api.TokenKey {
	return api.TokenKey{BaseURL: base, ClientID: id, ClientSecret: secret}
}

func TestFilesHoldNoSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tokens")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(key("https://a", "id", "the-client-secret"), api.Token{Value: "tok", ValidTill: time.Now().Add(time.Hour), Basic: api.BasicLiteral}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.Contains(string(b), "the-client-secret") {
			t.Errorf("%s holds the client secret: %s", e.Name(), b)
		}
	}
	got, ok, err := s.Get(key("https://a", "id", "the-client-secret"))
	if !ok || err != nil || got.Basic != api.BasicLiteral {
		t.Errorf("Get = %+v %v %v, want the literal Basic form remembered", got, ok, err)
	}
}
