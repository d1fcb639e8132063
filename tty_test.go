package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/smsform/smsform/internal/cli"
)

// TestTerminal runs apply on a pseudo-terminal, as a person would, and reads
// the screen: the prompt, the progress bar, a retry wait said on its own
// line, the first interrupt's message on a line of its own, and a second
// interrupt that says what it left in doubt and what to run.
func TestTerminal(t *testing.T) {
	bin, err := exec.LookPath("smsform")
	if err != nil {
		t.Fatalf("smsform is not on PATH (testscript.Main puts it there): %v", err)
	}
	dir := t.TempDir()
	var numbers []string
	for i := range 40 {
		numbers = append(numbers, fmt.Sprintf("%q", fmt.Sprintf("+4474001%05d", 23459+i*105)))
	}
	writeFile(t, filepath.Join(dir, "c.yaml"), "version: 1\nname: tty\nsender: ACME\nbatch_size: 1\nrecipients:\n  - numbers: ["+
		strings.Join(numbers, ", ")+"]\nbody: \"Hello from the terminal test, with a body long enough that the plan's table must cut it to fit a terminal of one hundred columns.\"\n")
	// Every send is slow, and one in two is refused with 503 (not acted
	// on), so that retries and their waits show.
	url := startSandbox(t, "--latency", "150ms", "--fail-rate", "0.5", "--seed", "7")

	cmd := exec.Command(bin, "apply", "c.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SMSFORM_BASE_URL="+url, "CI=", "SMSFORM_IN_AUTOMATION=",
		"SMSFORM_CLIENT_ID=tty-client", "SMSFORM_CLIENT_SECRET=tty-secret", "SMSFORM_TOKEN_DIR="+filepath.Join(dir, "tokens"),
		"SMSFORM_STATE=", "TERM=xterm", "COLUMNS=200") // the terminal's own width wins
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	screen := &screenLog{}
	go io.Copy(screen, tty)

	screen.waitFor(t, regexp.MustCompile(`Only 'yes' will be accepted: $`), 20*time.Second)
	// The plan's summary in one line, right above the question, whatever
	// the table scrolled away.
	screen.waitFor(t, regexp.MustCompile(`\nSummary: 40 messages to send; when: now\.\r?\nDo you want to send these messages\?`), time.Second)
	// On a terminal the summary line is bold and the table ruled.
	screen.waitFor(t, regexp.MustCompile(`\x1b\[1mPlan: 40 messages in 40 batches`), time.Second)
	screen.waitFor(t, regexp.MustCompile(`┌─+┬`), time.Second)
	for line := range strings.Lines(screen.String()) {
		if w := utf8.RuneCountInString(strings.TrimRight(line, "\r\n")); strings.ContainsRune(line, '│') && w > 100 {
			t.Errorf("a table line is %d columns wide on a terminal of 100 (COLUMNS=200 must not win): %q", w, line)
		}
	}
	tty.Write([]byte("yes\r"))
	screen.waitFor(t, regexp.MustCompile(`sending`), 20*time.Second)
	screen.waitFor(t, regexp.MustCompile(`(?m)(^|\r)smsform: batch b-[0-9a-f]+ was not acted on \(HTTP 503\); retry 1 of 8 in [0-9.]+m?s\r?$`), 30*time.Second)

	// Ctrl-C, through the terminal driver: SIGINT to the process group.
	// The message starts on a fresh line, not glued to the bar.
	tty.Write([]byte{3})
	screen.waitFor(t, regexp.MustCompile(`(?m)\nsmsform: interrupted: finishing what is in flight \(interrupt again to quit at once\)\r?$`), 10*time.Second)
	tty.Write([]byte{3})
	screen.waitFor(t, regexp.MustCompile(`(?m)(^|\r)smsform: quit at once: up to 1 batch in flight when it quit are in doubt: see them with smsform state list c\.yaml, check with the provider, then smsform state resolve c\.yaml --in-doubt --as sent\|unsent\r?$`), 10*time.Second)

	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("apply ended with %v, want exit status 130\n%s", err, screen.String())
	}
}

