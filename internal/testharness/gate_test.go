package testharness_test

import (
	"context"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
)

// A gate lets the first requests through, holds the later ones until it
// opens, and drops a held request whose client went away without the
// sandbox seeing it.
func TestGate(t *testing.T) {
	srv := testharness.Start(t, sandbox.Config{})
	gate := srv.Hold(1)
	c := &api.Client{BaseURL: srv.URL, ClientID: testharness.ClientID, ClientSecret: testharness.ClientSecret, Timeout: time.Minute}
	tok, err := c.IssueToken(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	send := func(ctx context.Context, to string) error {
		_, err := c.Send(ctx, tok.Value, api.SendRequest{From: "ACME", To: []string{to}, Body: "hi"})
		return err
	}
	phones := testharness.Phones(4)
	if err := send(context.Background(), phones[0]); err != nil {
		t.Fatalf("the request the gate lets pass: %v", err)
	}

	// Held: the sandbox has not seen them, and gives up on one whose
	// client goes away.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := make(chan error, 1)
	go func() { gone <- send(ctx, phones[1]) }()
	waitHeld(t, gate, 1)
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("a request cancelled while held was answered")
	}
	waitHeld(t, gate, 0)
	done := make(chan error, 2)
	for _, p := range phones[2:] {
		go func() { done <- send(context.Background(), p) }()
	}
	waitHeld(t, gate, 2)
	if n := srv.Stats().SendRequests; n != 1 {
		t.Fatalf("the sandbox saw %d send requests while two were held, want 1", n)
	}

	gate.Open()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("a request held, then let go: %v", err)
		}
	}
	if err := send(context.Background(), phones[1]); err != nil {
		t.Fatalf("a request after the gate opened: %v", err)
	}
	if st := srv.Stats(); st.SendRequests != 4 || st.Messages != 4 {
		t.Errorf("the sandbox saw %d send requests, delivered %d; want 4, 4 (the dropped one never reached it)", st.SendRequests, st.Messages)
	}
}

// waitHeld waits until gate holds n requests.
func waitHeld(t *testing.T, gate *testharness.Gate, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := gate.WaitHeld(ctx, n); err != nil {
		t.Fatal(err)
	}
}
