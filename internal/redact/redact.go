// Package redact masks secrets in strings shown to people: the
// credentials a URL may carry.
package redact

import "strings"

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
	return raw[:start] + "xxxxx" + raw[start+at:]
}

// Keywords is a libpq keyword/value string ("host=db password=x dbname=y")
// with the value of its password keyword replaced by xxxxx, quoted or not.
func Keywords(s string) string {
	var b strings.Builder
	for rest := s; rest != ""; {
		i := strings.Index(rest, "password")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		after := strings.TrimLeft(rest[i+len("password"):], " \t")
		if (i > 0 && !isSpace(rest[i-1])) || !strings.HasPrefix(after, "=") {
			b.WriteString(rest[:i+len("password")])
			rest = rest[i+len("password"):]
			continue
		}
		b.WriteString(rest[:i])
		b.WriteString("password=xxxxx")
		value := strings.TrimLeft(after[1:], " \t")
		rest = value[keywordValueEnd(value):]
	}
	return b.String()
}

// keywordValueEnd is where a keyword's value ends: at its closing quote,
// or at the first blank of an unquoted value (libpq's rules, \ escapes).
func keywordValueEnd(v string) int {
	quoted := strings.HasPrefix(v, "'")
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] == '\\':
			i++
		case quoted && i > 0 && v[i] == '\'':
			return i + 1
		case !quoted && isSpace(v[i]):
			return i
		}
	}
	return len(v)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// HasPassword reports whether a PostgreSQL location holds a password: in a
// URL's user information or password parameter, or a keyword string's
// password keyword.
func HasPassword(loc string) bool {
	if strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://") {
		if URL(loc) != loc {
			authority := loc[strings.Index(loc, "://")+3 : strings.LastIndex(loc, "@")]
			if strings.Contains(authority, ":") {
				return true
			}
		}
		_, query, _ := strings.Cut(loc, "?")
		for _, kv := range strings.Split(query, "&") {
			if k, _, _ := strings.Cut(kv, "="); k == "password" {
				return true
			}
		}
		return false
	}
	return Keywords(loc) != loc
}
