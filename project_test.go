package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/state"
)

// A project declares its state in PostgreSQL; a plan job may name the same
// database with a read-only role of its own (SMSFORM_STATE holds only what
// differs: the role), and it plans; what that role cannot do, it cannot
// do; another database is refused.
func TestProjectReadOnlyRole(t *testing.T) {
	ctx := context.Background()
	owner := pg.Database(t)
	dir := t.TempDir()
	for name, content := range map[string]string{
		".git/HEAD":    "ref: refs/heads/main\n",
		"smsform.yaml": "version: 1\nstate: " + owner + "\n",
		"c.yaml":       "version: 1\nname: ro\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123459\", \"+447400123564\"]\nbody: Hello.\n",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := state.Open(ctx, state.MustParseLocation(owner), state.Options{Campaign: "ro", Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordIntent(ctx, state.Intent{BatchID: "b", Phones: []string{"+447400123459"}, BodyHash: state.BodyHash("Hello.")}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordOutcome(ctx, "b", state.Outcome{Status: state.Sent, HTTPStatus: 200}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	role := fmt.Sprintf("reader_%d", time.Now().UnixNano()%1e9)
	conn, err := pgx.Connect(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE ROLE " + role + " LOGIN", "GRANT USAGE ON SCHEMA smsform TO " + role,
		"GRANT SELECT ON ALL TABLES IN SCHEMA smsform TO " + role} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		conn.Exec(context.Background(), "DROP OWNED BY "+role)
		conn.Exec(context.Background(), "DROP ROLE "+role)
		conn.Close(context.Background())
	})
	reader := strings.Replace(owner, "postgres://postgres@", "postgres://"+role+"@", 1)
	run := func(stateVar string, args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := cli.Run(ctx, args, cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
			if k == "SMSFORM_STATE" {
				return stateVar
			}
			return ""
		}})
		return out.String() + errOut.String(), err
	}
	campaign := filepath.Join(dir, "c.yaml")
	out, err := run(reader, "plan", campaign)
	if err != nil || !strings.Contains(out, "1 message") || !strings.Contains(out, "1 already sent") {
		t.Fatalf("plan as %s: %v\n%s", role, err, out)
	}
	if _, err := run(reader, "state", "resolve", campaign, "--failed", "--as", "unsent"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("a read-only role changed the state: %v", err)
	}
	other := strings.Replace(owner, "/smsform_test_", "/other_", 1)
	if _, err := run(other, "plan", campaign); err == nil || !strings.Contains(err.Error(), "a campaign keeps one ledger") {
		t.Errorf("another database: %v", err)
	}
}
