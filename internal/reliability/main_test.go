// Package reliability proves the delivery promise of docs/design.md ("The
// delivery promise") against a real sandbox: at most once without an
// operator's decision, and nobody silently skipped. It holds only tests (the
// kill test, concurrent applies, the fault matrix, PostgreSQL faults); the
// sandbox and accounting they share with apply's tests is in
// internal/testharness.
package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/pgtest"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// Sizes of the long checks; 0 picks the short (-short) or long default.
// make crashtest and make reliability pass them.
var (
	crashKills       = flag.Int("crash.kills", 0, "kill test: SIGKILLs to land (default 5 with -short, 20 otherwise)")
	crashRecipients  = flag.Int("crash.recipients", 0, "kill test: campaign size (default 500 with -short, 2000 otherwise)")
	crashConcurrency = flag.Int("crash.concurrency", 2, "kill test: the campaign's concurrency")
	crashSeed        = flag.Int64("crash.seed", 1, "kill test: seed of the kill moments")
	matrixRuns       = flag.Int("reliability.runs", 0, "fault matrix: seeded runs per fault (default 1 with -short, 20 otherwise)")
	matrixRecipients = flag.Int("reliability.recipients", 0, "fault matrix: recipients per run (default 200 with -short, 1000 otherwise)")
)

// bin is the smsform binary the tests run as a subprocess.
var bin string

// pg is the PostgreSQL server of the checks that keep the state there.
var pg = pgtest.New(pgtest.Options{})

// backends are where a project's state can live: the file next to the
// campaign, or a database of pg's.
var backends = []string{"file", "postgres"}

// Environment of the re-executed test binary that limits the file size an
// smsform process may write (RLIMIT_FSIZE) and then becomes it: a full disk
// without a mount.
const (
	envFsize = "RELIABILITY_FSIZE"
	envBin   = "RELIABILITY_BIN"
)

func TestMain(m *testing.M) {
	if limit := os.Getenv(envFsize); limit != "" {
		execLimited(limit)
	}
	flag.Parse()
	dir, err := os.MkdirTemp("", "smsform-reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Readable by all: the read-only check runs it as another user.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Race-built under make test, like this binary: see BuildSmsform.
	if bin, err = testharness.BuildSmsform(dir, testing.Short() && testharness.RaceBuild); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := pg.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// execLimited sets RLIMIT_FSIZE and executes smsform with this process's
// arguments. Go ignores SIGXFSZ, so a write past the limit fails with EFBIG.
func execLimited(limit string) {
	n, err := strconv.ParseUint(limit, 10, 64)
	if err == nil {
		err = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n})
	}
	if err == nil {
		path := os.Getenv(envBin)
		env := withoutVars(os.Environ(), envFsize, envBin)
		err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), env)
	}
	fmt.Fprintln(os.Stderr, "limited exec:", err)
	os.Exit(2)
}

