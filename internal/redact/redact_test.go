package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://sms.example.com":                  "https://sms.example.com",
		"https://me:hunter2@sms.example.com/a@b":   "https://xxxxx@b",
		"https://tok@en@sms.example.com?x=@":       "https://xxxxx@",
		"http://me:hunter2@[::1]:80#frag@":         "http://xxxxx@",
		"https://me:s3cr/et@sms.example.com":       "https://xxxxx@sms.example.com",
		"https://me:pa?ss@sms.example.com":         "https://xxxxx@sms.example.com",
		"https://tok#en@sms.example.com":           "https://xxxxx@sms.example.com",
		"me:hunter2@sms.example.com/path":          "xxxxx@sms.example.com/path",
		"https://me:hunter2@sms.example.com:bad/x": "https://xxxxx@sms.example.com:bad/x",
		"":  "",
		"@": "xxxxx@",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
