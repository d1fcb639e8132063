package words

import (
	"strings"
	"unicode"
)

// ReplyWord is a reply's text as it is compared with the stop and start
// words, and a configured word as it is listed: upper case, without the
// spaces and punctuation around it. "Stop." and " stop!" ask what STOP
// does (a person who wrote them wants no more); "stop please" is not a
// word. A text of punctuation alone is "", which no word is.
func ReplyWord(text string) string {
	return strings.ToUpper(strings.TrimFunc(text, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }))
}