func withoutVars(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// size is a flag's value, or its default for -short or the long run.
func size(given, short, long int) int {
	switch {
	case given > 0:
		return given
	case testing.Short():
		return short
	}
	return long
}

// project is one campaign folder with a sandbox, driven through the smsform
// binary as CI would.
type project struct {
	t        testing.TB
	dir      string
	srv      *testharness.Server
	campaign string
	name     string // the campaign's
	phones   []string
	env      []string
	stateURL string // "": the state file next to the campaign (or the project's, when shared)
	shared   bool   // the state is the project's (smsform.yaml names it), shared with its other campaigns
	restore  func() // undoes a state fault, before the campaign is finished
	note     string // what a fault's preparation measured, for the report

	exe        string              // "" : bin; the test binary to run smsform under a limit
	cred       *syscall.Credential // nil: as this process's user
	sentBefore int                 // messages in the outbox before the run under test
}

func newProject(t testing.TB, cfg sandbox.Config, c testharness.Campaign) *project {
	t.Helper()
	dir := t.TempDir()
	srv := testharness.Start(t, cfg)
	path, phones := testharness.WriteCampaign(t, dir, c)
	tokens := filepath.Join(dir, ".tokens")
	env := withoutVars(os.Environ(), "SMSFORM_TOKEN", "SMSFORM_BASE_URL", "SMSFORM_CLIENT_ID", "SMSFORM_CLIENT_SECRET", "SMSFORM_TOKEN_DIR", "CI", "SMSFORM_IN_AUTOMATION")
	env = append(env, "SMSFORM_BASE_URL="+srv.URL, "SMSFORM_CLIENT_ID="+testharness.ClientID, "SMSFORM_CLIENT_SECRET="+testharness.ClientSecret,
		"SMSFORM_TOKEN_DIR="+tokens, "CI=true")
	name := c.Name
	if name == "" {
		name = "reliability"
	}
	return &project{t: t, dir: dir, srv: srv, campaign: path, name: name, phones: phones, env: env}
}

// newProjectOn is newProject with its state on backend: "file", or
// "postgres" for a new database of pg's.
func newProjectOn(t *testing.T, backend string, cfg sandbox.Config, c testharness.Campaign) *project {
	t.Helper()
	p := newProject(t, cfg, c)
	if backend == "postgres" {
		p.usePostgres(pg.Database(t))
	}
	return p
}

// usePostgres keeps the project's state in the database at url, named by
// SMSFORM_STATE as CI would.
func (p *project) usePostgres(url string) {
	p.stateURL = url
	p.env = append(withoutVars(p.env, "SMSFORM_STATE"), "SMSFORM_STATE="+url)
}

// statePath is where the project's state is: its file, or its URL.
func (p *project) statePath() string {
	switch {
	case p.stateURL != "":
		return p.stateURL
	case p.shared:
		return filepath.Join(p.dir, "st", "smsform.smsstate")
	}
	return strings.TrimSuffix(p.campaign, ".yaml") + ".smsstate"
}

// abs is path, relative to the project's folder, made absolute.
func (p *project) abs(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(p.dir, path)
}

// command is smsform with args, in the project's folder and environment.
func (p *project) command(args ...string) *exec.Cmd {
	exe := bin
	if p.exe != "" {
		exe = p.exe
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir, cmd.Env = p.dir, p.env
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd
}

// outcome is how one smsform process ended.
type outcome struct {
	code           int // -1: killed
	stdout, stderr string
	wall           time.Duration
	summary        apply.Result // from apply --json
}

func (p *project) run(cmd *exec.Cmd) outcome {
	p.t.Helper()
	var pid int
	return p.runStarted(cmd, &pid)
}

// apply runs smsform apply --auto-approve --json with extra flags.
func (p *project) apply(extra ...string) outcome {
	p.t.Helper()
	return p.run(p.command(append([]string{"apply", p.campaign, "--auto-approve", "--json"}, extra...)...))
}

// smsform runs another command and fails the test unless it exits 0.
func (p *project) smsform(args ...string) string {
	p.t.Helper()
	o := p.run(p.command(args...))
	if o.code != 0 {
		p.t.Fatalf("smsform %s: exit %d: %s", strings.Join(args, " "), o.code, o.stderr)
	}
	return o.stdout
}

// summaryOf finds the summary event of apply --json.
func summaryOf(stdout string) apply.Result {
	var res apply.Result
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e apply.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "summary" && e.Summary != nil {
			res = *e.Summary
		}
	}
	return res
}

// tally holds the state file against the outbox.
func (p *project) tally() testharness.Tally {
	p.t.Helper()
	open := state.OpenReadOnly
	if p.shared {
		open = state.OpenSharedReadOnly
	}
	st, err := open(context.Background(), state.MustParseLocation(p.statePath()), p.name)
	if err != nil {
		p.t.Fatal(err)
	}
	defer st.Close()
	tl, err := testharness.Account(context.Background(), st, p.phones, p.srv.Messages())
	if err != nil {
		p.t.Fatal(err)
	}
	return tl
}

// runStarted is run, recording the process id once started.
func (p *project) runStarted(cmd *exec.Cmd, pid *int) outcome {
	p.t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("%v: %v", cmd.Args, err)
	}
	*pid = cmd.Process.Pid
	err := cmd.Wait()
	o := outcome{stdout: stdout.String(), stderr: stderr.String(), wall: time.Since(start), code: cmd.ProcessState.ExitCode()}
	if err != nil && o.code == 0 {
		p.t.Errorf("%v: %v", cmd.Args, err)
	}
	o.summary = summaryOf(o.stdout)
	return o
}
