package receive_test

import (
	"context"
	"os"
	"os/signal"
	"strings"
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

// receiverOrNil opens the state at loc to record reports in; nil when
// this state does not record them yet (the Receiver's storage is not in
// this tree), so that a test can still check what reached it.
func receiverOrNil(t *testing.T, loc string) *state.Receiver {
	t.Helper()
	rcv, err := state.OpenReceiver(context.Background(), loc, state.ReceiverOptions{})
	if err != nil && strings.Contains(err.Error(), "not implemented") {
		t.Logf("the state records no reports yet: %v", err)
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rcv.Close() })
	return rcv
}

// needReceiver is receiverOrNil for a test that needs a state that
// records: it is skipped, saying why, until there is one.
func needReceiver(t *testing.T, loc string) *state.Receiver {
	t.Helper()
	rcv := receiverOrNil(t, loc)
	if rcv == nil {
		t.Skip("the state's Receiver is not implemented in this tree")
	}
	return rcv
}
