package loopback

import "testing"

func TestHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost":         true,
		"LOCALHOST":         true,
		"LocalHost":         true,
		"127.0.0.1":         true,
		"127.1.2.3":         true,
		"::1":               true,
		"::ffff:127.0.0.1":  true,
		"localhost.":        false,
		"[::1]":             false, // brackets belong to URLs and HOST:PORT, not to hosts
		"":                  false,
		"0.0.0.0":           false,
		"::":                false,
		"10.0.0.1":          false,
		"128.0.0.1":         false,
		"example.com":       false,
		"localhost.example": false,
		"::ffff:10.0.0.1":   false,
	} {
		if got := Host(host); got != want {
			t.Errorf("Host(%q) = %v, want %v", host, got, want)
		}
	}
}
