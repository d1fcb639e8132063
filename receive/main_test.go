package receive_test

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/internal/pgtest"
	"github.com/smsform/smsform/state"
)

// pg serves the tests that keep the state in PostgreSQL.
var pg = pgtest.New(pgtest.Options{})

// envRunSmsform makes this test binary, re-executed, run smsform with its
// arguments: `smsform receive` as a process of its own, which a test can
// kill, without building a binary.
const envRunSmsform = "RECEIVE_TEST_RUN_SMSFORM"

func TestMain(m *testing.M) {
	if os.Getenv(envRunSmsform) == "1" {
		os.Exit(runSmsform())
	}
	os.Exit(pg.Run(m))
}

// runSmsform is main's wiring, for the commands the tests run as
// processes: SIGTERM cancels, an error is exit 1.
func runSmsform() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := cli.Run(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	if err != nil {
		os.Stderr.WriteString("smsform: error: " + err.Error() + "\n")
		return 1
	}
	return 0
}

// openReceiver opens the state at loc to record reports and replies in,
// until the test ends.
func openReceiver(t *testing.T, loc string) *state.Receiver {
	t.Helper()
	rcv, err := state.OpenReceiver(context.Background(), state.MustParseLocation(loc), state.ReceiverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rcv.Close() })
	return rcv
}

// inTempState is observed over a Receiver of a new state file.
func inTempState(t *testing.T) *observed {
	t.Helper()
	return &observed{inner: openReceiver(t, filepath.Join(t.TempDir(), "smsform.smsstate"))}
}
