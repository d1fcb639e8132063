package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/internal/pgtest"
	"github.com/smsform/smsform/internal/testharness"
)

// pg serves the scripts named pg_*, each in a database of its own ($PGURL).
var pg = pgtest.New(pgtest.Options{})

func TestMain(m *testing.M) {
	testscript.Main(pgMain{m}, map[string]func(){
		"smsform": func() { os.Exit(run()) },
	})
}

// pgMain stops the PostgreSQL server once the tests are done.
type pgMain struct{ m *testing.M }

func (p pgMain) Run() int { return pg.Run(p.m) }

// TestScripts runs the end-to-end scenarios in testdata/script: the real
// binary (this test binary, re-executed) against a real sandbox on loopback.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(e *testscript.Env) error {
			e.Setenv("SMSFORM_CLIENT_ID", "test-client")
			e.Setenv("SMSFORM_CLIENT_SECRET", "test-secret-never-printed")
			e.Setenv("SMSFORM_SANDBOX_CLIENT_ID", "test-client")
			e.Setenv("SMSFORM_SANDBOX_CLIENT_SECRET", "test-secret-never-printed")
			e.Setenv("SMSFORM_TOKEN_DIR", filepath.Join(e.WorkDir, ".tokens"))
			e.Setenv("SMSFORM_BASE_URL", "")
			e.Setenv("CI", "")
			e.Setenv("SMSFORM_IN_AUTOMATION", "")
			e.Setenv("SMSFORM_STATE", "")
			e.Values[scriptKey{}] = &scriptState{}
			if strings.HasPrefix(filepath.Base(e.WorkDir), "script-pg_") {
				if err := pg.Available(); pgtest.Skippable(err) {
					e.T().Skip("pgtest: ", err)
				}
				dbURL, drop, err := pg.CreateDatabase(context.Background())
				if err != nil {
					return err
				}
				e.Defer(func() { drop() })
				e.Setenv("PGURL", dbURL)
				// The throwaway server trusts local connections, so a
				// password is accepted and ignored: the scripts check
				// that it never shows.
				e.Setenv("PGURL_PW", strings.Replace(dbURL, "postgres://postgres@", "postgres://postgres:hunter2-never-shown@", 1))
				// The same database as a keyword string, and with the
				// password where a token would be (no role).
				u, err := url.Parse(dbURL)
				if err != nil {
					return err
				}
				e.Setenv("PGKW_PW", fmt.Sprintf("host=%s dbname=%s user=postgres password='hunter2-never-shown x' sslmode=disable",
					u.Query().Get("host"), strings.TrimPrefix(u.Path, "/")))
				e.Setenv("PGURL_TOKEN", strings.Replace(dbURL, "postgres://postgres@", "postgres://:hunter2-never-shown@", 1))
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sandbox-start": cmdSandboxStart,
			"outbox":        cmdOutbox,
			"no-secrets":    cmdNoSecrets,
			"forge-plan":    cmdForgePlan,
			"sandbox-hold":  cmdSandboxHold,
			"sandbox-release": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 0 {
					ts.Fatalf("usage: sandbox-release")
				}
				gateOf(ts).Open()
			},
			"wait-for":     cmdWaitFor,
			"manifest-add": cmdManifestAdd,
		},
	})
}

// cmdSandboxStart starts `smsform sandbox` in-process on a free loopback
// port with the given flags, its outbox in $WORK/outbox.jsonl, and points
// SMSFORM_BASE_URL at it. It stops when the script ends.
func cmdSandboxStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! sandbox-start")
	}
	outbox := ts.MkAbs("outbox.jsonl")
	logFile, err := os.Create(ts.MkAbs("sandbox.log"))
	ts.Check(err)
	args = append([]string{"sandbox", "--addr", "127.0.0.1:0", "--outbox", outbox}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- cli.Run(ctx, args, cli.Env{
			Stdout: pw, Stderr: logFile,
			Getenv: func(k string) string { return ts.Getenv(k) },
		})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		ts.Fatalf("sandbox did not start: %v %v", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		ts.Fatalf("sandbox said %q", line)
	}
	ts.Setenv("SMSFORM_BASE_URL", url)
	ts.Defer(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			ts.Logf("sandbox did not stop within 10 s")
		}
		logFile.Close()
	})
}

// scriptKey keys a script's [scriptState] in its testscript values.
type scriptKey struct{}

// scriptState is what a script's own commands share.
type scriptState struct {
	gate *testharness.Gate // the gate of sandbox-hold, nil before
}

func stateOf(ts *testscript.TestScript) *scriptState {
	return ts.Value(scriptKey{}).(*scriptState)
}

func gateOf(ts *testscript.TestScript) *testharness.Gate {
	g := stateOf(ts).gate
	if g == nil {
		ts.Fatalf("no sandbox-hold before")
	}
	return g
}

