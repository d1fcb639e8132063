package baseurl

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		raw, want string
		err       error
		exposed   bool
	}{
		{raw: "https://sms.example.com", want: "https://sms.example.com"},
		{raw: "https://sms.example.com/v1//", want: "https://sms.example.com/v1"},
		{raw: "HTTPS://sms.example.com", want: "HTTPS://sms.example.com"},
		{raw: "http://sms.example.com", want: "http://sms.example.com", exposed: true},
		{raw: "http://127.0.0.1:8080/", want: "http://127.0.0.1:8080"},
		{raw: "http://LocalHost:8080", want: "http://LocalHost:8080"},
		{raw: "http://[::1]:8080", want: "http://[::1]:8080"},
		{raw: "http://localhost.:8080", want: "http://localhost.:8080", exposed: true},
		{raw: "http://127.0.0.1.example.com", want: "http://127.0.0.1.example.com", exposed: true},
		{raw: "https://me:hunter2@sms.example.com", err: ErrCredentials},
		{raw: "https://tok#en@sms.example.com", err: ErrCredentials},
		{raw: "https://me:s3cr/et@sms.example.com", err: ErrCredentials},
		{raw: "me:hunter2@sms.example.com", err: ErrCredentials},
		{raw: "https://sms.example.com/a@b", err: ErrCredentials},
		{raw: "ftp://sms.example.com", err: ErrNotHTTP},
		{raw: "sms.example.com", err: ErrNotHTTP},
		{raw: "/v1/sms", err: ErrNotHTTP},
		{raw: "https://", err: ErrNotHTTP},
		{raw: "https://sms.example.com:port", err: ErrNotHTTP},
		{raw: "", err: ErrNotHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := Check(tt.raw)
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("Check(%q) error = %v, want %v", tt.raw, err, tt.err)
			}
			if got != tt.want {
				t.Errorf("Check(%q) = %q, want %q", tt.raw, got, tt.want)
			}
			if err == nil && Exposed(got) != tt.exposed {
				t.Errorf("Exposed(%q) = %v, want %v", got, !tt.exposed, tt.exposed)
			}
		})
	}
}
