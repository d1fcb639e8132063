package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

// secret is the password every location below holds; no output may show
// it, nor any part of it long enough to matter.
const secret = "hunter2-never-shown"

// secretLocations are the forms a password comes in: a URL's user
// information (with a role, and with none, as a token), its parameters, a
// keyword string (quoted with blanks, and bare), and a URL whose password
// holds / so that it does not parse.
func secretLocations(db string) map[string]string {
	u, _ := url.Parse(db) // the test server listens on a unix socket
	sock, name := u.Query().Get("host"), strings.TrimPrefix(u.Path, "/")
	q := "?host=" + url.QueryEscape(sock) + "&sslmode=disable"
	kw := "host=" + sock + " dbname=" + name
	return map[string]string{
		// The role ops does not exist: the server refuses it.
		"url":         "postgres://ops:" + secret + "@/" + name + q,
		"token":       "postgres://:" + secret + "@/" + name + q,
		"parameter":   "postgresql:///" + name + q + "&password=" + secret,
		"sslpassword": "postgres:///" + name + q + "&sslpassword=" + secret,
		"keywords":    kw + " user=ops password=" + secret,
		"quoted":      kw + " password='" + secret + " x\\'y' user=postgres",
		"unparsable":  "postgres://ops:" + secret + "/x@/" + name + q,
		"unreachable": "postgres://ops:" + secret + "@127.0.0.1:1/x?connect_timeout=2",
		"no such db":  "postgres://postgres:" + secret + "@/no_such_database_here" + q,
		"bad schema":  "postgres://postgres:" + secret + "@/" + name + q + "&schema=Bad-Name",
		"bad sslmode": kw + " password='" + secret + " x' sslmode=sometimes",
		"bad port":    "host=db port=99999 password='" + secret + " x'",
		"upper case":  kw + " user=ops PASSWORD=" + secret,
		"upper param": "postgres:///" + name + q + "&Password=" + secret,
		"two @":       "postgres://ops:hunter2@never-shown@/" + name + q,
		"#":           "postgres://ops:hunter2#never-shown@/" + name + q,
	}
}

// refused are the secretLocations ParseLocation refuses: URLs whose
// password holds an unencoded @ / ? or #, a password keyword in upper case.
var refused = map[string]bool{"unparsable": true, "upper case": true, "upper param": true, "two @": true, "#": true}

