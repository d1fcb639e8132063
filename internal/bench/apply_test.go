package bench

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
)

// The apply rows. Each compares like with like in one run: two sides that
// differ in one thing only, measured in alternating rounds (a machine that
// drifts during the runs weighs on both alike), each round against a
// sandbox of its own, the median round of each side reported. On two cores
// the sandbox and smsform share the CPU, so a ratio against the bare API
// client in a loop measures the machine as much as smsform: only the
// instant sandbox row keeps that comparison, as information. The sandbox
// runs with --forget, as a provider's servers cost its client no CPU:
// keeping every message in memory took half of the sandbox's CPU (the
// outbox's growth and the collector scanning it), taken from whichever side
// needed more of the two cores.

// throughput is one side of a comparison.
type throughput struct {
	rps  float64       // requests per second while sending
	wall time.Duration // smsform: the whole command; bare: sending
	rss  int64
}

// pairSpec is one side of an apply comparison: what the sandbox answers
// and what the campaign asks of apply.
type pairSpec struct {
	latency     time.Duration // of every answer of the sandbox
	batch       int           // recipients per batch, 0: 100
	concurrency int           // requests in flight, 0: the run's sizes
	// perRecipient: the sandbox answers with a status per recipient
	// (--success-body results); results: the campaign reads it (a
	// provider.results mapping); ids: the mapping keeps each recipient's
	// message id too.
	perRecipient, results, ids bool
	stateURL                   string // apply's state in this database, "": a file
	// project: the campaign is a project's whose state is stateURL (the
	// project's ledger, see ledgerProjectDir); capped: the project sets a
	// frequency cap.
	project, capped bool
}

// name is the stem of a round's files: every side of every round its own.
func (ps pairSpec) name(round int) string {
	name := fmt.Sprintf("apply-%s-b%d-c%d", ps.latency, cmp.Or(ps.batch, 100), ps.concurrency)
	for _, tag := range []struct {
		on   bool
		text string
	}{{ps.perRecipient, "-perrecipient"}, {ps.results, "-results"}, {ps.ids, "-ids"}, {ps.stateURL != "", "-pg"}, {ps.project, "-project"}, {ps.capped, "-capped"}} {
		if tag.on {
			name += tag.text
		}
	}
	return fmt.Sprintf("%s-%d", name, round)
}

// applyVsBare measures rounds of sending one campaign twice to a sandbox
// that answers as ps says: with a bare sender (the API client in a loop: no
// state, no token store) and with `smsform apply`; it returns the median of
// each side.
func applyVsBare(t *testing.T, ctx context.Context, smsform, dir string, sz sizes, ps pairSpec, rounds int) (bare, applied throughput) {
	t.Helper()
	var bares, applieds []throughput
	for round := range rounds {
		r := newApplyRound(t, ctx, smsform, dir, sz, ps, round, uint64(2+round))
		bares = append(bares, r.bare(t, ctx))
		applieds = append(applieds, r.apply(t))
		r.stop()
	}
	return median(bares), median(applieds)
}

// applyVs measures rounds of `smsform apply` as a says and as b says, in
// turn, each side of a round the same campaign (the same seed); it returns
// the median of each side.
func applyVs(t *testing.T, ctx context.Context, smsform, dir string, sz sizes, a, b pairSpec, rounds int) (ta, tb throughput) {
	t.Helper()
	var as, bs []throughput
	for round := range rounds {
		for _, side := range []struct {
			ps  pairSpec
			out *[]throughput
		}{{a, &as}, {b, &bs}} {
			r := newApplyRound(t, ctx, smsform, dir, sz, side.ps, round, uint64(2+round))
			*side.out = append(*side.out, r.apply(t))
			r.stop()
		}
	}
	return median(as), median(bs)
}

// median returns the throughput of median requests per second, with the
// highest peak RSS of all.
func median(ts []throughput) throughput {
	slices.SortFunc(ts, func(a, b throughput) int { return cmp.Compare(a.rps, b.rps) })
	m := ts[len(ts)/2]
	for _, t := range ts {
		m.rss = max(m.rss, t.rss)
	}
	return m
}

// applyRound is one side of one round: a sandbox answering as its spec
// says, and a campaign generated for it, planned in the test process.
type applyRound struct {
	smsform, url string
	c            *campaign.Campaign
	campaign     string
	p            *plan.Plan
	env          []string
	stop         func()
}

const sandboxID, sandboxSecret = "bench", "bench-secret"