// cmdSandboxHold puts a gate in front of the sandbox started last:
// "sandbox-hold [N]" lets the next N send requests (default 0) through
// and holds every later one, unanswered and unseen by the sandbox, until
// sandbox-release. A script then acts while a run's requests are in flight
// because it saw them held (wait-for held N), not because a latency made
// it likely: on a loaded machine the run may well be over by then.
func cmdSandboxHold(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: sandbox-hold [N]")
	}
	pass := 0
	if len(args) == 1 {
		var err error
		pass, err = strconv.Atoi(args[0])
		ts.Check(err)
	}
	target, err := url.Parse(ts.Getenv("SMSFORM_BASE_URL"))
	if err != nil || target.Host == "" {
		ts.Fatalf("sandbox-hold: no sandbox-start before (SMSFORM_BASE_URL %q)", ts.Getenv("SMSFORM_BASE_URL"))
	}
	g := testharness.NewGate(pass)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // a client gone while its request was held
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	srv := &http.Server{Handler: g.Handler(proxy), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	st := stateOf(ts)
	if st.gate != nil {
		st.gate.Open()
	}
	st.gate = g
	ts.Setenv("SMSFORM_BASE_URL", "http://"+ln.Addr().String())
	ts.Defer(func() {
		g.Open()
		srv.Close()
	})
}

// waitLimit is how long wait-for waits unless told: far longer than a
// loaded machine takes, so that reaching it means what was waited for
// will not happen.
const waitLimit = time.Minute

// cmdWaitFor waits for something another process does, and fails, saying
// what it saw, if it has not happened within the deadline (-timeout D,
// default [waitLimit]): a script never hangs on a wait.
//
//	wait-for [-timeout D] held N            sandbox-hold's gate holds N send requests
//	wait-for [-timeout D] grep REGEXP FILE  FILE has a line matching REGEXP
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: wait-for [-timeout D] held N | grep REGEXP FILE"
	if neg {
		ts.Fatalf("unsupported: ! wait-for")
	}
	limit := waitLimit
	if len(args) >= 2 && args[0] == "-timeout" {
		var err error
		limit, err = time.ParseDuration(args[1])
		ts.Check(err)
		args = args[2:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	switch {
	case len(args) == 2 && args[0] == "held":
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		if err := gateOf(ts).WaitHeld(ctx, n); err != nil {
			ts.Fatalf("wait-for held %d: after %v, %v", n, limit, err)
		}
	case len(args) == 3 && args[0] == "grep":
		re, err := regexp.Compile("(?m)" + args[1])
		ts.Check(err)
		for {
			data, _ := os.ReadFile(ts.MkAbs(args[2]))
			if re.Match(data) {
				return
			}
			select {
			case <-ctx.Done():
				ts.Fatalf("wait-for grep: after %v, no line of %s matches %q; it holds:\n%s", limit, args[2], args[1], data)
			case <-time.After(20 * time.Millisecond):
			}
		}
	default:
		ts.Fatalf("%s", usage)
	}
}

// cmdOutbox checks the sandbox's outbox: "outbox N" asserts N messages were
// delivered and that nobody got the same body twice.
func cmdOutbox(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: outbox N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	data, err := os.ReadFile(ts.MkAbs("outbox.jsonl"))
	if os.IsNotExist(err) {
		data, err = nil, nil
	}
	ts.Check(err)
	seen := map[string]int{}
	n := 0
	for line := range strings.Lines(string(data)) {
		var m struct{ To, Body string }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			ts.Fatalf("outbox line %q: %v", line, err)
		}
		seen[m.To+"\x00"+m.Body]++
		n++
	}
	for k, c := range seen {
		if c > 1 {
			to, body, _ := strings.Cut(k, "\x00")
			ts.Fatalf("%s was messaged %q %d times", to, body, c)
		}
	}
	if neg {
		ts.Fatalf("unsupported: ! outbox")
	}
	if n != want {
		ts.Fatalf("outbox has %d messages, want %d", n, want)
	}
	fmt.Fprintf(ts.Stdout(), "%d messages, each recipient once\n", n)
}

// cmdNoSecrets asserts that no file under $WORK (outputs saved by the
// script, the sandbox log, state and plan files, gunzipped when need be)
// holds the client secret, its base64 form, or a token from the token store.
// The store itself is the one place a token may be.
func cmdNoSecrets(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! no-secrets")
	}
	secret := ts.Getenv("SMSFORM_CLIENT_SECRET")
	id := ts.Getenv("SMSFORM_CLIENT_ID")
	needles := []string{secret, base64.StdEncoding.EncodeToString([]byte(id + ":" + secret))}
	storeDir := ts.Getenv("SMSFORM_TOKEN_DIR")
	stored, _ := os.ReadDir(storeDir)
	for _, e := range stored {
		data, err := os.ReadFile(filepath.Join(storeDir, e.Name()))
		ts.Check(err)
		var t struct{ Token string }
		if json.Unmarshal(data, &t) == nil && t.Token != "" {
			needles = append(needles, t.Token)
		}
	}
	if len(needles) < 3 {
		ts.Fatalf("no stored token to look for: run apply first")
	}
	files := 0
	err := filepath.WalkDir(ts.MkAbs("."), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && path == storeDir {
				return filepath.SkipDir
			}
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if zr, zerr := gzip.NewReader(bytes.NewReader(data)); zerr == nil {
			if plain, rerr := io.ReadAll(zr); rerr == nil {
				data = plain
			}
		}
		for _, n := range needles {
			if bytes.Contains(data, []byte(n)) {
				ts.Fatalf("%s holds a secret or token", path)
			}
		}
		files++
		return nil
	})
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%d files, no secret in any\n", files)
}
