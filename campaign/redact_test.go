package campaign

import "testing"

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://sms.example.com":                  "https://sms.example.com",
		"https://me:hunter2@sms.example.com/a@b":   "https://xxxxx@sms.example.com/a@b",
		"https://tok@en@sms.example.com?x=@":       "https://xxxxx@sms.example.com?x=@",
		"http://me:hunter2@[::1]:80#frag@":         "http://xxxxx@[::1]:80#frag@",
		"me:hunter2@sms.example.com/path":          "xxxxx@sms.example.com/path",
		"https://me:hunter2@sms.example.com:bad/x": "https://xxxxx@sms.example.com:bad/x",
		"":  "",
		"@": "xxxxx@",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
