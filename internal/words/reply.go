package words

import (
	"strings"
	"unicode"
)

// ReplyWord is a reply's text as it is compared with the stop and start
// words, and a configured word as it is listed: upper case, without the
// spaces, punctuation and symbols around it (an emoji: a symbol, perhaps
// with a variation selector or joiners). "Stop.", " stop!" and "STOP 🛑"
// ask what STOP does (a person who wrote them wants no more); "stop
// please" is not a word. A text of those alone is "", which no word is.
func ReplyWord(text string) string {
	return strings.ToUpper(strings.TrimFunc(text, aside))
}

// aside is what ReplyWord sets aside around a word.
func aside(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.IsMark(r) || unicode.Is(unicode.Cf, r)
}
