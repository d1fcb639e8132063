package words

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReplyWord(t *testing.T) {
	for text, want := range map[string]string{
		"STOP": "STOP", " stop ": "STOP", "Stop.": "STOP", "stop!": "STOP", `"STOP"`: "STOP", "¡Stop!": "STOP",
		"stop please": "STOP PLEASE", "STOP-ALL": "STOP-ALL", "?": "", "": "", "Ünsubscribe": "ÜNSUBSCRIBE",
		"Stop 🛑": "STOP", "STOP ❤️": "STOP", "🙅‍♀️ stop": "STOP", "❤️": "", "+STOP+": "STOP",
		// A mark inside a word stays: composed with its letter when it has
		// a composed form (Ê), as it is when it has none.
		"ARRE\u0302T": "ARR\u00caT", "ST\u20ddOP": "ST\u20ddOP",
		// A phrase's words, however they are parted.
		"STOP  ALL": "STOP ALL", "stop\nall": "STOP ALL", "Stop\tAll": "STOP ALL", "opt \u2003 out": "OPT OUT", "OPT\r\nOUT.": "OPT OUT",
	} {
		if got := ReplyWord(text); got != want {
			t.Errorf("ReplyWord(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestLooseReplyWord: the forms of STOP a person may type that ReplyWord
// keeps apart, read as the stop words are listed.
func TestLooseReplyWord(t *testing.T) {
	for text, want := range map[string]string{
		"Opt-Out": "OPT OUT", "opt_out": "OPT OUT", "OPT‑OUT": "OPT OUT", "STOP STOP": "STOP", "stop stop stop!": "STOP",
		"s t o p": "STOP", "S.T.O.P": "STOP", "STOP,STOP": "STOP", "stop!stop": "STOP", "S​TOP": "STOP", "ST\x00OP": "STOP", "STO­P": "STOP",
		"STOP ALL": "STOP ALL", "stop please": "STOP PLEASE", "a stop": "A STOP", "STOP-LOSS": "STOP LOSS", "": "", "- -": "",
	} {
		if got := LooseReplyWord(text); got != want {
			t.Errorf("LooseReplyWord(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestStopReadings: the whole reply, its first line and its first and last
// words are each looked for a stop word.
func TestStopReadings(t *testing.T) {
	for text, want := range map[string]string{
		"STOP\nSent from my iPhone": "STOP SENT FROM MY IPHONE|STOP|STOP|IPHONE",
		"Stop texting me":           "STOP TEXTING ME|STOP TEXTING ME|STOP|ME",
		"pls stop":                  "PLS STOP|PLS STOP|PLS|STOP",
		"STOP":                      "STOP|STOP",
		"":                          "",
	} {
		if got := strings.Join(StopReadings(text), "|"); got != want {
			t.Errorf("StopReadings(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestReplyWordFolds: the forms a phone or a gateway may give a word
// (full-width letters, control characters around it) are that word,
// written in ASCII as the stop and start words are; a lookalike from
// another script, or a control inside the word, is not.
func TestReplyWordFolds(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"ＳＴＯＰ", "STOP"},
		{"ｓｔｏｐ", "STOP"},
		{"Ｓｔｏｐ！", "STOP"},
		{"\u3000ＳＴＡＲＴ\u3000", "START"}, // and the full-width space
		{"ＵＮＳＵＢＳＣＲＩＢＥ", "UNSUBSCRIBE"},
		{"ｕｎｓｔｏｐ", "UNSTOP"},
		{"ＳＴＯＰＡＬＬ", "STOPALL"},
		{"ｃａｎｃｅｌ", "CANCEL"},
		{"STOP\x00", "STOP"},
		{"\x00STOP\x00", "STOP"},
		{"STOP\x1b", "STOP"},
		{"\x1b[0mSTOP", "0MSTOP"}, // an escape sequence's letters are letters
		{"STOP\x7f", "STOP"},
		{"\u009bSTOP\u0085", "STOP"}, // C1: CSI, NEL
		{"ｓｔｏｐ\x00\x1b", "STOP"},
		{"\x07 Start \x7f", "START"},
		{"ſtop", "STOP"},  // long s: STOP before NFKC already
		{"STOP™", "STOP"}, // a symbol set aside before NFKC makes it TM
		{"ＳＴＯＰ ™", "STOP"},
		{"ЅТОР", "ЅТОР"}, // Cyrillic lookalikes: NFKC leaves them
		{"SТOP", "SТOP"}, // one Cyrillic Т among Latin letters
		{"ΣΤΟΡ", "ΣΤΟΡ"}, // Greek
		{"ST\x00OP", "ST\x00OP"},
		{"\x00", ""},
	} {
		got := ReplyWord(tt.text)
		if got != tt.want {
			t.Errorf("ReplyWord(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
	// The word a reply is kept and written with is the ASCII word, not the
	// full-width one it came as.
	for _, text := range []string{"ＳＴＯＰ", "ｓｔａｒｔ\x00"} {
		if got := ReplyWord(text); len(got) != utf8.RuneCountInString(got) {
			t.Errorf("ReplyWord(%q) = %q, not ASCII", text, got)
		}
	}
}

// FuzzReplyWord: a word as ReplyWord writes it is read back as itself (a
// configured word listed, or a reply's word kept, compares as it was), and
// it has nothing ReplyWord sets aside at either end.
func FuzzReplyWord(f *testing.F) {
	for _, s := range []string{"STOP", " stop! ", "ＳＴＯＰ\x00", "ARRE\u0302T", "STOP™", "ЅТОР", "ﬆop", "\x1b[0m", "ǆ\u0345\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		w := ReplyWord(text)
		if again := ReplyWord(w); again != w {
			t.Fatalf("ReplyWord(%q) = %q, but ReplyWord(%q) = %q", text, w, w, again)
		}
		if strings.TrimFunc(w, aside) != w {
			t.Fatalf("ReplyWord(%q) = %q: something set aside at an end", text, w)
		}
	})
}
