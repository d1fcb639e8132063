package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/state"
)

// TestOptOutAddAfterAStop: a number a STOP reply opted out, then added by
// a person (optout add), is the person's opt-out from then on: a START
// reply no longer lifts it.
func TestOptOutAddAfterAStop(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "smsform.yaml"), []byte("version: 1\nstate: .smsform/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".smsform"), 0o700); err != nil {
		t.Fatal(err)
	}
	loc := state.MustParseLocation(filepath.Join(dir, ".smsform", "smsform.smsstate"))
	now := time.Now().UTC()
	reply := func(text string, at time.Time) {
		t.Helper()
		r, err := state.OpenReceiver(ctx, loc, state.ReceiverOptions{Now: func() time.Time { return now }, OptOuts: ledger.ReplyOptOuts()})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.Record(ctx, nil, []state.Reply{{Phone: "+447400123459", Text: text, At: at}}); err != nil {
			t.Fatal(err)
		}
	}
	optedOut := func() string {
		t.Helper()
		var out []string
		if _, err := ledger.OptOuts(ctx, loc, func(o ledger.OptOut) error { out = append(out, o.By); return nil }); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, " ")
	}

	reply("STOP", now.Add(-time.Hour))
	var stdout, stderr strings.Builder
	err := Run(ctx, []string{"optout", "add", "+447400123459", "--project", dir, "--reason", "complained by phone"},
		Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return map[string]string{"USER": "alice"}[k] }})
	if err != nil || !strings.Contains(stdout.String(), "1") || strings.Contains(stdout.String(), "Nothing to record") {
		t.Fatalf("optout add after a STOP: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if got := optedOut(); got == "a reply" || got == "" {
		t.Fatalf("opted out by %q, want the person", got)
	}
	reply("START", now.Add(-time.Minute))
	if got := optedOut(); got == "" {
		t.Fatal("a START lifted an opt-out a person recorded after the STOP")
	}
}
