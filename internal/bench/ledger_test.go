package bench

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/state"
)

// A project's ledger grows with every campaign: each number's recent sends
// (the frequency cap's index), the campaigns' own records and the opt-outs.
// These rows measure what it costs a plan and an apply, against the same
// work with an empty ledger. The ledger is written straight into the
// state's tables (SQL inserts, COPY in PostgreSQL): ten million sends
// through the API would take longer than the measurements.

// ledgerSize is the ledger a run fills.
type ledgerSize struct {
	people    int // numbers sent to: the campaign's valid ones first, then made-up ones
	perPerson int // sends each, spread over the last 30 days, each by another past campaign
	campaigns int // past campaigns the sends belong to (at least perPerson)
	optOuts   int // a tenth of them the campaign's numbers
}

// sends is how many sends the ledger holds.
func (l ledgerSize) sends() int { return l.people * l.perPerson }

// fullLedger is the issue's: 10,000,000 sends of the last 30 days and
// 1,000,000 opt-outs.
var fullLedger = ledgerSize{people: 2_000_000, perPerson: 5, campaigns: 10, optOuts: 1_000_000}

// benchLedger is the ledger of this run: the full one, or a small one
// under make test.
func benchLedger() ledgerSize {
	if *full {
		return fullLedger
	}
	return ledgerSize{people: 4_000, perPerson: 5, campaigns: 10, optOuts: 1_000}
}

// ledgerTables writes rows into a state's tables, whatever its engine.
type ledgerTables interface {
	insert(ctx context.Context, table string, cols []string, rows func(yield func([]any) error) error) error
	exec(ctx context.Context, query string) error
	campaignID(ctx context.Context, name string) (int64, error)
	close() error
}

