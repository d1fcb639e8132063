package redact

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://sms.example.com":                  "https://sms.example.com",
		"https://me:hunter2@sms.example.com/a@b":   "https://xxxxx@b",
		"https://tok@en@sms.example.com?x=@":       "https://xxxxx@",
		"http://me:hunter2@[::1]:80#frag@":         "http://xxxxx@",
		"https://me:s3cr/et@sms.example.com":       "https://xxxxx@sms.example.com",
		"https://me:pa?ss@sms.example.com":         "https://xxxxx@sms.example.com",
		"https://tok#en@sms.example.com":           "https://xxxxx@sms.example.com",
		"me:hunter2@sms.example.com/path":          "xxxxx@sms.example.com/path",
		"https://me:hunter2@sms.example.com:bad/x": "https://xxxxx@sms.example.com:bad/x",
		"":  "",
		"@": "xxxxx@",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBare(t *testing.T) {
	for in, want := range map[string]string{
		"https://tok:hunter2@sms.example.com/v2/x?token=hunter2#hunter2": "https://sms.example.com/v2/x",
		"/login?next=hunter2":       "/login",
		"https://sms.example.com/?": "https://sms.example.com/",
	} {
		if got, ok := Bare(in); !ok || got != want {
			t.Errorf("Bare(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := Bare("http://a b:hunter2@%zz"); ok || got != "" {
		t.Errorf("an unparsable URL: %q, %v", got, ok)
	}
}

func TestKeywords(t *testing.T) {
	for in, want := range map[string]string{
		"host=db dbname=x":                          "host=db dbname=x",
		"host=db password=hunter2 dbname=x":         "host=db password=xxxxx dbname=x",
		`host=db password = 'a b\'hunter2' user=u`:  "host=db password = xxxxx user=u",
		`password=hunt\ er2 sslpassword='hunter2'`:  "password=xxxxx sslpassword=xxxxx",
		"host=db password='hunter2":                 "host=db password=xxxxx", // no closing quote
		"passwordx=1 host=db":                       "passwordx=1 host=db",
		"host=db password=hunter2\tpassword=again2": "host=db password=xxxxx\tpassword=xxxxx",
	} {
		if got := Keywords(in); got != want {
			t.Errorf("Keywords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHasPassword(t *testing.T) {
	for in, want := range map[string]bool{
		"postgres://u@db/x":                     false,
		"postgres://u:hunter2@db/x":             true,
		"postgres://:tok3n@db/x":                true,
		"postgres://u:@db/x":                    true,
		"postgresql://db/x?password=hunter2":    true,
		"postgresql://db/x?sslpassword=hunter2": true,
		"postgres://u:12/34@db/x":               true, // does not parse: taken to hold one
		"host=db password=hunter2":              true,
		"host=db sslpassword=hunter2":           true,
		"host=db passwordx=1":                   false,
		// libpq knows only the lower-case keyword; written otherwise it
		// still holds the password, which pgx sends the server as a setting.
		"host=db PASSWORD=UpperSecretXY":          true,
		"postgres://db/x?Password=UpperSecretXY":  true,
		"postgres://db/x?SSLPassword=UpperSecret": true,
		"host=db PassWord='unclosed":              true,
		"host=db dbname=x":                        false,
	} {
		if got := HasPassword(in); got != want {
			t.Errorf("HasPassword(%q) = %v, want %v", in, got, want)
		}
	}
}

// sentinel is a password pgx reads when the string under test names none:
// keyword strings are read left to right and a later keyword wins, so
// pgx's password is the string's own exactly when it names one, whatever
// PGPASSWORD says.
const sentinel = "sentinel-not-in-the-string"

// FuzzParseKeywords holds ParseKeywords to pgx's reading of the same
// string: it refuses what pgx refuses as keyword/value syntax, and the
// password it finds is the one pgx would send.
func FuzzParseKeywords(f *testing.F) {
	for _, s := range []string{
		"host=db dbname=x", "host=db password=hunter2", `password='a b\'c' user=u`,
		`password=a\ b`, "password= host=db", "host='db", `host=db\`, "=x", "a b=c",
		"password=x password=y", "  dbname = 'my db' port=5433", "host=db password=''",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		t.Setenv("PGPASSFILE", t.TempDir()+"/none")
		t.Setenv("PGSERVICEFILE", t.TempDir()+"/none")
		pairs, err := ParseKeywords(s)
		cfg, perr := pgconn.ParseConfig("password=" + sentinel + " " + s)
		syntax := perr != nil && strings.Contains(perr.Error(), "keyword/value")
		if (err != nil) != syntax {
			t.Fatalf("%q: ParseKeywords: %v; pgx: %v", s, err, perr)
		}
		if err != nil || perr != nil {
			return
		}
		want := sentinel
		for _, p := range pairs {
			if p.Key == "password" {
				want = p.Value
			}
		}
		if cfg.Password != want {
			t.Fatalf("%q: password %q, pgx reads %q", s, want, cfg.Password)
		}
		// Masked, the string reads as the same pairs with every secret
		// xxxxx: the mask took exactly the value's text.
		masked, err := ParseKeywords(Keywords(s))
		if err != nil || len(masked) != len(pairs) {
			t.Fatalf("%q: masked %q reads as %v, %v", s, Keywords(s), masked, err)
		}
		for i, p := range pairs {
			if w := p.Value; IsSecretKey(p.Key) && masked[i].Value != Mask || !IsSecretKey(p.Key) && masked[i].Value != w {
				t.Fatalf("%q: masked %q: pair %d is %q", s, Keywords(s), i, masked[i].Value)
			}
		}
	})
}

// TestMaskAnyCase: a password keyword in another case (PASSWORD=…,
// ?Password=…) is masked like password=, in a string that reads and in
// one that does not.
func TestMaskAnyCase(t *testing.T) {
	for in, want := range map[string]string{
		"host=db PASSWORD=UpperSecretXY dbname=sms": "host=db PASSWORD=xxxxx dbname=sms",
		"host=db SslPassword='a b' dbname=sms":      "host=db SslPassword=xxxxx dbname=sms",
		"host=db PASSWORD='UpperSecretXY":           "host=db password=xxxxx",
	} {
		if got := Keywords(in); got != want {
			t.Errorf("Keywords(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Secrets(`parameter "x" = UpperSecretXY`, "postgres://db/x?Password=UpperSecretXY"); strings.Contains(got, "UpperSecretXY") {
		t.Errorf("Secrets = %q", got)
	}
}
