package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/sandbox"
)

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr string
		err  error  // nil: accepted
		says string // part of the message
	}{
		{addr: "127.0.0.1:8080"},
		{addr: "127.0.0.1:0"},
		{addr: "127.1.2.3:0"},
		{addr: "[::1]:0"},
		{addr: "localhost:0"},
		{addr: "LocalHost:65535"},
		{addr: "[::ffff:127.0.0.1]:0"},
		{addr: "0.0.0.0:8080", err: sandbox.ErrNotLoopback, says: "every network interface"},
		{addr: ":8080", err: sandbox.ErrNotLoopback, says: "every network interface"},
		{addr: ":0", err: sandbox.ErrNotLoopback, says: "every network interface"},
		{addr: "[::]:0", err: sandbox.ErrNotLoopback, says: "every network interface"},
		{addr: "192.168.1.10:8080", err: sandbox.ErrNotLoopback, says: "only this machine"},
		{addr: "10.0.0.1:0", err: sandbox.ErrNotLoopback},
		{addr: "[fe80::1%lo]:0", err: sandbox.ErrNotLoopback},
		{addr: "example.com:8080", err: sandbox.ErrNotLoopback},
		{addr: "localhost.example.com:8080", err: sandbox.ErrNotLoopback},
		{addr: "127.0.0.1", says: "not HOST:PORT"},
		{addr: "", says: "not HOST:PORT"},
		{addr: "127.0.0.1:http", says: "not a number"},
		{addr: "127.0.0.1:65536", says: "not a number"},
		{addr: "127.0.0.1:-1", says: "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := sandbox.CheckAddr(tt.addr)
			if tt.err == nil && tt.says == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("err = %v, want %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("err = %v, want it to say %q", err, tt.says)
			}
		})
	}
}

// TestRunListensOnlyOnLoopback runs the server on each kind of loopback
// address and checks that the printed URL answers, and that any other
// address is refused before anything is printed or bound.
func TestRunListensOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			if addr == "[::1]:0" {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				ln.Close()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- sandbox.Run(ctx, addr, sandbox.Config{ClientID: clientID, ClientSecret: clientSecret}, pw)
				pw.Close()
			}()
			line, err := bufio.NewReader(pr).ReadString('\n')
			if err != nil {
				t.Fatalf("no first line: %v (Run: %v)", err, <-done)
			}
			m := regexp.MustCompile(`^listening on (http://(127\.0\.0\.1|\[::1\]):[0-9]+)\n$`).FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("first line %q", line)
			}
			go io.Copy(io.Discard, pr)
			c := &api.Client{BaseURL: m[1], ClientID: clientID, ClientSecret: clientSecret}
			if _, err := c.IssueToken(ctx, 1); err != nil {
				t.Fatalf("the printed URL does not answer: %v", err)
			}
			stopRun(t, cancel, done)
		})
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0"} {
		t.Run(addr, func(t *testing.T) {
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := sandbox.Run(ctx, addr, sandbox.Config{ClientID: clientID, ClientSecret: clientSecret}, &out)
			if !errors.Is(err, sandbox.ErrNotLoopback) {
				t.Errorf("Run(%q) = %v, want ErrNotLoopback", addr, err)
			}
			if out.Len() != 0 {
				t.Errorf("Run(%q) printed %q", addr, out.String())
			}
		})
	}
}
