package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTransportTrouble: a request that cannot reach the provider says
// why, and for which host: what a person must fix, not what to wait for.
func TestTransportTrouble(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{}`) })
	tlsSrv := httptest.NewTLSServer(ok)
	defer tlsSrv.Close()
	plain := httptest.NewServer(ok)
	defer plain.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	for _, tt := range []struct {
		name, base string
		want       Trouble
		says       string
	}{
		{"untrusted certificate", tlsSrv.URL, TroubleCertificate, "certificate of " + strings.TrimPrefix(tlsSrv.URL, "https://")},
		{"refused", "http://" + closed, TroubleRefused, "connection to " + closed + " was refused"},
		{"plain http to https", strings.Replace(plain.URL, "http://", "https://", 1), TroublePlainHTTP, "plain HTTP"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{BaseURL: tt.base, ClientID: testID, ClientSecret: testSecret, Timeout: 5 * time.Second}
			for _, call := range []func() error{
				func() error { _, err := c.IssueToken(context.Background(), 1); return err },
				func() error { _, err := c.Send(context.Background(), testToken, testReq); return err },
			} {
				e := asError(t, call())
				if e.Trouble != tt.want || e.Reached || !e.Unreachable() || e.Certificate() != (tt.want == TroubleCertificate) {
					t.Errorf("got trouble %v reached %v, want %v: %v", e.Trouble, e.Reached, tt.want, e)
				}
				if !strings.Contains(e.Error(), tt.says) {
					t.Errorf("error %q does not say %q", e, tt.says)
				}
			}
		})
	}
	dns := &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}}
	if got := troubleOf(fmt.Errorf("post: %w", dns)); got != TroubleDNS {
		t.Errorf("a DNS failure is %v, want TroubleDNS", got)
	}
	if got := troubleOf(errors.New("read: connection reset by peer")); got != TroubleNone {
		t.Errorf("a reset is %v, want TroubleNone", got)
	}
}