// TestLocationNeverShowsPassword feeds locations that hold a password
// through everything a Location reaches a person by: its String, every fmt
// verb, slog's text and JSON handlers, encoding/json, and the errors of
// opening it (unreachable, refused by the server, badly written), against
// the real PostgreSQL.
func TestLocationNeverShowsPassword(t *testing.T) {
	db := pg.Database(t)
	ctx := context.Background()
	for name, raw := range secretLocations(db) {
		t.Run(name, func(t *testing.T) {
			l, err := ParseLocation(raw)
			if refused[name] {
				// Read two ways (see redact.Ambiguous), it is refused
				// before anything connects, the password unshown.
				if !errors.Is(err, ErrLocation) || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "never-shown") {
					t.Errorf("ParseLocation = %v, want ErrLocation without the password", err)
				}
				for what, out := range map[string]string{"Redact": Redact(raw), "WithoutPassword": WithoutPassword(raw)} {
					if strings.Contains(out, "hunter2") || strings.Contains(out, "never-shown") {
						t.Errorf("%s shows the password: %s", what, out)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLocation: %v", err)
			}
			if !l.HasPassword() || !l.IsPostgres() || l.Unmasked() != raw {
				t.Errorf("HasPassword %v, IsPostgres %v, Unmasked %v", l.HasPassword(), l.IsPostgres(), l.Unmasked() == raw)
			}
			var logs bytes.Buffer
			slog.New(slog.NewTextHandler(&logs, nil)).Info("open", "state", l)
			slog.New(slog.NewJSONHandler(&logs, nil)).Info("open", "state", l)
			js, _ := json.Marshal(struct{ State Location }{l})
			outputs := map[string]string{
				"String": l.String(), "WithoutPassword": l.WithoutPassword(), "Redact": Redact(raw),
				"%v": fmt.Sprintf("%v", l), "%+v": fmt.Sprintf("%+v", l), "%#v": fmt.Sprintf("%#v", l),
				"%s": fmt.Sprintf("%s", l), "%q": fmt.Sprintf("%q", l), "struct %+v": fmt.Sprintf("%+v", struct{ L Location }{l}),
				"struct %#v": fmt.Sprintf("%#v", struct{ L Location }{l}), "slog": logs.String(), "json": string(js),
			}
			if _, err := Open(ctx, MustParseLocation(raw), Options{Campaign: "spring"}); err != nil {
				outputs["Open"] = err.Error()
			}
			if _, err := OpenReadOnly(ctx, MustParseLocation(raw), "spring"); err != nil {
				outputs["OpenReadOnly"] = err.Error()
			}
			if _, err := Campaigns(ctx, MustParseLocation(raw)); err != nil {
				outputs["Campaigns"] = err.Error()
			}
			for what, out := range outputs {
				if strings.Contains(out, "hunter2") || strings.Contains(out, "never-shown") {
					t.Errorf("%s shows the password: %s", what, out)
				}
			}
			if s := l.String(); !strings.Contains(s, "xxxxx") {
				t.Errorf("String %q does not say a password was there", s)
			}
		})
	}
}

// TestLocationKeepsWords proves the masked forms outputs and scripts
// match: the role and the rest of the location stay.
func TestLocationKeepsWords(t *testing.T) {
	for raw, want := range map[string]string{
		"postgres://ops:s3cret@db/x":                  "postgres://ops:xxxxx@db/x",
		"postgres://:s3cret@db/x":                     "postgres://:xxxxx@db/x",
		"host=db password='a b' dbname=x":             "host=db password=xxxxx dbname=x",
		"postgres://db/x?sslpassword=s3cret&schema=a": "postgres://db/x?schema=a&sslpassword=xxxxx",
		"spring.smsstate":                             "spring.smsstate",
	} {
		l, err := ParseLocation(raw)
		if err != nil {
			t.Fatal(err)
		}
		if l.String() != want || fmt.Sprint(l) != want {
			t.Errorf("%s: shown %q, want %q", want, l.String(), want)
		}
	}
	if l, _ := ParseLocation("host=db password=x dbname=y"); l.WithoutPassword() != "dbname='y' host='db'" {
		t.Errorf("WithoutPassword = %q", l.WithoutPassword())
	}
}

// TestLocationRefusesPasswordReadTwoWays: a URL whose password holds an
// unencoded @ (twice before the host), / ? or # reads one way to the
// masking and another to pgx, which then showed a piece of the password
// as the host ("lookup tPassw0rd@127.0.0.1: no such host") or refused it
// oddly ("names no database", "invalid port"). Such a URL is refused as it
// is read, saying how to write the password, and no piece of it shows.
func TestLocationRefusesPasswordReadTwoWays(t *testing.T) {
	for _, loc := range []string{
		"postgres://postgres:S3cr@tPassw0rd@127.0.0.1:55432/sms?sslmode=disable",
		"postgres://postgres:S3cr#tPassw0rd@127.0.0.1:55432/sms?sslmode=disable",
		"postgres://postgres:S3cr?tPassw0rd@127.0.0.1:55432/sms?sslmode=disable",
		"postgres://postgres:S3cr/tPassw0rd@127.0.0.1:55432/sms?sslmode=disable",
		"postgres://postgres:S3cr@tPa/ssw0rd@127.0.0.1:55432/sms",
		"postgres://postgres:S3cr@tPa?ssw0rd@127.0.0.1:55432/sms",
		"postgresql://:S3cr@tPassw0rd@db/sms",
	} {
		err := CheckLocation(loc)
		if !errors.Is(err, ErrLocation) || !strings.Contains(err.Error(), "%40") || !strings.Contains(err.Error(), "PGPASSWORD") {
			t.Errorf("%s: %v, want ErrLocation saying to percent-encode the password or set PGPASSWORD", Redact(loc), err)
		}
		shown := map[string]string{"Redact": Redact(loc), "WithoutPassword": WithoutPassword(loc)}
		if err != nil {
			shown["error"] = err.Error()
		}
		for what, out := range shown {
			for _, piece := range []string{"S3cr", "tPa", "ssw0rd"} {
				if strings.Contains(out, piece) {
					t.Errorf("%s of %s shows %q of the password: %s", what, Redact(loc), piece, out)
				}
			}
		}
		if !newLocation(loc).HasPassword() {
			t.Errorf("%s: not taken to hold a password", Redact(loc))
		}
	}
	// Encoded, or with an @ where a URL may have one, it is read.
	for _, loc := range []string{
		"postgres://postgres:S3cr%40tPassw0rd@127.0.0.1:55432/sms?sslmode=disable",
		"postgres://postgres:S3cr%23t%3F%2F@db/sms",
		"postgres://db/sms?application_name=ann@laptop",
		"postgres://ann@db/sms?application_name=ann@laptop",
	} {
		if err := CheckLocation(loc); err != nil {
			t.Errorf("%s: %v", loc, err)
		}
	}
}
