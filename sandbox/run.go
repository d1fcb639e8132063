package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// DefaultAddr is where Run listens when addr is empty.
const DefaultAddr = "127.0.0.1:8080"

// shutdownGrace is how long Run lets in-flight requests finish.
const shutdownGrace = 5 * time.Second

// Run serves a [Server] made from cfg on addr (port 0 picks a free port)
// until ctx is cancelled, then shuts down gracefully. Its first line on
// stdout is "listening on http://HOST:PORT", so scripts can read the URL;
// an unspecified host (":0", "0.0.0.0:0") is written as 127.0.0.1.
func Run(ctx context.Context, addr string, cfg Config, stdout io.Writer) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	if addr == "" {
		addr = DefaultAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sandbox: listen: %w", err)
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
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
