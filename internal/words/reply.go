package words

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ReplyWord is a reply's text as it is compared with the stop and start
// words, and a configured word as it is listed: upper case, in Unicode's
// compatibility form (NFKC), without the spaces, punctuation, symbols and
// control characters around it (an emoji: a symbol, perhaps with a
// variation selector or joiners). "Stop.", " stop!" and "STOP 🛑" ask what
// STOP does (a person who wrote them wants no more); so do "ＳＴＯＰ" and
// "ｓｔｏｐ", the full-width letters some phones' keyboards send, and
// "STOP\x00", a gateway's stray byte. The words of a phrase are parted by
// one space, however many or of whatever kind were typed. "stop please" is
// not a word. A text of those alone is "", which no word is.
//
// NFKC folds only what Unicode holds to be the same letters written
// another way (full-width, ligatures, mathematical styles); a lookalike
// from another script, the Cyrillic "ЅТОР", stays itself and is no STOP.
func ReplyWord(text string) string {
	// What is set aside goes before the folding too: NFKC writes some
	// symbols as letters ("™" is "TM"), and "STOP™" is STOP as it always
	// was. And after: a folded character may leave a space at an edge.
	text = strings.TrimFunc(text, aside)
	word := strings.ToUpper(strings.TrimFunc(norm.NFKC.String(text), aside))
	// A phrase's words are parted by one space however they were typed
	// ("STOP  ALL", "OPT\nOUT"): the person asked the same.
	return strings.Join(strings.Fields(word), " ")
}

// DefaultStopWords and DefaultStartWords are the replies that opt out and
// back in unless a project's receive: says otherwise: the FCC's revocation
// words and STOPALL; START and UNSTOP.
var (
	DefaultStopWords  = []string{"STOP", "STOPALL", "STOP ALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "REVOKE", "OPT OUT", "OPTOUT"}
	DefaultStartWords = []string{"START", "UNSTOP"}
)

// LooseReplyWord is ReplyWord read more loosely, for the stop words alone:
// a person who wrote "Opt-Out", "STOP STOP", "s t o p" or a STOP with an
// invisible character inside (a zero-width space a keyboard or a copy left)
// wants no more, and reading more replies as STOP than were meant is the
// safe side, which reading more as START is not. Format and control
// characters inside are dropped, punctuation and symbols part words
// ("STOP,STOP", "S.T.O.P"), a word said twice in a row is said once, and
// letters typed apart one by one are one word.
func LooseReplyWord(text string) string {
	text = strings.Map(func(r rune) rune {
		switch {
		case unicode.Is(unicode.Cf, r) || (unicode.IsControl(r) && !unicode.IsSpace(r)):
			return -1
		case unicode.IsPunct(r) || unicode.IsSymbol(r):
			return ' '
		}
		return r
	}, text)
	fields := strings.Fields(ReplyWord(text))
	if len(fields) > 1 && !slices.ContainsFunc(fields, func(f string) bool { return utf8.RuneCountInString(f) > 1 }) {
		fields = []string{strings.Join(fields, "")}
	}
	return strings.Join(slices.Compact(fields), " ")
}

// StopReadings are the readings of a reply to look for a stop word in,
// loosely (see LooseReplyWord): the whole text; its first line, a phone's
// signature below it ("STOP\nSent from my iPhone"); and its first and its
// last word alone ("Stop texting me", "pls stop"). A person who wrote a
// stop word so wants no more: read so, a reply that did not mean it opts a
// number out, the safe side.
func StopReadings(text string) []string {
	out := []string{LooseReplyWord(text)}
	for _, line := range strings.Split(text, "\n") {
		if w := LooseReplyWord(line); w != "" {
			out = append(out, w)
			break
		}
	}
	if f := strings.Fields(out[0]); len(f) > 1 {
		out = append(out, f[0], f[len(f)-1])
	}
	return out
}

// aside is what ReplyWord sets aside around a word. Control characters
// (C0, DEL, C1) are among it: no person types them, a gateway or a
// phone's encoding leaves them, and they would make STOP another word.
func aside(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.IsMark(r) ||
		unicode.Is(unicode.Cf, r) || unicode.IsControl(r)
}