func newApplyRound(t *testing.T, ctx context.Context, smsform, dir string, sz sizes, ps pairSpec, round int, seed uint64) *applyRound {
	t.Helper()
	args := []string{"--latency", ps.latency.String(), "--forget"}
	if ps.perRecipient {
		args = append(args, "--success-body", "results")
	}
	url, stop := startSandbox(t, smsform, sandboxID, sandboxSecret, args...)
	name := ps.name(round)
	gdir := dir
	if ps.project {
		gdir = ledgerProjectDir(t, dir, name, ps.stateURL, ps.capped)
	}
	g, err := testharness.Generate(gdir, testharness.Spec{Name: name, Recipients: sz.apply, BatchSize: cmp.Or(ps.batch, 100),
		Concurrency: cmp.Or(ps.concurrency, sz.concurrency), BaseURL: url, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if ps.results {
		// The mapping a provider of that shape needs; with ids, the
		// message ids are kept per recipient too, for the delivery reports
		// that name them.
		id := ""
		if ps.ids {
			id = "    id: /messageId\n"
		}
		underProvider(t, g.Campaign, "  results:\n    list: /messages\n    number: /to\n"+id+"    status: /status/groupName\n    reason: /status/description\n"+
			"    sent: [PENDING]\n    retry: [THROTTLED]\n    failed: [REJECTED]\n")
	}
	c, err := campaign.Load(g.Campaign)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compute(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"SMSFORM_CLIENT_ID=" + sandboxID, "SMSFORM_CLIENT_SECRET=" + sandboxSecret, "SMSFORM_BASE_URL=" + url,
		"SMSFORM_TOKEN_DIR=" + filepath.Join(dir, name+"-tokens"), "CI=true", "SMSFORM_STATE=" + ps.stateURL}
	return &applyRound{smsform: smsform, url: url, c: c, campaign: g.Campaign, p: p, env: env, stop: stop}
}

// bare sends the round's plan with the API client in a loop.
func (r *applyRound) bare(t *testing.T, ctx context.Context) throughput {
	t.Helper()
	client := &api.Client{BaseURL: r.url, ClientID: sandboxID, ClientSecret: sandboxSecret, Timeout: 30 * time.Second}
	tok, err := client.IssueToken(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	if err := sendBare(ctx, client, tok.Value, r.c, r.p, func() {}); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	return throughput{wall: wall, rps: float64(r.p.NumBatches()) / wall.Seconds(),
		rss: ru0.Maxrss * 1024} // the test process: an upper bound
}

// apply runs `smsform apply` on the round's campaign. The rate is of its
// send loop, from apply's own summary (every intent, request and outcome;
// apply has its token before), as the bare loop is timed from its first
// request to its last answer: planning and opening the state come before
// and are shown on a row of their own.
func (r *applyRound) apply(t *testing.T) throughput {
	t.Helper()
	m := run(t, r.smsform, r.env, "apply", "--auto-approve", "--json", r.campaign)
	sending, sent := sendingPhase(t, m.stdout)
	if sent != r.p.NumBatches() {
		t.Fatalf("apply sent %d batches, want %d", sent, r.p.NumBatches())
	}
	return throughput{rps: float64(sent) / sending.Seconds(), wall: m.wall, rss: m.rss}
}

// applyRows measures apply against the sandbox: at once (information: the
// cost of one durable intent per batch), at 20 ms against the bare sender
// on both engines, and the mapping rows.
func applyRows(t *testing.T, ctx context.Context, smsform, dir string, sz sizes, n int) []row {
	t.Helper()
	var rows []row
	rate := func(tp throughput) string { return fmt.Sprintf("%.0f", tp.rps) }
	// At once, the request costs about what the intent's commit does: the
	// ratio is what a durable intent per batch costs on this machine, not
	// a target (docs/performance.md says why).
	bare, applied := applyVsBare(t, ctx, smsform, dir, sz, pairSpec{}, n)
	rows = append(rows,
		row{figure: fmt.Sprintf("apply %s recipients (batches of 100, concurrency %d), sandbox answering at once, vs bare: req/s", count(sz.apply), sz.concurrency),
			smsform: rate(applied), rss: applied.rss, comparison: rate(bare) + " bare", ratio: applied.rps / bare.rps, target: "(info)", pass: true},
		row{figure: "  whole command (plan, lock, state, send) vs bare sending", smsform: secs(applied.wall), rss: applied.rss,
			comparison: secs(bare.wall), ratio: applied.wall.Seconds() / bare.wall.Seconds(), target: "(info)", pass: true})
	// A provider over a network takes tens of milliseconds per request;
	// 20 ms is a fast one. The rows from here on are judged.
	n = judgedRounds(n)
	bare, applied = applyVsBare(t, ctx, smsform, dir, sz, pairSpec{latency: 20 * time.Millisecond}, n)
	rows = append(rows, row{figure: "  sandbox answering in 20 ms (a fast provider), vs bare: req/s", smsform: rate(applied), rss: applied.rss,
		comparison: rate(bare) + " bare", ratio: applied.rps / bare.rps, target: "≥ 0.9", pass: applied.rps >= 0.9*bare.rps})
	bare, applied = applyVsBare(t, ctx, smsform, dir, sz, pairSpec{latency: 20 * time.Millisecond, stateURL: pg.Database(t)}, n)
	rows = append(rows, row{figure: "  sandbox answering in 20 ms, state in PostgreSQL, vs bare: req/s", smsform: rate(applied), rss: applied.rss,
		comparison: rate(bare) + " bare", ratio: applied.rps / bare.rps, target: "≥ 0.9", pass: applied.rps >= 0.9*bare.rps})
	return append(rows, mappingRows(t, ctx, smsform, dir, sz, n)...)
}

// mappingRows measures per-recipient answers read (statuses only, then
// with the message ids kept) against the same apply that does not read
// them, in n judged rounds.
func mappingRows(t *testing.T, ctx context.Context, smsform, dir string, sz sizes, n int) []row {
	t.Helper()
	var rows []row
	rate := func(tp throughput) string { return fmt.Sprintf("%.0f", tp.rps) }
	// A provider that answers recipient by recipient, both sides getting
	// the same 1,000-element answers: one maps each (provider.results), the
	// other reads the answer as a whole.
	// Three times the recipients: at 100 batches a side (about 1.3 s of
	// sending), the ratio moved by 0.05 from run to run.
	plain := pairSpec{latency: 20 * time.Millisecond, batch: 1000, perRecipient: true}
	mapped := plain
	mapped.results = true
	many := sz
	many.apply *= 3
	without, with := applyVs(t, ctx, smsform, dir, many, plain, mapped, n)
	rows = append(rows, row{figure: fmt.Sprintf("  %s recipients in batches of 1,000 answered per recipient in 20 ms, a results mapping (statuses) vs none: req/s", count(many.apply)), smsform: rate(with), rss: with.rss,
		comparison: rate(without) + " no mapping", ratio: with.rps / without.rps, target: "≥ 0.95", pass: with.rps >= 0.95*without.rps})
	// The same with the message ids kept, as a provider's mapping does:
	// a thousand ids written and indexed with each batch's outcome.
	// (In a folder of its own: its side without a mapping is the same
	// campaign as the row above's, whose state has it all sent.)
	mapped.ids = true
	idsDir := filepath.Join(dir, "ids")
	if err := os.MkdirAll(idsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	without, with = applyVs(t, ctx, smsform, idsDir, many, plain, mapped, n)
	rows = append(rows, row{figure: "  the same mapping keeping each message id (id: /messageId) vs none: req/s", smsform: rate(with), rss: with.rss,
		comparison: rate(without) + " no mapping", ratio: with.rps / without.rps, target: "≥ 0.95", pass: with.rps >= 0.95*without.rps})
	return rows
}

var applyOnly = flag.String("bench.apply", "", "run only the apply rows (TestBenchApply): apply, mapping (a part of apply), cap, or a list of them such as apply,cap")

// TestBenchApply is the apply rows of make bench alone, at full size
// (skipped without -bench.apply): the rows that compare apply's writes
// with the requests they wait on need runs of their own to be tuned.
func TestBenchApply(t *testing.T) {
	if *applyOnly == "" {
		t.Skip("-bench.apply apply,cap runs it")
	}
	sz := fullSizes
	ctx := context.Background()
	dir := t.TempDir()
	smsform := binary(t)
	var tab table
	for _, part := range strings.Split(*applyOnly, ",") {
		switch part {
		case "apply":
			tab.rows = append(tab.rows, applyRows(t, ctx, smsform, dir, sz, *runs)...)
		case "mapping":
			tab.rows = append(tab.rows, mappingRows(t, ctx, smsform, dir, sz, judgedRounds(*runs))...)
		case "cap":
			tab.rows = append(tab.rows, capRows(t, ctx, smsform, dir, sz, *runs)...)
		default:
			t.Fatalf("-bench.apply: %q is not apply, mapping or cap", part)
		}
	}
	tab.print(os.Stdout, "bench (apply rows only)", true)
}
