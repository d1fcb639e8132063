package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/state"
)

// A plan job's role that may only read: refused with a hint before the
// grant, planning after smsform state grant-readonly --execute, still
// reading the tables a later schema version adds, and never writing.
func TestGrantReadonlyLetsPlanRead(t *testing.T) {
	ctx := context.Background()
	if err := pg.Available(); err == nil && !pg.Throwaway() {
		t.Skip("connecting as a new role needs the throwaway server, which trusts local roles")
	}
	role := fmt.Sprintf("smsform_plan_%d", time.Now().UnixNano()%1e9)
	// Registered before the database, so it runs after the database is dropped.
	t.Cleanup(func() { pg.Admin(context.Background(), "DROP ROLE IF EXISTS "+role) })
	owner := pg.Database(t)
	if err := pg.Admin(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(owner)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	reader := u.String()

	// The owner applies first (opening for writing creates the schema).
	st, err := state.Open(ctx, state.MustParseLocation(owner), state.Options{Campaign: "grant-test"})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	dir := t.TempDir()
	camp := filepath.Join(dir, "c.yaml")
	writeFile(t, camp, "version: 1\nname: grant-test\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123459\"]\nbody: Hello\n")

	_, _, err = grantCLI(ctx, reader, "plan", camp)
	var he *cli.HintError
	if !state.IsPermissionDenied(err) || !errors.As(err, &he) || !strings.Contains(he.Hint, "smsform state grant-readonly "+role) {
		t.Fatalf("plan as %s before the grant = %v (hint %+v), want permission denied with a hint naming grant-readonly", role, err, he)
	}

	out, _, err := grantCLI(ctx, "", "state", "grant-readonly", role, "--state", owner)
	if err != nil || !strings.Contains(out, `ALTER DEFAULT PRIVILEGES FOR ROLE "postgres" IN SCHEMA "smsform" GRANT SELECT ON TABLES TO "`+role+`";`) {
		t.Fatalf("grant-readonly printed (%v):\n%s", err, out)
	}
	if _, _, err := grantCLI(ctx, reader, "plan", camp); !state.IsPermissionDenied(err) {
		t.Fatalf("printing the SQL granted something: plan = %v", err)
	}
	if out, _, err = grantCLI(ctx, "", "state", "grant-readonly", role, "--state", owner, "--execute"); err != nil || !strings.HasPrefix(out, "granted "+role) {
		t.Fatalf("grant-readonly --execute = %v:\n%s", err, out)
	}
	if out, _, err = grantCLI(ctx, reader, "plan", camp); err != nil || !strings.Contains(out, "Plan: 1 message") {
		t.Fatalf("plan as %s after the grant = %v:\n%s", role, err, out)
	}

	// Commands that change the state are refused, saying to use the role
	// that applies.
	for _, args := range [][]string{{"pause", camp, "--reason", "x"}} {
		if _, _, err := grantCLI(ctx, reader, args...); !state.IsPermissionDenied(err) || !errors.As(err, &he) ||
			!strings.Contains(he.Hint, "the role "+role+" may not change the state") {
			t.Errorf("%s as %s = %v (hint %+v), want permission denied with a hint", args[0], role, err, he)
		}
	}

	// A table of a later schema version, created by the owner after the grant.
	exec := func(as, sql string) error {
		conn, err := pgx.Connect(ctx, as)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(owner, "CREATE TABLE smsform.later_version (x int); INSERT INTO smsform.later_version VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := exec(reader, "SELECT x FROM smsform.later_version"); err != nil {
		t.Errorf("the reader cannot read a table created after the grant: %v", err)
	}
	for _, sql := range []string{"INSERT INTO smsform.later_version VALUES (2)", "DELETE FROM smsform.campaigns", "CREATE TABLE smsform.mine (x int)"} {
		if err := exec(reader, sql); !state.IsPermissionDenied(err) {
			t.Errorf("as the reader, %s = %v, want permission denied", sql, err)
		}
	}
}

// runCLI runs smsform in this process with SMSFORM_STATE set to loc.
func grantCLI(ctx context.Context, loc string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	env := map[string]string{"SMSFORM_STATE": loc}
	err = cli.Run(ctx, args, cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }})
	return out.String(), errOut.String(), err
}
