package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

var pg = New(Options{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// TestDatabase proves a test gets its own empty database it can write to,
// and that the server survives a crash and a restart with its data.
func TestDatabase(t *testing.T) {
	ctx := context.Background()
	a, b := pg.Database(t), pg.Database(t)
	if a == b {
		t.Fatalf("two tests share database %s", a)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if !pg.Throwaway() {
		return
	}
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, a); err == nil {
		t.Fatal("connected to a killed server")
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var x int
	if err := conn.QueryRow(ctx, "SELECT x FROM t").Scan(&x); err != nil || x != 42 {
		t.Fatalf("after restart: x = %d, %v; want 42", x, err)
	}
	conn2, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(ctx)
	if err := conn2.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&x); err != nil || x != 0 {
		t.Fatalf("second database sees the first's table: %d, %v", x, err)
	}
}
