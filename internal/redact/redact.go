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
