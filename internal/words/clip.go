package words

import "unicode/utf8"

// Clip shortens s to its first n characters followed by "…" when it is
// longer than n characters; it never cuts inside a UTF-8 sequence. It is
// the one way smsform shortens text from outside (a provider's answer, a
// value in a message) to a bounded length.
func Clip(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}
