package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/smsform/smsform/internal/loopback"
)

// DefaultAddr is where Run listens when addr is empty.
const DefaultAddr = "127.0.0.1:8080"

// shutdownGrace is how long Run lets in-flight requests finish.
const shutdownGrace = 5 * time.Second

// ErrNotLoopback is returned by [CheckAddr] and [Run] for an address that
// is not on loopback. The sandbox takes credentials that anyone who can run
// ps may read, and lists every message it was sent (phone numbers included),
// so it serves the machine it runs on and nothing else.
var ErrNotLoopback = errors.New("not a loopback address")

// CheckAddr checks that addr is HOST:PORT with HOST 127.0.0.0/8, ::1 or
// localhost and PORT a number (0 picks a free port). An empty host (":8080")
// or an unspecified one ("0.0.0.0", "::") would listen on every interface
// and is refused like any other address that is not loopback.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("sandbox: address %q is not HOST:PORT", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("sandbox: address %q: port %q is not a number from 0 to 65535", addr, port)
	}
	if !loopback.Host(host) {
		why := ""
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			why = " (it would listen on every network interface)"
		}
		return fmt.Errorf("sandbox: refusing to listen on %q%s: %w; the sandbox accepts test credentials and lists every message sent through it, so it serves only this machine",
			addr, why, ErrNotLoopback)
	}
	return nil
}

// Run serves a [Server] made from cfg on addr until ctx is cancelled, then
// shuts down gracefully. addr must pass [CheckAddr]; "" means [DefaultAddr].
// Its first line on stdout is "listening on http://HOST:PORT" (the port
// chosen when addr's port is 0), so scripts can read the URL.
func Run(ctx context.Context, addr string, cfg Config, stdout io.Writer) error {
	if addr == "" {
		addr = DefaultAddr
	}
	if err := CheckAddr(addr); err != nil {
		return err
	}
	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer s.Close() // reports not yet acknowledged are never posted
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sandbox: listen: %w", err)
	}
	// localhost is looked up in the hosts file; make sure it was loopback.
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !loopback.Host(tcp.IP.String()) {
		ln.Close()
		return fmt.Errorf("sandbox: refusing to listen on %q: it resolved to %s, %w", addr, ln.Addr(), ErrNotLoopback)
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
	if _, err := fmt.Fprintf(stdout, "listening on %s\n", baseURL(ln.Addr())); err != nil {
		ln.Close()
		return fmt.Errorf("sandbox: %w", err)
	}
	s.log.Info("listening", "addr", ln.Addr().String())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("sandbox: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		srv.Close()
		return fmt.Errorf("sandbox: shut down: %w", err)
	}
	s.log.Info("stopped")
	return nil
}

// baseURL is the URL a client uses to reach a listener at addr.
func baseURL(addr net.Addr) string {
	return "http://" + addr.String()
}