// fillLedger fills the project's state at loc (made, with its schema, if
// missing) with a ledger of size l around the campaign's numbers (E.164).
func fillLedger(ctx context.Context, loc string, numbers []string, l ledgerSize, now time.Time) error {
	// An empty change makes the state and its schema, as any command would.
	if _, err := ledger.ChangeOptOuts(ctx, state.MustParseLocation(loc), nil); err != nil {
		return err
	}
	var db ledgerTables
	var err error
	if state.IsPostgres(loc) {
		db, err = openPGTables(ctx, loc)
	} else {
		db, err = openFileTables(loc)
	}
	if err != nil {
		return err
	}
	people := func(i int) string {
		if i < len(numbers) {
			return numbers[i]
		}
		return fmt.Sprintf("+1555%07d", i) // made up: the state stores what it is given
	}
	rng := rand.New(rand.NewPCG(7, 7))
	// sendAt[i*perPerson+j] is when person i had send j, seconds back from now.
	sendAt := make([]int32, l.sends())
	for k := range sendAt {
		sendAt[k] = int32(rng.IntN(30 * 24 * 3600))
	}
	err = fillCampaigns(ctx, db, people, l, sendAt, now)
	if err == nil {
		err = db.insert(ctx, "caps", []string{"phone", "last_at"}, func(yield func([]any) error) error {
			for i := range l.people {
				last := int64(0)
				for j := range l.perPerson {
					last = max(last, now.Unix()-int64(sendAt[i*l.perPerson+j]))
				}
				if err := yield([]any{people(i), last}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil {
		err = db.insert(ctx, "cap_sends", []string{"phone", "at", "attempt_id", "marketing"}, func(yield func([]any) error) error {
			for i := range l.people {
				for j := range l.perPerson {
					if err := yield([]any{people(i), now.Unix() - int64(sendAt[i*l.perPerson+j]), int64(i%l.campaigns + 1), true}); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err == nil {
		err = fillOptOuts(ctx, db, people, l, len(numbers), now)
	}
	return joinClose(err, db)
}

// fillCampaigns records the sends as the past campaigns' own records:
// attempts of 100 numbers each, sent.
func fillCampaigns(ctx context.Context, db ledgerTables, people func(int) string, l ledgerSize, sendAt []int32, now time.Time) error {
	for k := range l.campaigns {
		name := fmt.Sprintf("past-%d", k)
		err := db.insert(ctx, "campaigns", []string{"name", "lineage", "serial", "created_at"}, func(yield func([]any) error) error {
			return yield([]any{name, fmt.Sprintf("%032x", k+1), int64(l.people), now.Add(-30 * 24 * time.Hour).UTC().Format(time.RFC3339Nano)})
		})
		if err != nil {
			return err
		}
		id, err := db.campaignID(ctx, name)
		if err != nil {
			return err
		}
		// Person i's send j belongs to campaign (i+j) mod campaigns: each
		// person hears from perPerson distinct campaigns.
		err = db.insert(ctx, "attempts", []string{"campaign_id", "batch_id", "state", "body_hash", "recipients", "http_status", "started_at", "finished_at", "phones"},
			func(yield func([]any) error) error {
				var batch []string
				flush := func(n int) error {
					if len(batch) == 0 {
						return nil
					}
					at := now.Add(-time.Duration(sendAt[n]) * time.Second).UTC().Format(time.RFC3339Nano)
					phones := `["` + strings.Join(batch, `","`) + `"]`
					err := yield([]any{id, fmt.Sprintf("b-%d-%d", k, n), "sent", state.BodyHash(name), int64(len(batch)), int64(200), at, at, phones})
					batch = batch[:0]
					return err
				}
				for i := range l.people {
					j := ((k-i)%l.campaigns + l.campaigns) % l.campaigns
					if j >= l.perPerson {
						continue
					}
					if batch = append(batch, people(i)); len(batch) == 100 {
						if err := flush(i*l.perPerson + j); err != nil {
							return err
						}
					}
				}
				return flush(0)
			})
		if err != nil {
			return err
		}
	}
	return nil
}

// fillOptOuts opts out l.optOuts numbers: one in ten of the campaign's
// numbers (of campaign people, the first ones), the rest made up.
func fillOptOuts(ctx context.Context, db ledgerTables, people func(int) string, l ledgerSize, campaign int, now time.Time) error {
	at := now.Add(-24 * time.Hour).UTC().Format(time.RFC3339Nano)
	err := db.insert(ctx, "optouts", []string{"phone", "action", "at", "by_whom", "reason"}, func(yield func([]any) error) error {
		own := min(l.optOuts/10, campaign/10)
		for i := range own {
			if err := yield([]any{people(i * 10), "add", at, "bench", "STOP"}); err != nil {
				return err
			}
		}
		for i := range l.optOuts - own {
			if err := yield([]any{fmt.Sprintf("+1666%07d", i), "add", at, "bench", "STOP"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The numbers opted out now, as ChangeOptOuts keeps them beside the log.
	return db.exec(ctx, `INSERT INTO optouts_now (phone, id, at, by_whom, reason) SELECT phone, id, at, by_whom, reason FROM optouts WHERE action = 'add'`)
}

func joinClose(err error, db ledgerTables) error {
	if cerr := db.close(); err == nil {
		err = cerr
	}
	return err
}

// fileTables writes into a state file in one transaction.
type fileTables struct{ db *sql.DB }

func openFileTables(path string) (*fileTables, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return &fileTables{db: db}, nil
}

func (f *fileTables) insert(ctx context.Context, table string, cols []string, rows func(yield func([]any) error) error) error {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(cols, ", "), strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")))
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := rows(func(v []any) error { _, err := stmt.ExecContext(ctx, v...); return err }); err != nil {
		return fmt.Errorf("fill %s: %w", table, err)
	}
	return tx.Commit()
}

func (f *fileTables) exec(ctx context.Context, query string) error {
	_, err := f.db.ExecContext(ctx, query)
	return err
}

func (f *fileTables) campaignID(ctx context.Context, name string) (id int64, err error) {
	err = f.db.QueryRowContext(ctx, `SELECT id FROM campaigns WHERE name = ?`, name).Scan(&id)
	return id, err
}

func (f *fileTables) close() error { return f.db.Close() }

// pgTables writes into PostgreSQL with COPY.
type pgTables struct{ conn *pgx.Conn }

func openPGTables(ctx context.Context, url string) (*pgTables, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = state.DefaultSchema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &pgTables{conn: conn}, nil
}

func (p *pgTables) insert(ctx context.Context, table string, cols []string, rows func(yield func([]any) error) error) error {
	// COPY pulls rows; the generator pushes them: a goroutine between.
	ch := make(chan []any, 1024)
	errc := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(ch)
		errc <- rows(func(v []any) error {
			select {
			case ch <- append([]any(nil), v...):
				return nil
			case <-done:
				return context.Canceled
			}
		})
	}()
	var cur []any
	_, err := p.conn.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromFunc(func() ([]any, error) {
		var ok bool
		cur, ok = <-ch
		if !ok {
			return nil, <-errc
		}
		return cur, nil
	}))
	if err != nil {
		return fmt.Errorf("fill %s: %w", table, err)
	}
	// VACUUM as well: a ledger that has lived a while has been vacuumed,
	// its index answers a plan without a look into the table, and
	// autovacuum does not start on ten million new rows while a plan is
	// measured.
	_, err = p.conn.Exec(ctx, "VACUUM ANALYZE "+table)
	return err
}

func (p *pgTables) exec(ctx context.Context, query string) error {
	_, err := p.conn.Exec(ctx, query)
	return err
}

func (p *pgTables) campaignID(ctx context.Context, name string) (id int64, err error) {
	err = p.conn.QueryRow(ctx, `SELECT id FROM campaigns WHERE name = $1`, name).Scan(&id)
	return id, err
}

func (p *pgTables) close() error { return p.conn.Close(context.Background()) }

// ledgerProject makes a project folder under dir holding a copy of the
// generated campaign and a project file naming state (a folder for a file
// state when it is not PostgreSQL) and a frequency cap; it returns the
// campaign's path and the state's location.
func ledgerProject(t *testing.T, dir, name string, g *testharness.Generated, stateLoc string) (campaignPath, loc string) {
	t.Helper()
	proj := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Join(proj, "st"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{g.Campaign, g.List} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proj, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loc = stateLoc
	if loc == "" {
		stateLoc, loc = "st/", filepath.Join(proj, "st", "smsform.smsstate")
	}
	project := fmt.Sprintf("version: 1\nstate: %s\nfrequency_cap: {max: 1, per: 24h}\n", stateLoc)
	if err := os.WriteFile(filepath.Join(proj, "smsform.yaml"), []byte(project), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(proj, filepath.Base(g.Campaign)), loc
}

// e164Numbers is the generated list's valid numbers, in E.164.
func e164Numbers(g *testharness.Generated) []string {
	norm := e164.NewNormalizer(g.Region)
	seen := e164.NewMap[struct{}](len(g.Numbers))
	var out []string
	for _, raw := range g.Numbers {
		if n, err := norm.Normalize(raw); err == nil {
			if _, added := seen.Ref(n.E164); added {
				out = append(out, n.E164)
			}
		}
	}
	return out
}

// ledgerPlanRows measures plan of the generated campaign in a project whose
// state holds the ledger l, against the same plan with an empty ledger:
// in a state file, and in PostgreSQL.
func ledgerPlanRows(t *testing.T, ctx context.Context, smsform, dir string, g *testharness.Generated, runs int) []row {
	t.Helper()
	l := benchLedger()
	numbers := e164Numbers(g)
	var rows []row
	for _, engine := range []string{"file", "PostgreSQL"} {
		emptyLoc, fullLoc := "", ""
		if engine == "PostgreSQL" {
			emptyLoc, fullLoc = pg.Database(t), pg.Database(t)
		}
		emptyPath, emptyLoc := ledgerProject(t, dir, "ledger-empty-"+engine, g, emptyLoc)
		fullPath, fullLoc := ledgerProject(t, dir, "ledger-full-"+engine, g, fullLoc)
		if _, err := ledger.ChangeOptOuts(ctx, state.MustParseLocation(emptyLoc), nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := fillLedger(ctx, fullLoc, numbers, l, time.Now()); err != nil {
			t.Fatal(err)
		}
		t.Logf("ledger of %d sends and %d opt-outs written to %s in %s", l.sends(), l.optOuts, engine, time.Since(start).Round(time.Second))
		// Five of each in a full run: the two plans differ by a second or so,
		// less than a loaded machine can move either.
		pairs := runs
		if *full {
			pairs = max(runs, 5)
		}
		without, with := medianPair(t, pairs, smsform, []string{"plan", emptyPath}, []string{"plan", fullPath})
		if !strings.Contains(with.stdout, "opted out") || !strings.Contains(with.stdout, "held back by the frequency cap") {
			t.Fatalf("the plan with a ledger shows none:\n%s", firstLines(with.stdout, 4))
		}
		figure := fmt.Sprintf("plan %s recipients, project ledger of %s sends and %s opt-outs (%s) vs an empty one",
			count(len(g.Numbers)), count(l.sends()), count(l.optOuts), engine)
		if engine != "file" {
			figure = "  the same, the state in PostgreSQL"
		}
		rows = append(rows, row{figure: figure, smsform: secs(with.wall), rss: with.rss, comparison: secs(without.wall),
			ratio: with.wall.Seconds() / without.wall.Seconds(), target: "≤ 1.5", pass: with.wall.Seconds() <= 1.5*without.wall.Seconds()})
	}
	return rows
}

// ledgerProjectDir makes a project folder under dir whose state is the
// database at url, with a frequency cap when capped, for an apply round.
// The generated campaigns all send to the same numbers (testharness makes
// them in one order whatever the seed), and every apply of the project,
// with a cap or without, counts in the ledger: the cap is 50 a day, more
// than the rounds of a run send, so that it holds nobody back and both sides
// send everything. What it costs is the same whatever its max: the
// numbers' rows locked, their recent sends read and the claim appended.
func ledgerProjectDir(t *testing.T, dir, name, url string, capped bool) string {
	t.Helper()
	proj := filepath.Join(dir, name)
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	project := fmt.Sprintf("version: 1\nstate: %s\n", url)
	if capped {
		project += "frequency_cap: {max: 50, per: 24h}\n"
	}
	if err := os.WriteFile(filepath.Join(proj, "smsform.yaml"), []byte(project), 0o644); err != nil {
		t.Fatal(err)
	}
	return proj
}

// capRows measures apply with a frequency cap against the same apply
// without one, the project's state in PostgreSQL holding the ledger l for
// both: with the cap, each intent also locks and appends to the batch's
// numbers' rows of the cap's index, in the intent's transaction. At 20 ms
// with the run's requests in flight, and at 100 ms (a provider further
// away) with 16 in flight, where the same work hides behind the requests.
func capRows(t *testing.T, ctx context.Context, smsform, dir string, sz sizes, runs int) []row {
	t.Helper()
	l := benchLedger()
	db := pg.Database(t)
	start := time.Now()
	if err := fillLedger(ctx, db, nil, l, time.Now()); err != nil {
		t.Fatal(err)
	}
	t.Logf("ledger of %d sends and %d opt-outs written to PostgreSQL in %s", l.sends(), l.optOuts, time.Since(start).Round(time.Second))
	var rows []row
	for _, c := range []struct {
		latency     time.Duration
		concurrency int
		target      float64
	}{{20 * time.Millisecond, 0, 0.85}, {100 * time.Millisecond, 16, 0.95}} {
		uncapped := pairSpec{latency: c.latency, concurrency: c.concurrency, stateURL: db, project: true}
		capped := uncapped
		capped.capped = true
		without, with := applyVs(t, ctx, smsform, dir, sz, uncapped, capped, judgedRounds(runs))
		figure := fmt.Sprintf("  a frequency cap vs none at %d ms, %d in flight, ledger of %s sends and %s opt-outs in PostgreSQL: req/s",
			c.latency.Milliseconds(), cmp.Or(c.concurrency, sz.concurrency), count(l.sends()), count(l.optOuts))
		rows = append(rows, row{figure: figure, smsform: fmt.Sprintf("%.0f", with.rps), rss: with.rss,
			comparison: fmt.Sprintf("%.0f no cap", without.rps), ratio: with.rps / without.rps,
			target: fmt.Sprintf("≥ %.2f", c.target), pass: with.rps >= c.target*without.rps})
	}
	return rows
}
