package testharness

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/smsform/smsform/api"
)

// Gate holds send requests on their way to the sandbox until the test
// opens it, so that a test acts while requests are in flight (an interrupt,
// a pause, a second apply meeting the lock) because it saw them held, not
// because it guessed how long a request takes: a loaded machine makes any
// guess wrong. A held request has not reached the sandbox: it has not acted
// on it. [Server.Hold] puts one in front of a [Server]'s sandbox;
// [Gate.Handler] in front of any handler.
type Gate struct {
	mu      sync.Mutex
	pass    int           // send requests still let through before holding starts
	held    int           // send requests waiting now
	open    chan struct{} // closed by Open
	changed chan struct{} // closed, and replaced, whenever held changes
}

// NewGate returns a gate that lets the next pass send requests through and
// holds every later one until [Gate.Open].
func NewGate(pass int) *Gate {
	return &Gate{pass: pass, open: make(chan struct{}), changed: make(chan struct{})}
}

// Open lets every held send request go on, and every later one pass.
// Opening an open gate does nothing.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// Held returns how many send requests the gate holds now.
func (g *Gate) Held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// WaitHeld waits until the gate holds n send requests: a count the
// requests settle at (every worker of a run waiting), not one they pass
// on the way. It fails, saying how many it holds, when ctx is done first.
func (g *Gate) WaitHeld(ctx context.Context, n int) error {
	for {
		g.mu.Lock()
		held, changed := g.held, g.changed
		g.mu.Unlock()
		if held == n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("the sandbox holds %d send requests, want %d: %w", g.Held(), n, context.Cause(ctx))
		}
	}
}

// Wait is what a handler calls before it serves a send request: it
// returns true at once while the gate lets requests pass, else when the
// gate opens; false when ctx (the request's) ends first: the client went
// away, and the request must not be served.
func (g *Gate) Wait(ctx context.Context) bool {
	g.mu.Lock()
	select {
	case <-g.open:
		g.mu.Unlock()
		return true
	default:
	}
	if g.pass > 0 {
		g.pass--
		g.mu.Unlock()
		return true
	}
	g.add(1)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.add(-1)
		g.mu.Unlock()
	}()
	select {
	case <-g.open:
		return true
	case <-ctx.Done():
		return false
	}
}

// add changes the count of held requests; g.mu is held.
func (g *Gate) add(n int) {
	g.held += n
	close(g.changed)
	g.changed = make(chan struct{})
}

// Handler passes every request to next, send requests through the gate.
// A send request whose client goes away while held is dropped, unanswered.
func (g *Gate) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.SendPath && !g.Wait(r.Context()) {
			return
		}
		next.ServeHTTP(w, r)
	})
}
