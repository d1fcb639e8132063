// Package pgtest gives tests a real PostgreSQL server: the one named by
// SMSFORM_TEST_DATABASE_URL, or else a throwaway server started from the
// machine's PostgreSQL binaries (initdb, postgres), once per test binary,
// listening only on a unix socket in a temporary folder.
//
// Use one [Server] per test binary, stopped from TestMain:
//
//	var pg = pgtest.New(pgtest.Options{})
//
//	func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }
//
//	func TestSomething(t *testing.T) {
//		url := pg.Database(t) // a new, empty database, dropped after the test
//		...
//	}
//
// The server starts on the first call to [Server.Database], so tests that do
// not need it cost nothing. Without binaries and without the variable, a
// test that needs PostgreSQL is skipped with a message saying so, except
// under CI=true where it fails: CI must not go green by skipping.
//
// PostgreSQL refuses to run as root. When the tests run as root, the server
// runs as user "postgres" if it exists, else "nobody", and owns its folder.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names an external server for the tests; its user must be allowed
// to create databases.
const EnvURL = "SMSFORM_TEST_DATABASE_URL"

// Options tune a throwaway server.
type Options struct {
	// Fsync keeps fsync on, for benchmarks that must pay for durability as
	// production does. Tests leave it off: they kill processes, not the
	// machine, and a process kill loses nothing the kernel has.
	Fsync bool
}

// Server is a PostgreSQL server for the tests of one binary.
type Server struct {
	opts Options

	once     sync.Once
	startErr error
	admin    string // URL of a database to run CREATE DATABASE in

	// Only for a throwaway server.
	dir    string // temporary folder: data/ and sock/
	bin    string
	cred   *syscall.Credential
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}

	dbs atomic.Int64
}

// New returns a Server that starts when first needed.
func New(opts Options) *Server { return &Server{opts: opts} }

// Run runs the tests and stops the server afterwards; its result is the
// exit code for os.Exit.
func (s *Server) Run(m *testing.M) int {
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Available starts the server if needed and reports why there is none.
func (s *Server) Available() error {
	s.once.Do(func() { s.startErr = s.start() })
	return s.startErr
}

// Database creates an empty database for t, dropped when t ends, and
// returns its URL. It skips t when no server can be had (fails under CI).
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	if err := s.Available(); err != nil {
		if Skippable(err) {
			t.Skipf("pgtest: %v", err)
		}
		t.Fatalf("pgtest: %v", err)
	}
	url, drop, err := s.CreateDatabase(context.Background())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return url
}

