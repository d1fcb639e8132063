package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/plan/planfile"
	"github.com/smsform/smsform/state"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{cli.ErrPending, 2, ""},
		{&apply.IncompleteError{Failed: 1, InDoubt: 2}, 3, "smsform: error: 1 recipient failed and 2 are in doubt\n"},
		{fmt.Errorf("open: %w", &state.LockedError{Path: "s", Host: "h", PID: 7}), 4, "pid 7"},
		{&apply.ClosedError{Waiting: 1204, Next: time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC), Label: "window opens 09:00 America/New_York, in 3 h 10 min"}, 5,
			"smsform: error: nothing more may be sent now: 1,204 recipients wait; next: window opens 09:00 America/New_York, in 3 h 10 min (2026-11-23T14:00:00Z)\n"},
		{fmt.Errorf("apply: %w", &apply.ExpiredError{Left: 3, Reason: "not_after has passed"}), 3, "3 recipients left unsent: not_after has passed"},
		{&apply.IncompleteError{Owed: apply.Owed{InDoubt: 120}}, 3, "the state records 0 recipients failed and 120 in doubt: the campaign is not finished"},
		{fmt.Errorf("send: %w", &apply.SilentError{Requests: 3}), 3, "stopped answering"},
		{fmt.Errorf("open: %w", &state.PausedError{Campaign: "flash", Pause: state.Pause{By: "ann", At: time.Date(2026, 11, 25, 14, 2, 0, 0, time.UTC), Reason: "typo"}}), 6,
			`smsform: error: open: campaign "flash" is paused by ann at 2026-11-25T14:02:00Z: typo` + "\n"},
		{apply.ErrInterrupted, 130, "interrupted"},
		{fmt.Errorf("issue token: %w", context.Canceled), 130, "smsform: interrupted before sending anything\n"},
		{errors.New("boom"), 1, "smsform: error: boom\n"},
		{&cli.HintError{Err: errors.New("bad"), Hint: "do this"}, 1, "smsform: error: bad\nhint: do this\n"},
		{errors.Join(
			&campaign.Error{File: "c.yaml", Line: 2, Field: "name", Msg: "bad name", Hint: "fix the name"},
			&campaign.Error{File: "c.yaml", Line: 3, Field: "sender", Msg: "bad sender", Hint: "fix the sender"}), 1,
			"smsform: error: c.yaml:2: name: bad name\nhint: fix the name\nsmsform: error: c.yaml:3: sender: bad sender\nhint: fix the sender\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if got := exitCode(tt.err, &b); got != tt.code {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.code)
		}
		if !strings.Contains(b.String(), tt.stderr) || (tt.stderr == "" && b.Len() > 0) {
			t.Errorf("exitCode(%v) wrote %q, want %q", tt.err, b.String(), tt.stderr)
		}
	}
}

// TestErrorColour: an error written in colour is red; when it is (the
// flags and environment) is cli's to say (TestColourErrors).
func TestErrorColour(t *testing.T) {
	var plain, coloured strings.Builder
	err := &cli.HintError{Err: errors.New("boom"), Hint: "do this"}
	exitCode(err, &plain)
	exitCode(err, colourTerminal{&coloured})
	if plain.String() != "smsform: error: boom\nhint: do this\n" {
		t.Errorf("plain: %q", plain.String())
	}
	if !strings.Contains(coloured.String(), "\x1b[1;31msmsform: error:\x1b[0m boom") {
		t.Errorf("coloured: %q", coloured.String())
	}
}

// TestErrorPathWithLineBreak: a file or folder whose name holds a line
// break is quoted wherever the error and its hint repeat it, so that it
// does not show as two lines of error (report splits at line breaks).
func TestErrorPathWithLineBreak(t *testing.T) {
	dir := "d\nhint: y"
	missing := filepath.Join(t.TempDir(), dir, "p.plan")
	_, openErr := os.Open(missing)
	linkErr := os.Rename(missing, missing+"2")
	for _, err := range []error{
		fmt.Errorf("open plan: %w", openErr),
		errors.Join(errors.New("first"), fmt.Errorf("move: %w", linkErr)),
		&cli.HintError{Err: fmt.Errorf("save plan: %w", &planfile.WriteFolderError{Dir: dir, Err: fs.ErrNotExist}),
			Hint: "create the folder " + dir + " first"},
	} {
		var b strings.Builder
		exitCode(err, &b)
		out := b.String()
		if strings.Contains(out, "\n"+"hint: y") || !strings.Contains(out, `"`) {
			t.Errorf("%v: wrote\n%s", err, out)
		}
		for line := range strings.Lines(out) {
			if !strings.HasPrefix(line, "smsform: error: ") && !strings.HasPrefix(line, "hint: ") {
				t.Errorf("line %q of\n%s", line, out)
			}
		}
	}
}
