package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

var scaleFull = flag.Bool("scale.full", false, "run make bench-scale: 1,000,000 and 10,000,000 recipients, targets judged")

// gb is the memory every figure of the scale run must stay under.
const gb = 1 << 30

// TestScale is `make bench-scale`: plans of 1,000,000 and 10,000,000
// personalised recipients (14 countries, about 1% invalid and 1% repeated
// numbers), the larger one resumed, saved and applied from its file, an
// apply of 1,000,000 against the sandbox and `state list --json` of the
// large state; each row with its target, and the peak RSS of the command.
// Without -scale.full it runs the same steps on a few thousand recipients
// (targets not judged), so that `make test` proves the harness works.
func TestScale(t *testing.T) {
	small, large, applied, batch := 1_000, 5_000, 1_000, 50
	if *scaleFull {
		small, large, applied, batch = 1_000_000, 10_000_000, 1_000_000, 1000
	}
	ctx := context.Background()
	dir := t.TempDir()
	smsform := binary(t)
	var tab table
	perRecipient := func(m measured, n int) float64 { return float64(m.wall.Microseconds()) / float64(n) }

	// Plan, fresh, at both sizes: is the cost a straight line?
	gen := func(name string, n int, personalised bool, baseURL string) *testharness.Generated {
		t.Logf("generating %s recipients (%s)", count(n), name)
		g, err := testharness.Generate(dir, testharness.Spec{Name: name, Recipients: n, Personalised: personalised, BatchSize: batch, BaseURL: baseURL, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		g.Numbers = nil // not needed here; ten million strings are a lot of test memory
		return g
	}
	// Full runs repeat each figure that a busy moment can move, and take
	// the median.
	rounds := 1
	if *scaleFull {
		rounds = 3
	}
	s := gen("small", small, true, "")
	ms := medianRun(t, rounds, smsform, nil, "plan", s.Campaign)
	l := gen("large", large, true, "")
	ml := medianRun(t, rounds, smsform, nil, "plan", l.Campaign)
	usS, usL := perRecipient(ms, small), perRecipient(ml, large)
	tab.add(row{figure: fmt.Sprintf("plan %s personalised: µs a recipient", count(small)), smsform: fmt.Sprintf("%.2f", usS), rss: ms.rss,
		comparison: "", ratio: 1, target: "", pass: true})
	tab.add(row{figure: fmt.Sprintf("plan %s personalised: µs a recipient", count(large)), smsform: fmt.Sprintf("%.2f", usL), rss: ml.rss,
		comparison: fmt.Sprintf("%.2f at %s", usS, count(small)), ratio: usL / usS, target: "≤ 1.2", pass: usL <= 1.2*usS})
	tab.add(row{figure: "  peak RSS", smsform: mb(ml.rss), rss: ml.rss,
		comparison: "1 GB", ratio: float64(ml.rss) / gb, target: "≤ 1", pass: ml.rss <= gb})
	tab.add(row{figure: "  bytes a recipient (peak RSS / recipients)", smsform: fmt.Sprintf("%.0f", float64(ml.rss)/float64(large)), rss: ml.rss,
		comparison: "100", ratio: float64(ml.rss) / float64(large) / 100, target: "≤ 1", pass: ml.rss <= int64(large)*100})

	// The same campaign, everyone recorded as sent: a resumed plan.
	statePath := strings.TrimSuffix(l.Campaign, ".yaml") + ".smsstate"
	start := time.Now()
	if err := recordChunked(ctx, l.Campaign, statePath, 1000); err != nil {
		t.Fatal(err)
	}
	t.Logf("state of %s recipients recorded in %s", count(large), time.Since(start).Round(time.Second))
	mr := medianRun(t, rounds, smsform, nil, "plan", l.Campaign)
	if !strings.Contains(mr.stdout, "Plan: 0 messages") {
		t.Fatalf("resumed plan still sends:\n%s", firstLines(mr.stdout, 3))
	}
	tab.add(row{figure: fmt.Sprintf("plan %s, everyone already sent: wall", count(large)), smsform: secs(mr.wall), rss: mr.rss,
		comparison: secs(ml.wall) + " fresh", ratio: mr.wall.Seconds() / ml.wall.Seconds(), target: "≤ 1.5", pass: mr.wall.Seconds() <= 1.5*ml.wall.Seconds()})
	tab.add(row{figure: "  peak RSS", smsform: mb(mr.rss), rss: mr.rss,
		comparison: "1 GB", ratio: float64(mr.rss) / gb, target: "≤ 1", pass: mr.rss <= gb})

	// state list --json streams: the large state's listing costs what the
	// small one's does.
	smallState := strings.TrimSuffix(s.Campaign, ".yaml") + ".smsstate"
	if err := recordChunked(ctx, s.Campaign, smallState, 1000); err != nil {
		t.Fatal(err)
	}
	lsS := run(t, smsform, nil, "state", "list", "--json", s.Campaign)
	lsL := run(t, smsform, nil, "state", "list", "--json", l.Campaign)
	if n := strings.Count(lsL.stdout, "\n"); n < large*9/10 {
		t.Fatalf("state list --json printed %d lines for %s recipients", n, count(large))
	}
	tab.add(row{figure: fmt.Sprintf("state list --json of %s: peak RSS", count(large)), smsform: mb(lsL.rss), rss: lsL.rss,
		comparison: mb(lsS.rss) + " for " + count(small), ratio: float64(lsL.rss) / float64(lsS.rss), target: "≤ 1.25",
		pass: float64(lsL.rss) <= 1.25*float64(lsS.rss)})

	// A saved plan of the large campaign, one body for all (a national
	// reminder: batches of 1,000), applied from its file against the
	// sandbox, and an apply of a campaign of 1,000,000.
	const id, secret = "scale", "scale-secret"
	// --forget: the sandbox keeping ten million messages in memory would
	// slow down as it grows, and hide whether apply does.
	url, stop := startSandbox(t, smsform, id, secret, "--latency", "0s", "--forget")
	defer stop()
	env := []string{"SMSFORM_CLIENT_ID=" + id, "SMSFORM_CLIENT_SECRET=" + secret, "SMSFORM_BASE_URL=" + url,
		"SMSFORM_TOKEN_DIR=" + filepath.Join(dir, "tokens"), "CI=true"}
	// Each round saves the plan against a state of its own and applies it:
	// a tenth of the batches lasts seconds, which a busy moment of a shared
	// machine can move. The round of median pace is the figure, the peak
	// RSS of each command the largest of its rounds.
	// The large personalised campaign saved and applied from its file,
	// to its first send: deriving the plan again before anything is sent
	// costs memory as plan does.
	// In a folder of its own, its list a hard link: beside l.Campaign lies
	// its state, everyone sent, which apply rightly takes for a second
	// ledger of the campaign.
	first, planned := medianFirstSend(t, rounds, smsform, dir, aside(t, l, filepath.Join(dir, "first")))
	tab.add(row{figure: fmt.Sprintf("apply PLANFILE %s personalised, to its first send: peak RSS", count(large)), smsform: mb(first.rss), rss: first.rss,
		comparison: "1 GB", ratio: float64(first.rss) / gb, target: "≤ 1", pass: first.rss <= gb})
	tab.add(row{figure: "  time to its first send vs plan in the same rounds", smsform: secs(first.wall), rss: first.rss,
		comparison: secs(planned.wall) + " plan", ratio: first.wall.Seconds() / planned.wall.Seconds(), target: "(info)", pass: true})

	national := gen("national", large, false, url)
	var mo measured
	var applies []rates
	for r := range rounds {
		planFile := filepath.Join(dir, fmt.Sprintf("national%d.plan", r+1))
		stateFile := filepath.Join(dir, fmt.Sprintf("national%d.smsstate", r+1))
		m := run(t, smsform, env, "plan", "--state", stateFile, "--out", planFile, national.Campaign)
		mo.rss = max(mo.rss, m.rss)
		// --new-state: apply rightly refuses a new state where an earlier
		// round's state shows the campaign was sent; here that is the point.
		a := applyRates(t, smsform, env, "--state", stateFile, "--new-state", planFile)
		t.Logf("apply PLANFILE round %d: %.0f batches/s in the first tenth, %.0f in the last", r+1, a.first, a.last)
		applies = append(applies, a)
	}
	ma := medianRates(applies)
	tab.add(row{figure: fmt.Sprintf("plan --out %s, one body: peak RSS", count(large)), smsform: mb(mo.rss), rss: mo.rss,
		comparison: "1 GB", ratio: float64(mo.rss) / gb, target: "≤ 1", pass: mo.rss <= gb})
	tab.add(row{figure: fmt.Sprintf("apply PLANFILE %s, batches of %s: peak RSS", count(large), count(batch)), smsform: mb(ma.rss), rss: ma.rss,
		comparison: "1 GB", ratio: float64(ma.rss) / gb, target: "≤ 1", pass: ma.rss <= gb})
	tab.add(row{figure: fmt.Sprintf("  batches/s, last 10%% vs first 10%% (median of %d)", rounds), smsform: fmt.Sprintf("%.0f", ma.last), rss: ma.rss,
		comparison: fmt.Sprintf("%.0f first", ma.first), ratio: ma.last / ma.first, target: "≥ 0.9", pass: ma.last >= 0.9*ma.first})

	// The same for a campaign applied directly, each round a campaign of
	// its own.
	applies = nil
	for r := range rounds {
		one := gen(fmt.Sprintf("apply%d", r+1), applied, false, url)
		a := applyRates(t, smsform, env, "--auto-approve", one.Campaign)
		t.Logf("apply round %d: %.0f batches/s in the first tenth, %.0f in the last", r+1, a.first, a.last)
		applies = append(applies, a)
	}
	m1 := medianRates(applies)
	// A control: the same campaigns sent by a bare loop (no plan file, no
	// state), to see how much of a slower end is the sandbox and the
	// machine rather than smsform.
	var bares []rates
	for r := range rounds {
		b, err := bareRates(ctx, url, id, secret, filepath.Join(dir, fmt.Sprintf("apply%d.yaml", r+1)))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("bare round %d: %.0f batches/s in the first tenth, %.0f in the last", r+1, b.first, b.last)
		bares = append(bares, b)
	}
	mb1 := medianRates(bares)
	tab.add(row{figure: fmt.Sprintf("apply %s, batches of %s: peak RSS", count(applied), count(batch)), smsform: mb(m1.rss), rss: m1.rss,
		comparison: "1 GB", ratio: float64(m1.rss) / gb, target: "≤ 1", pass: m1.rss <= gb})
	tab.add(row{figure: fmt.Sprintf("  batches/s, last 10%% vs first 10%% (median of %d)", rounds), smsform: fmt.Sprintf("%.0f", m1.last), rss: m1.rss,
		comparison: fmt.Sprintf("%.0f first", m1.first), ratio: m1.last / m1.first, target: "≥ 0.9", pass: m1.last >= 0.9*m1.first})
	tab.add(row{figure: fmt.Sprintf("  bare sender, same campaigns (control): batches/s, last 10%% vs first 10%% (median of %d)", rounds), smsform: fmt.Sprintf("%.0f", mb1.last),
		comparison: fmt.Sprintf("%.0f first", mb1.first), ratio: mb1.last / mb1.first, target: "(info)", pass: true})

	// The state alone, as apply journals: what a batch costs it, early and
	// late, without the HTTP round trip and the sandbox around it; for a
	// campaign of 1,000,000 (the target) and for the national one.
	cost := gen("statecost", applied, false, "")
	for _, c := range []struct {
		path   string
		n      int
		target bool
	}{{cost.Campaign, applied, true}, {national.Campaign, large, false}} {
		first, last, err := stateCost(ctx, c.path, filepath.Join(dir, fmt.Sprintf("cost%d.smsstate", c.n)))
		if err != nil {
			t.Fatal(err)
		}
		r := row{figure: fmt.Sprintf("state journaling %s in batches of %s: median ms a batch, last 10%% vs first 10%%", count(c.n), count(batch)),
			smsform: fmt.Sprintf("%.2f", millis(last)), comparison: fmt.Sprintf("%.2f first", millis(first)),
			ratio: millis(last) / millis(first), target: "≤ 1.1", pass: last <= first*11/10}
		if !c.target {
			r.target, r.pass = "(info)", true
		}
		tab.add(r)
	}

	tab.print(os.Stdout, "bench-scale", *scaleFull)
}

// aside puts g's campaign in folder, its list a hard link to g's (ten
// million rows are not copied), and returns the campaign's new path.
func aside(t *testing.T, g *testharness.Generated, folder string) string {
	t.Helper()
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(g.List, filepath.Join(folder, filepath.Base(g.List))); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(g.Campaign)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(folder, filepath.Base(g.Campaign))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// stateCost journals every batch of the campaign's plan in a new state as
// apply does (each outcome in the commit of the next intent) and returns
// the median time a batch took in the first and in the last tenth.
func stateCost(ctx context.Context, campaignPath, statePath string) (first, last time.Duration, err error) {
	p, st, err := planAndState(ctx, campaignPath, statePath, true)
	if err != nil {
		return 0, 0, err
	}
	var took []time.Duration
	prev := ""
	err = p.EachBatch(func(_ int, b plan.Batch) error {
		start := time.Now()
		in := state.Intent{BatchID: b.ID, Phones: b.Recipients, BodyHash: state.BodyHash(b.Body)}
		var err error
		if prev == "" {
			err = st.RecordIntent(ctx, in)
		} else {
			err = st.RecordOutcomeAndIntent(ctx, prev, state.Outcome{Status: state.Sent, HTTPStatus: 200, RequestID: prev}, in)
		}
		took = append(took, time.Since(start))
		prev = b.ID
		return err
	})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, err
	}
	if len(took) < 10 {
		return 0, 0, fmt.Errorf("%d batches: too few to take tenths of", len(took))
	}
	tenth := len(took) / 10
	median := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	return median(took[:tenth]), median(took[len(took)-tenth:]), nil
}

// medianRates is the round of median pace ratio, with the largest peak RSS
// of all rounds.
func medianRates(rounds []rates) rates {
	rounds = slices.Clone(rounds)
	slices.SortFunc(rounds, func(a, b rates) int { return cmp.Compare(a.last/a.first, b.last/b.first) })
	m := rounds[len(rounds)/2]
	for _, r := range rounds {
		m.rss = max(m.rss, r.rss)
	}
	return m
}

// rates is an apply's peak RSS and its pace at the start and at the end.
type rates struct {
	rss         int64
	first, last float64 // batches a second in the first and the last tenth of the batches (see pace)
}

// applyRates runs `smsform apply --json ARGS` and times each batch_sent
// event as it is printed, so that a state that slows down as it grows
// shows as a last tenth slower than the first.
func applyRates(t *testing.T, smsform string, env []string, args ...string) rates {
	t.Helper()
	cmd := exec.Command(smsform, append([]string{"apply", "--json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchRSS(cmd.Process.Pid)
	var at []time.Time
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e struct{ Type string }
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "batch_sent" {
			at = append(at, time.Now())
		}
	}
	err = cmd.Wait()
	rss := peak()
	if err != nil {
		t.Fatalf("smsform apply %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if len(at) < 20 {
		t.Fatalf("apply sent %d batches; the harness needs at least 20", len(at))
	}
	r := tenths(at)
	r.rss = rss
	return r
}

// tenths is the pace of the first and of the last tenth of events at
// these times: each the median pace of five equal slices of the tenth, so
// that a stall (a checkpoint of the state, another process on the cores)
// moves one slice, not the figure, while a cost that grows per batch moves
// them all.
func tenths(at []time.Time) rates {
	tenth := len(at) / 10
	pace := func(lo int) float64 {
		n := min(5, tenth)
		per := tenth / n
		r := make([]float64, n)
		for k := range r {
			r[k] = float64(per) / max(at[lo+(k+1)*per].Sub(at[lo+k*per]).Seconds(), 1e-6)
		}
		slices.Sort(r)
		return r[n/2]
	}
	return rates{first: pace(0), last: pace(len(at) - 1 - tenth)}
}

// bareRates sends the campaign's batches to the sandbox with a bare loop,
// as many at once as the campaign says, and times each answer.
func bareRates(ctx context.Context, url, id, secret, campaignPath string) (rates, error) {
	c, err := campaign.Load(campaignPath)
	if err != nil {
		return rates{}, err
	}
	p, err := plan.Compute(ctx, c, nil)
	if err != nil {
		return rates{}, err
	}
	client := &api.Client{BaseURL: url, ClientID: id, ClientSecret: secret, Timeout: 30 * time.Second}
	tok, err := client.IssueToken(ctx, 0)
	if err != nil {
		return rates{}, err
	}
	var at []time.Time
	if err := sendBare(ctx, client, tok.Value, c, p, func() { at = append(at, time.Now()) }); err != nil {
		return rates{}, err
	}
	if len(at) < 20 {
		return rates{}, fmt.Errorf("bare sender sent %d batches; the harness needs at least 20", len(at))
	}
	return tenths(at), nil
}

// recordChunked records everyone the campaign's plan sends as sent, through
// the state's own API, in intents of up to chunk recipients: a personalised
// plan has a batch a recipient, and ten million commits would take hours.
// Each intent carries the body hash of its first batch, so most of a
// personalised campaign's recipients count as sent an earlier version of
// their body: the resumed plan reads and compares each one all the same.
func recordChunked(ctx context.Context, campaignPath, statePath string, chunk int) error {
	p, st, err := planAndState(ctx, campaignPath, statePath, false)
	if err != nil {
		return err
	}
	var (
		phones []string
		hash   string
		n      int
	)
	flush := func() error {
		if len(phones) == 0 {
			return nil
		}
		n++
		id := fmt.Sprintf("scale-%d", n)
		if err := st.RecordIntent(ctx, state.Intent{BatchID: id, Phones: phones, BodyHash: hash}); err != nil {
			return err
		}
		phones = phones[:0]
		return st.RecordOutcome(ctx, id, state.Outcome{Status: state.Sent, HTTPStatus: 200, RequestID: id})
	}
	err = p.EachBatch(func(_ int, b plan.Batch) error {
		if len(phones) == 0 {
			hash = state.BodyHash(b.Body)
		}
		phones = append(phones, b.Recipients...)
		if len(phones) >= chunk {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	return err
}
