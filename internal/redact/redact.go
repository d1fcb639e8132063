// Package redact masks secrets in strings shown to people: the
// credentials a URL may carry ([URL], [Bare]) and the passwords of a libpq
// keyword/value string ([Keywords]). It is the one place that masks by
// hand: a PostgreSQL state location is a state.Location, which builds on
// it, and every other URL a message shows (an API base URL, a redirect)
// goes through it.
package redact

import (
	"net/url"
	"strings"
)

// Mask is what a secret is replaced by: outputs and tests rely on the
// exact word.
const Mask = "xxxxx"

// URL is raw with everything between its scheme and its last @
// replaced by xxxxx, even when raw does not parse: url.URL.Redacted keeps
// the user name, which may be a token, needs a URL that parses, and a
// password holding an unencoded / ? or # ends the authority early. An @
// later in the URL (a path) makes it mask more than the user info, which
// is harmless in a message.
func URL(raw string) string {
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + len("://")
	}
	at := strings.LastIndex(raw[start:], "@")
	if at < 0 {
		return raw
	}
	return raw[:start] + Mask + raw[start+at:]
}

// Bare is raw with only its scheme, host and path: a URL someone else
// wrote (a redirect's Location) may carry anything in its user
// information, query or fragment. ok is false when raw does not parse,
// and then nothing of it may be shown.
func Bare(raw string) (bare string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	u.User = nil
	u.RawQuery, u.ForceQuery = "", false
	u.Fragment, u.RawFragment = "", ""
	return u.String(), true
}

// IsSecretKey reports whether a connection parameter (a libpq keyword, a
// URL's query parameter) holds a secret: the password, and the one that
// unlocks a client key. In any case: libpq knows only the lower-case
// keyword, but PASSWORD=… still holds the password as written (pgx passes
// it to the server as a setting, whose error quotes it back), so it is
// masked and counts as a password written down all the same.
func IsSecretKey(key string) bool {
	return strings.EqualFold(key, "password") || strings.EqualFold(key, "sslpassword")
}

// HasPassword reports whether a PostgreSQL connection string (a URL or a
// keyword/value string) holds a secret: a URL's password, or a secret
// parameter or keyword ([IsSecretKey]). A URL whose user information does
// not parse is taken to hold one.
func HasPassword(conn string) bool {
	if !strings.HasPrefix(conn, "postgres://") && !strings.HasPrefix(conn, "postgresql://") {
		pairs, err := ParseKeywords(conn)
		if err != nil {
			return maskFromSecret(conn) != conn
		}
		for _, p := range pairs {
			if IsSecretKey(p.Key) {
				return true
			}
		}
		return false
	}
	u, ok := ParseURL(conn)
	if !ok {
		return URL(conn) != conn
	}
	if u.User != nil {
		if _, set := u.User.Password(); set {
			return true
		}
	}
	for k := range u.Query() {
		if IsSecretKey(k) {
			return true
		}
	}
	return false
}

// ParseURL parses a URL, reporting false when it does not parse or parses
// wrongly: a password holding / ? or # ends the authority early, and the
// rest may then parse as a path with the credentials in it; one holding @
// is read up to its last @ by Go and to its first by pgx (see Ambiguous).
func ParseURL(raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	rest := raw[min(len(raw), strings.Index(raw, "://")+3):]
	return u, err == nil && (u.User != nil || !strings.Contains(rest, "@")) && Ambiguous(raw) == ""
}

// Ambiguous says why a URL's user information cannot be told apart from
// the rest, "" when it can. A password written with an unencoded @, /, ?
// or # is read one way by Go's url.Parse (which masks) and another by
// pgx's parser (which connects): pgx splits the user information at the
// first @, url.Parse at the last, and a / ? or # ends the authority before
// the password does. Each then takes part of the password for the host,
// the database or a parameter, and shows it in its errors ("lookup
// tPassw0rd@127.0.0.1: no such host") while the masked form hides another
// part. So such a URL is read by neither: the signs, none of which a
// well-formed PostgreSQL URL has, are an @ twice before the host, an @ in
// the path or in a parameter's name, and a # anywhere (libpq's URLs have
// no fragment).
func Ambiguous(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return ""
	}
	rest := raw[i+len("://"):]
	if strings.Contains(rest, "#") {
		return "it holds an unencoded #, which ends a URL's address"
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	if strings.Count(rest[:end], "@") > 1 {
		return "it holds more than one unencoded @ before the host, so where the password ends is unclear"
	}
	path, query, _ := strings.Cut(rest[end:], "?")
	if strings.Contains(path, "@") {
		return "it holds an unencoded @ after a / (a / in the password ends the host early)"
	}
	for _, kv := range strings.Split(query, "&") {
		if k, _, _ := strings.Cut(kv, "="); strings.Contains(k, "@") {
			return "it holds an unencoded @ after a ? (a ? in the password starts the parameters early)"
		}
	}
	return ""
}

// Secrets is msg with every secret of the connection string conn that it
// quotes replaced by xxxxx: for a message written by code that saw conn
// (a driver's error), whose own masking cannot be relied on.
func Secrets(msg, conn string) string {
	for _, s := range secretsOf(conn) {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, Mask)
		}
	}
	return msg
}

// secretsOf lists the secrets conn holds, as written and as read: a URL's
// user information when it does not parse (it is then unclear where the
// password ends).
func secretsOf(conn string) []string {
	var out []string
	if !strings.HasPrefix(conn, "postgres://") && !strings.HasPrefix(conn, "postgresql://") {
		pairs, _ := ParseKeywords(conn)
		for _, p := range pairs {
			if IsSecretKey(p.Key) {
				out = append(out, p.Value, conn[p.start:p.end])
			}
		}
		return out
	}
	if u, ok := ParseURL(conn); ok {
		if pw, set := u.User.Password(); set { // Password is nil-safe
			out = append(out, pw, url.PathEscape(pw), url.QueryEscape(pw))
		}
		for k, vs := range u.Query() {
			if IsSecretKey(k) {
				for _, v := range vs {
					out = append(out, v, url.QueryEscape(v))
				}
			}
		}
		return out
	}
	start := strings.Index(conn, "://") + len("://")
	if at := strings.LastIndex(conn, "@"); at > start {
		user := conn[start:at]
		out = append(out, user)
		if _, pw, ok := strings.Cut(user, ":"); ok {
			out = append(out, pw)
		}
	}
	return out
}
