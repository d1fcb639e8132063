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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/internal/pgtest"
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
			if strings.HasPrefix(filepath.Base(e.WorkDir), "script-pg_") {
				if err := pg.Available(); pgtest.Skippable(err) {
					e.T().Skip("pgtest: ", err)
				}
				url, drop, err := pg.CreateDatabase(context.Background())
				if err != nil {
					return err
				}
				e.Defer(func() { drop() })
				e.Setenv("PGURL", url)
				// The throwaway server trusts local connections, so a
				// password is accepted and ignored: the scripts check
				// that it never shows.
				e.Setenv("PGURL_PW", strings.Replace(url, "postgres://postgres@", "postgres://postgres:hunter2-never-shown@", 1))
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sandbox-start": cmdSandboxStart,
			"outbox":        cmdOutbox,
			"no-secrets":    cmdNoSecrets,
			"forge-plan":    cmdForgePlan,
			"manifest-add":  cmdManifestAdd,
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
		seen[m.To]++
		n++
	}
	for to, c := range seen {
		if c > 1 {
			ts.Fatalf("%s was messaged %d times", to, c)
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