// TestTerminalAnswerNo answers "no" at apply's prompt: nothing is sent, and
// nothing is left behind, no state file and no lock file, so that a later
// move of the campaign to PostgreSQL finds no sign of an earlier state.
func TestTerminalAnswerNo(t *testing.T) {
	bin, err := exec.LookPath("smsform")
	if err != nil {
		t.Fatalf("smsform is not on PATH (testscript.Main puts it there): %v", err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "solo.yaml"), "version: 1\nname: solo\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123459\"]\nbody: Hello.\n")
	url := startSandbox(t)
	cmd := exec.Command(bin, "apply", "solo.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SMSFORM_BASE_URL="+url, "CI=", "SMSFORM_IN_AUTOMATION=",
		"SMSFORM_CLIENT_ID=tty-client", "SMSFORM_CLIENT_SECRET=tty-secret", "SMSFORM_TOKEN_DIR="+filepath.Join(dir, "tokens"), "SMSFORM_STATE=", "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	screen := &screenLog{}
	go io.Copy(screen, tty)
	screen.waitFor(t, regexp.MustCompile(`Only 'yes' will be accepted: $`), 20*time.Second)
	tty.Write([]byte("no\r"))
	screen.waitFor(t, regexp.MustCompile(`apply cancelled`), 10*time.Second)
	cmd.Wait()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "smsstate") {
			t.Errorf("answering no left %s behind", e.Name())
		}
	}
}

// screenLog collects what a terminal shows.
type screenLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (s *screenLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screenLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *screenLog) waitFor(t *testing.T, re *regexp.Regexp, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if re.MatchString(s.String()) {
			return
		}
	}
	t.Fatalf("the terminal never showed %s:\n%s", re, s.String())
}

// startSandbox serves the API in-process on a free loopback port until the
// test ends, and returns its URL.
func startSandbox(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- cli.Run(ctx, append([]string{"sandbox", "--addr", "127.0.0.1:0", "--quiet", "--client-id", "tty-client", "--client-secret", "tty-secret"}, args...),
			cli.Env{Stdout: pw, Stderr: io.Discard, Getenv: func(string) string { return "" }})
		pw.Close()
	}()
	t.Cleanup(func() { cancel(); <-done })
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("sandbox did not start: %v", err)
	}
	go io.Copy(io.Discard, pr)
	return strings.TrimPrefix(strings.TrimSpace(line), "listening on ")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTerminalInterruptAtPrompt: Ctrl-C at the confirmation prompt cancels
// at once (nothing is in flight): "apply cancelled", exit 130, nothing
// written, and no word of finishing what is in flight.
func TestTerminalInterruptAtPrompt(t *testing.T) {
	bin, err := exec.LookPath("smsform")
	if err != nil {
		t.Fatalf("smsform is not on PATH (testscript.Main puts it there): %v", err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "solo.yaml"), "version: 1\nname: solo\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123459\"]\nbody: Hello.\n")
	url := startSandbox(t)
	cmd := exec.Command(bin, "apply", "solo.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SMSFORM_BASE_URL="+url, "CI=", "SMSFORM_IN_AUTOMATION=",
		"SMSFORM_CLIENT_ID=tty-client", "SMSFORM_CLIENT_SECRET=tty-secret", "SMSFORM_TOKEN_DIR="+filepath.Join(dir, "tokens"), "SMSFORM_STATE=", "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	screen := &screenLog{}
	go io.Copy(screen, tty)
	screen.waitFor(t, regexp.MustCompile(`Only 'yes' will be accepted: $`), 20*time.Second)
	tty.Write([]byte{3})
	screen.waitFor(t, regexp.MustCompile(`smsform: error:(\x1b\[0m)? apply cancelled at the prompt: nothing was sent or recorded`), 10*time.Second)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("apply still waits after Ctrl-C at the prompt")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130", err)
	}
	if strings.Contains(screen.String(), "finishing what is in flight") {
		t.Errorf("the prompt's interrupt spoke of work in flight:\n%s", screen.String())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "smsstate") {
			t.Errorf("Ctrl-C at the prompt left %s behind", e.Name())
		}
	}
}

// TestTermStops: SIGTERM, how a service manager or a CI runner stops a
// server (receive, sandbox), is said as a stop, not an interruption, and
// the server ends cleanly (exit 0).
func TestTermStops(t *testing.T) {
	bin, err := exec.LookPath("smsform")
	if err != nil {
		t.Fatalf("smsform is not on PATH (testscript.Main puts it there): %v", err)
	}
	cmd := exec.Command(bin, "sandbox", "--addr", "127.0.0.1:0", "--client-id", "c", "--client-secret", "s")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil { // listening on …
		t.Fatalf("sandbox did not start: %v", err)
	}
	go io.Copy(io.Discard, out)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("sandbox after SIGTERM: %v\n%s", err, stderr.String())
	}
	if s := stderr.String(); !strings.Contains(s, "smsform: stopping (SIGTERM): finishing what is in flight") || strings.Contains(s, "interrupted") {
		t.Errorf("stderr after SIGTERM:\n%s", s)
	}
}
