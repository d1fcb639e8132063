package words

import "testing"

func TestReplyWord(t *testing.T) {
	for text, want := range map[string]string{
		"STOP": "STOP", " stop ": "STOP", "Stop.": "STOP", "stop!": "STOP", `"STOP"`: "STOP", "¡Stop!": "STOP",
		"stop please": "STOP PLEASE", "STOP-ALL": "STOP-ALL", "?": "", "": "", "Ünsubscribe": "ÜNSUBSCRIBE",
		"Stop 🛑": "STOP", "STOP ❤️": "STOP", "🙅‍♀️ stop": "STOP", "❤️": "", "+STOP+": "STOP", "ARRE\u0302T": "ARRE\u0302T",
	} {
		if got := ReplyWord(text); got != want {
			t.Errorf("ReplyWord(%q) = %q, want %q", text, got, want)
		}
	}
}
