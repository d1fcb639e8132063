package redact

import (
	"errors"
	"fmt"
	"strings"
)

// A Pair is one keyword = value of a libpq keyword/value string, with
// where its value's text lies in the string (quotes included), so that it
// can be masked in place.
type Pair struct {
	Key, Value string
	start, end int
}

// ParseKeywords splits a libpq keyword/value string ("host=db
// password='a b'") into its pairs, by the rules pgx (and libpq) read it
// with: blanks separate pairs, a value is single-quoted when it holds
// blanks, a backslash takes the next character as it is. pgx reads the
// connection itself but does not hand its pairs back, and masking a
// password in the text needs where it lies: this is the one reader of the
// syntax, and a fuzz test holds it to pgx's.
func ParseKeywords(s string) ([]Pair, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, errors.New("a NUL byte in a connection string")
	}
	var pairs []Pair
	for i := skipSpace(s, 0); i < len(s); i = skipSpace(s, i) {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, fmt.Errorf("expected keyword=value at %q", clip(s[i:], 20))
		}
		key := strings.Trim(s[i:i+eq], spaces)
		if key == "" || strings.ContainsAny(key, spaces) {
			return nil, fmt.Errorf("expected keyword=value at %q", clip(s[i:], 20))
		}
		start := skipSpace(s, i+eq+1)
		end, err := valueEnd(s, start)
		if err != nil {
			return nil, fmt.Errorf("the value of %s %v", key, err)
		}
		pairs = append(pairs, Pair{Key: key, Value: unquote(s[start:end]), start: start, end: end})
		i = end
	}
	return pairs, nil
}

const spaces = " \t\n\r\v\f"

func skipSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(spaces, s[i]) >= 0 {
		i++
	}
	return i
}

// valueEnd is where the value starting at s[start] ends: after its closing
// quote, or at the first blank of an unquoted value.
func valueEnd(s string, start int) (int, error) {
	if start < len(s) && s[start] == '\'' {
		for i := start + 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '\'':
				return i + 1, nil
			}
		}
		return 0, errors.New("has no closing quote")
	}
	i := start
	for ; i < len(s) && strings.IndexByte(spaces, s[i]) < 0; i++ {
		if s[i] == '\\' {
			i++
		}
	}
	return min(i, len(s)), nil
}

// unquote is a value's text as libpq reads it: quotes gone, each
// backslash dropped and the character after it kept.
func unquote(v string) string {
	if strings.HasPrefix(v, "'") {
		v = v[1 : len(v)-1]
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' {
			i++
			if i == len(v) {
				break
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// Keywords is a libpq keyword/value string with the value of each secret
// ([IsSecretKey]) replaced by xxxxx, the rest as written. A string that
// does not read is masked whole from its first secret keyword on, since
// where the secret ends cannot be told.
func Keywords(s string) string {
	pairs, err := ParseKeywords(s)
	if err != nil {
		return maskFromSecret(s)
	}
	var b strings.Builder
	last := 0
	for _, p := range pairs {
		if IsSecretKey(p.Key) {
			b.WriteString(s[last:p.start])
			b.WriteString(Mask)
			last = p.end
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// maskFromSecret is s cut at its first "password" in any case
// (sslpassword too), with xxxxx in place of the rest.
func maskFromSecret(s string) string {
	i := indexFold(s, "password")
	if i < 0 {
		return s
	}
	return s[:i] + "password=" + Mask
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// indexFold is strings.Index of the ASCII word in s, in any case; a byte
// offset into s itself (strings.ToLower may change lengths).
func indexFold(s, word string) int {
	for i := 0; i+len(word) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}