// CreateDatabase creates an empty database and returns its URL and the
// function that drops it, for callers without a testing.TB (testscript's
// Setup); call [Server.Available] first.
func (s *Server) CreateDatabase(ctx context.Context) (url string, drop func() error, err error) {
	if err := s.Available(); err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("smsform_test_%d_%d", os.Getpid(), s.dbs.Add(1))
	if err := s.admin1(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	drop = func() error {
		// FORCE: a test that failed half-way may leave a connection open.
		if err := s.admin1(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database: %w", err)
		}
		return nil
	}
	return withDatabase(s.admin, name), drop, nil
}

// Skippable reports whether err, from [Server.Available], may skip a test
// rather than fail it: no server to be had, outside CI.
func Skippable(err error) bool {
	var nb *NoBinariesError
	return errors.As(err, &nb) && os.Getenv("CI") != "true"
}

// Admin runs sql in the administrative database (for ALTER DATABASE and the like).
func (s *Server) Admin(ctx context.Context, sql string) error { return s.admin1(ctx, sql) }

func (s *Server) admin1(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// withDatabase returns the URL u with its database replaced by name.
func withDatabase(u, name string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Path = "/" + name
	return p.String()
}

// NoBinariesError says that neither a server URL nor PostgreSQL binaries were found.
type NoBinariesError struct{ Looked []string }

func (e *NoBinariesError) Error() string {
	return fmt.Sprintf("no PostgreSQL server: set %s, or install PostgreSQL's binaries (Debian: apt-get install postgresql); looked for initdb and postgres in PATH and %s",
		EnvURL, strings.Join(e.Looked, ", "))
}

func (s *Server) start() error {
	if u := os.Getenv(EnvURL); u != "" {
		s.admin = u
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.admin1(ctx, "SELECT 1"); err != nil {
			return fmt.Errorf("%s: %w", EnvURL, err)
		}
		return nil
	}
	bin, err := findBinaries()
	if err != nil {
		return err
	}
	s.bin = bin
	if s.cred, err = serverUser(); err != nil {
		return err
	}
	if s.dir, err = os.MkdirTemp("", "smsform-pg-"); err != nil {
		return err
	}
	for _, d := range []string{s.dir, filepath.Join(s.dir, "sock")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if s.cred != nil {
			if err := os.Chown(d, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return err
			}
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", s.dataDir(), "-U", "postgres",
		"--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(s.dir)
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	s.admin = (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/postgres",
		RawQuery: url.Values{"host": {s.SocketDir()}, "sslmode": {"disable"}}.Encode()}).String()
	if err := s.Start(); err != nil {
		os.RemoveAll(s.dir)
		return err
	}
	return nil
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// SocketDir is the folder of the throwaway server's unix socket ("" for an
// external server).
func (s *Server) SocketDir() string {
	if s.dir == "" {
		return ""
	}
	return filepath.Join(s.dir, "sock")
}

// Credential is who the throwaway server runs as (nil: this process's
// user), for a test that must give it a folder (a tablespace).
func (s *Server) Credential() *syscall.Credential { return s.cred }

// Throwaway reports whether the server is one this package started (and
// so can stop and restart).
func (s *Server) Throwaway() bool { return s.Available() == nil && s.dir != "" }

// Start starts the throwaway server (again, after [Server.Kill] or
// [Server.Stop]) and waits until it accepts connections.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	fsync := "off"
	if s.opts.Fsync {
		fsync = "on"
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.dataDir(),
		"-k", s.SocketDir(), "-c", "listen_addresses=", "-c", "fsync="+fsync,
		"-c", "max_connections=200", "-c", "shared_buffers=32MB")
	// Pdeathsig: a test binary killed before Stop must not leave a server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGQUIT}
	logf, err := os.Create(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return err
	}
	if s.cred != nil {
		os.Chown(logf.Name(), int(s.cred.Uid), int(s.cred.Gid))
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.admin1(ctx, "SELECT 1")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			return fmt.Errorf("postgres exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections within 30s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill stops the throwaway server at once, as a crash would (SIGQUIT:
// immediate shutdown, no checkpoint), and waits for it to exit.
func (s *Server) Kill() error { return s.signal(syscall.SIGQUIT) }

// Stop shuts the server down and removes its folder; an external server
// is left alone.
func (s *Server) Stop() error {
	if s.dir == "" {
		return nil
	}
	err := s.signal(syscall.SIGINT) // fast shutdown
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
	return nil
}

// findBinaries returns the folder holding initdb and postgres: PATH first,
// then Debian's /usr/lib/postgresql/VERSION/bin, newest version first.
func findBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	const debian = "/usr/lib/postgresql/*/bin"
	dirs, _ := filepath.Glob(debian)
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		_, e1 := os.Stat(filepath.Join(d, "initdb"))
		_, e2 := os.Stat(filepath.Join(d, "postgres"))
		if e1 == nil && e2 == nil {
			return d, nil
		}
	}
	return "", &NoBinariesError{Looked: []string{debian}}
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// serverUser is who the server runs as: nil (this process's user) unless
// that is root, which PostgreSQL refuses.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("running as root, and neither user postgres nor nobody exists to run PostgreSQL as (it refuses root)")
}
