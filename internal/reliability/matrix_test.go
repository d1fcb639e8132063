package reliability

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/olekukonko/tablewriter"

	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
	"github.com/smsform/smsform/state"
)

// fault is one row of the fault matrix: how the sandbox misbehaves, and
// what a run of smsform apply must then do.
type fault struct {
	name    string
	backend string         // where the state is: "file" (default) or "postgres"
	cfg     sandbox.Config // Seed is set per run
	// tune, when set, adjusts cfg to the campaign's size.
	tune func(cfg *sandbox.Config, batches int)
	// rate, when set, paces the campaign so that the run lasts long enough
	// for the fault (token expiry) to happen during it.
	rate func(batches int) string
	// before prepares a run (server hooks, a stored token, a limited
	// process) and returns extra apply flags.
	before func(t *testing.T, p *project, batches int) []string
	exits  []int // acceptable exit codes of the first apply
	// minRecipients, when set, is the campaign's least size: a fault that
	// needs the campaign to outgrow something (a file-size limit) whatever
	// the run size.
	minRecipients int
	// after checks the run and, when the first apply stopped, finishes the
	// campaign; it returns a note for the report.
	after func(t *testing.T, p *project, first outcome, batches int) string
}

// figures are what one fault's runs add up to.
type figures struct {
	runs, recipients                          int
	duplicates, unaccounted, inDoubt, retries int
	wall                                      time.Duration
	exits                                     map[int]int
	notes                                     []string
}

// TestFaultMatrix runs smsform apply against each fault of the sandbox over
// seeded runs and reports, per fault: recipients messaged twice,
// recipients not accounted for, in-doubt batches, retries and wall time.
func TestFaultMatrix(t *testing.T) {
	runs := size(*matrixRuns, 1, 20)
	recipients := size(*matrixRecipients, 200, 1000)
	const batch, conc = 20, 4
	batches := (recipients + batch - 1) / batch

	faults := []fault{
		{
			name: "refusals (503, fail rate 0.3)",
			cfg:  sandbox.Config{FailRate: 0.3},
			// 1: a batch refused more times than apply retries (0.3^9 per
			// batch) stops the run; nothing is lost, the rerun finishes.
			exits: []int{0, 1},
			after: func(t *testing.T, p *project, o outcome, _ int) string {
				checkRetryAfter(t, p)
				if o.code == 1 {
					if !strings.Contains(o.stderr, "not sent after 9 attempts") {
						t.Errorf("apply stopped for another reason: %s", o.stderr)
					}
					finish(t, p)
				}
				return fmt.Sprintf("%d refusals", p.srv.Stats().Status[503])
			},
		},
		{
			// Another provider's shapes: 202 with a bare message_id, OAuth
			// error bodies, the token endpoint taking only the literal
			// Basic form (apply's auto mode finds it).
			name:  "refusals (503, 0.3), provider answering 202 {message_id}, OAuth errors, literal Basic",
			cfg:   sandbox.Config{FailRate: 0.3, SuccessStatus: 202, SuccessBody: "minimal", ErrorBody: "oauth", Basic: "literal"},
			exits: []int{0, 1},
			after: func(t *testing.T, p *project, o outcome, _ int) string {
				checkRetryAfter(t, p)
				if o.code == 1 {
					finish(t, p)
				}
				st := p.srv.Stats()
				return fmt.Sprintf("%d refusals, %d accepted with 202", st.Status[503], st.Status[202])
			},
		},
		{
			name:   "server errors (500 after acting, 0.2), provider answering 204 and text errors",
			cfg:    sandbox.Config{ErrorRate: 0.2, SuccessStatus: 204, ErrorBody: "text"},
			before: maxErrors,
			exits:  []int{0, 3},
			after:  checkResolve,
		},
		{
			name:   "per-recipient answers: refused (0.05) and throttled (0.2) inside a 200",
			cfg:    sandbox.Config{SuccessBody: "results", RejectRate: 0.05, ThrottleRate: 0.2},
			before: perRecipient,
			// 3: the refused recipients are failed.
			exits: []int{3},
			after: func(t *testing.T, p *project, o outcome, _ int) string {
				st, tl := p.srv.Stats(), p.tally()
				if tl.Sent != st.Messages || tl.Failed != st.Rejected || tl.InDoubt != 0 {
					t.Errorf("state %d sent, %d failed, %d in doubt; the provider delivered %d and refused %d", tl.Sent, tl.Failed, tl.InDoubt, st.Messages, st.Rejected)
				}
				if st.Throttled == 0 || o.summary.Retried < st.Throttled {
					t.Errorf("%d recipients retried, the provider throttled %d", o.summary.Retried, st.Throttled)
				}
				return fmt.Sprintf("%d refused, %d throttled and sent again; recorded sent = delivered", st.Rejected, st.Throttled)
			},
		},
		{
			name: "rate limiting (429)",
			// Some 3-4 s of sending at the limit.
			tune:  func(cfg *sandbox.Config, batches int) { cfg.RateLimit = max(3, batches/4) },
			exits: []int{0},
			after: func(t *testing.T, p *project, o outcome, _ int) string {
				checkRetryAfter(t, p)
				st := p.srv.Stats()
				if st.Status[429] == 0 {
					t.Error("no request was rate limited")
				}
				return fmt.Sprintf("%d rate limited", st.Status[429])
			},
		},
		{
			name:   "ambiguous (dropped after acting, 0.2)",
			cfg:    sandbox.Config{AmbiguousRate: 0.2},
			before: maxErrors,
			exits:  []int{0, 3},
			after:  checkResolve,
		},
		{
			name:   "server errors (500 after acting, 0.2)",
			cfg:    sandbox.Config{ErrorRate: 0.2},
			before: maxErrors,
			exits:  []int{0, 3},
			after:  checkResolve,
		},
		{
			name: "latency 200ms above a 50ms timeout",
			cfg:  sandbox.Config{Latency: 200 * time.Millisecond},
			before: func(t *testing.T, p *project, n int) []string {
				p.smsform("token", p.campaign) // stored, so that the sends are what times out
				return append(maxErrors(t, p, n), "--request-timeout", "50ms")
			},
			exits: []int{3},
			// Each batch is tried once and left in doubt. Its request may not
			// reach the sandbox at all: on a loaded machine 50 ms can pass
			// before it is read, so the sandbox counts at most one per batch.
			after: func(t *testing.T, p *project, o outcome, batches int) string {
				if tl := p.tally(); tl.InDoubtBatches != batches || tl.InDoubt != len(p.phones) {
					t.Errorf("%d attempts in doubt holding %d recipients, want %d holding %d: each batch is tried once", tl.InDoubtBatches, tl.InDoubt, batches, len(p.phones))
				}
				st := p.srv.Stats()
				if st.SendRequests > batches {
					t.Errorf("%d send requests for %d batches: in doubt must never be resent", st.SendRequests, batches)
				}
				for batch, n := range sendsPerBatch(p.srv.Requests()) {
					if n > 1 {
						t.Errorf("the batch of %s was sent %d times: in doubt must never be resent", batch, n)
					}
				}
				checkNothingToSend(t, p)
				return fmt.Sprintf("all in doubt, none resent (%d of %d requests arrived)", st.SendRequests, batches)
			},
		},
		{
			name: "token expiry during the run (1s tokens)",
			cfg:  sandbox.Config{TokenTTL: time.Second},
			// About 2.5 s of sending.
			rate:  func(batches int) string { return fmt.Sprintf("%d/s", max(1, batches*2/5)) },
			exits: []int{0},
			after: func(t *testing.T, p *project, o outcome, _ int) string {
				st := p.srv.Stats()
				if st.TokenRequests < 2 {
					t.Errorf("%d token requests in a run longer than a token's life", st.TokenRequests)
				}
				return fmt.Sprintf("%d tokens, %d 401s", st.TokenRequests, st.Status[401])
			},
		},
		{
			name: "server restart (tokens lost)",
			before: func(t *testing.T, p *project, batches int) []string {
				p.srv.OnSend(func(n int) {
					if n == batches/2 {
						p.srv.Restart()
					}
				})
				return nil
			},
			exits: []int{0},
			after: func(t *testing.T, p *project, o outcome, _ int) string {
				st := p.srv.Stats()
				if st.Status[401] == 0 || st.TokenRequests < 2 {
					t.Errorf("restart: %d 401s, %d token requests", st.Status[401], st.TokenRequests)
				}
				return fmt.Sprintf("%d 401s, %d tokens", st.Status[401], st.TokenRequests)
			},
		},
		{
			name: "server gone for 1s (connection refused)",
			before: func(t *testing.T, p *project, batches int) []string {
				p.srv.OnSend(func(n int) {
					if n == batches/3 {
						p.srv.Stop()
						time.AfterFunc(time.Second, p.srv.Resume)
					}
				})
				return nil
			},
			// 3: requests already in the server's accept queue when it went
			// away were written and never answered, so they are in doubt
			// (and, the outbox shows, were not delivered).
			exits: []int{0, 3},
			after: func(t *testing.T, p *project, o outcome, _ int) string {
				tl := p.tally()
				if tl.InDoubt > 0 {
					if unsent := resolveByOutbox(t, p); unsent != tl.InDoubt {
						t.Errorf("%d in doubt, %d of them not delivered: the server was gone", tl.InDoubt, unsent)
					}
					finish(t, p)
				}
				return ""
			},
		},
		{
			name:   "state disk full (RLIMIT_FSIZE)",
			before: diskFull,
			exits:  []int{1},
			// With 200 recipients the WAL of a run whose commits group
			// well can stay under the limit (seen in CI: exit 0).
			minRecipients: 1000,
			after:         afterStateRefused([]string{"disk i/o error", "full"}, true),
		},
		{
			name:   "state file read-only",
			before: readOnly,
			exits:  []int{1},
			after:  afterStateRefused([]string{"read-only", "readonly"}, false),
		},
	}
	faults = append(faults, postgresFaults()...)

	results := make([]figures, len(faults))
	t.Run("faults", func(t *testing.T) {
		for i, f := range faults {
			t.Run(f.name, func(t *testing.T) {
				t.Parallel()
				fig := &results[i]
				fig.exits = map[int]int{}
				for run := range runs {
					runFault(t, f, int64(run+1), recipients, batch, conc, batches, fig)
				}
			})
		}
	})
	report(t, faults, results)
}

func runFault(t *testing.T, f fault, seed int64, recipients, batch, conc, batches int, fig *figures) {
	t.Helper()
	if recipients < f.minRecipients {
		recipients = f.minRecipients
		batches = (recipients + batch - 1) / batch
	}
	cfg := f.cfg
	cfg.Seed = seed
	if f.tune != nil {
		f.tune(&cfg, batches)
	}
	c := testharness.Campaign{Recipients: recipients, BatchSize: batch, Concurrency: conc}
	if f.rate != nil {
		c.Rate = f.rate(batches)
	}
	p := newProjectOn(t, cmp.Or(f.backend, "file"), cfg, c)
	var extra []string
	if f.before != nil {
		extra = f.before(t, p, batches)
	}
	first := p.apply(extra...)
	if !slices.Contains(f.exits, first.code) {
		t.Fatalf("seed %d: apply exit %d, want one of %v: %s", seed, first.code, f.exits, first.stderr)
	}
	tl := p.tally()
	fig.runs++
	fig.recipients = recipients
	fig.exits[first.code]++
	fig.retries += first.summary.Retries
	fig.wall += first.wall
	fig.inDoubt += tl.InDoubtBatches
	fig.duplicates += tl.Duplicates
	fig.unaccounted += tl.Lost
	if first.code == 0 || first.code == 3 {
		fig.unaccounted += tl.Unrecorded
	}
	if tl.Duplicates != 0 || tl.Lost != 0 {
		t.Errorf("seed %d: %d messaged twice, %d records contradict the outbox: %v", seed, tl.Duplicates, tl.Lost, tl.Problems)
	}
	if (first.code == 0 || first.code == 3) && tl.Unrecorded != 0 {
		t.Errorf("seed %d: %d recipients unaccounted after a finished run", seed, tl.Unrecorded)
	}
	if first.code == 0 && tl.Sent != recipients {
		t.Errorf("seed %d: exit 0 but %d of %d sent", seed, tl.Sent, recipients)
	}
	if f.after != nil {
		if note := f.after(t, p, first, batches); note != "" && len(fig.notes) < 1 {
			fig.notes = append(fig.notes, "run 1: "+note)
		}
	}
}

// maxErrors lifts the limits that stop a run on in-doubt batches (errors,
// and requests in a row without an answer), for rows about what the run
// records of each.
func maxErrors(*testing.T, *project, int) []string {
	return []string{"--max-errors", "100000", "--max-silent", "100000"}
}

// perRecipient describes the sandbox's per-recipient answer in the
// campaign's provider block.
func perRecipient(t *testing.T, p *project, _ int) []string {
	t.Helper()
	f, err := os.OpenFile(p.campaign, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("provider:\n  results:\n    list: /messages\n    number: /to\n    status: /status/groupName\n" +
		"    reason: /status/description\n    sent: [PENDING]\n    retry: [THROTTLED]\n    failed: [REJECTED]\n"); err != nil {
		t.Fatal(err)
	}
	return nil
}

// sendsPerBatch counts the send requests of each batch, by its first
// recipient.
func sendsPerBatch(reqs []testharness.Request) map[string]int {
	n := map[string]int{}
	for _, r := range reqs {
		if r.Batch != "" {
			n[r.Batch]++
		}
	}
	return n
}

func checkRetryAfter(t *testing.T, p *project) {
	t.Helper()
	for _, v := range testharness.RetryAfterViolations(p.srv.Requests()) {
		t.Error(v)
	}
}

// checkNothingToSend reruns apply: it must make no send request, and exit
// 0, or 3 while the state records anyone failed or in doubt.
func checkNothingToSend(t *testing.T, p *project) {
	t.Helper()
	want := 0
	if tl := p.tally(); tl.Failed+tl.InDoubt > 0 {
		want = 3
	}
	before := p.srv.Stats().SendRequests
	o := p.apply()
	if o.code != want || p.srv.Stats().SendRequests != before {
		t.Errorf("rerun: exit %d, %d send requests; want %d and none: %s", o.code, p.srv.Stats().SendRequests-before, want, o.stderr)
	}
}

// checkResolve follows the operator: on a copy of the state, in-doubt
// recipients resolved unsent are sent again by the next apply, exactly
// those; on the state itself, resolved sent, the next apply sends nothing.
func checkResolve(t *testing.T, p *project, o outcome, _ int) string {
	t.Helper()
	tl := p.tally()
	doubt := map[string]bool{}
	for _, ph := range inDoubtPhones(t, p) {
		doubt[ph] = true
	}
	if len(doubt) != tl.InDoubt {
		t.Fatalf("%d in doubt, %d listed", tl.InDoubt, len(doubt))
	}
	if len(doubt) == 0 {
		checkNothingToSend(t, p)
		return ""
	}
	// Unsent, on a copy (a file either way: a PostgreSQL state is copied
	// out with state migrate). The copy stands in for the state while it is
	// used: one campaign keeps one ledger, so the state itself is set aside
	// (a file) or left marked moved (PostgreSQL), and taken back after, so
	// that both of the operator's choices are tried on one outcome.
	cp := filepath.Join(p.dir, "copy.smsstate")
	var restore func()
	if p.stateURL != "" {
		p.smsform("state", "migrate", p.campaign, "--from", p.stateURL, "--to", cp)
		restore = func() { clearMoved(t, p.stateURL) }
	} else {
		kept := p.statePath() + ".kept"
		if err := os.Rename(p.statePath(), kept); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(kept)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		restore = func() {
			if err := os.Rename(kept, p.statePath()); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := len(p.srv.Messages())
	p.smsform("state", "resolve", p.campaign, "--state", cp, "--in-doubt", "--as", "unsent")
	// The resend meets the same faults: some of it may be in doubt again,
	// and it must not stop before every one was tried (three drops in a
	// row would make it stop as for a provider gone silent).
	if r := p.apply(append([]string{"--state", cp}, maxErrors(t, p, 0)...)...); r.code != 0 && r.code != 3 {
		t.Fatalf("apply after resolve --as unsent: exit %d: %s", r.code, r.stderr)
	}
	resent := p.srv.Messages()[seen:]
	got := map[string]bool{}
	for _, m := range resent {
		got[m.To] = true
	}
	if len(resent) != len(doubt) || len(got) != len(doubt) {
		t.Errorf("after resolve --as unsent: %d messages to %d recipients, want exactly the %d in doubt", len(resent), len(got), len(doubt))
	}
	for ph := range got {
		if !doubt[ph] {
			t.Errorf("after resolve --as unsent: %s was sent again but was not in doubt", ph)
			break
		}
	}
	// Sent, on the state itself.
	restore()
	p.smsform("state", "resolve", p.campaign, "--in-doubt", "--as", "sent")
	checkNothingToSend(t, p)
	return fmt.Sprintf("resolve: unsent resent %d, sent resent 0", len(resent))
}

// diskFull runs apply with RLIMIT_FSIZE: once the state (or its WAL) would
// grow past the limit, its writes fail as on a full disk.
func diskFull(t *testing.T, p *project, batches int) []string {
	t.Helper()
	// Enough to create the state and record some batches, not all.
	const limit = 96 << 10
	p.env = append(p.env, envFsize+"="+fmt.Sprint(limit), envBin+"="+bin)
	p.exe = os.Args[0]
	return nil
}

// readOnly sends half the campaign, then makes the state file read-only
// (as another user when running as root, since root ignores permissions)
// for the apply under test.
func readOnly(t *testing.T, p *project, batches int) []string {
	t.Helper()
	half := len(p.phones) / 2
	if err := os.WriteFile(filepath.Join(p.dir, "recipients.txt"), []byte(strings.Join(p.phones[:half], "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o := p.apply(); o.code != 0 {
		t.Fatalf("first half: exit %d: %s", o.code, o.stderr)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "recipients.txt"), []byte(strings.Join(p.phones, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.sentBefore = len(p.srv.Messages())
	if os.Getuid() == 0 {
		asNobody(t, p)
	}
	if err := os.Chmod(p.statePath(), 0o444); err != nil {
		t.Fatal(err)
	}
	return nil
}

// asNobody makes the project's files nobody's and runs smsform as nobody.
func asNobody(t *testing.T, p *project) {
	t.Helper()
	const nobody = 65534
	// The folders above the project must let nobody through.
	for d := p.dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	chownAll(t, p.dir, nobody)
	p.cred = &syscall.Credential{Uid: nobody, Gid: nobody}
}

func chownAll(t *testing.T, dir string, id int) {
	t.Helper()
	err := filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, id, id)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// afterStateRefused checks an apply the state stopped: it said why, every
// delivery is recorded, at most the batches in flight are in doubt. Then,
// the state writable again, the campaign is finished.
func afterStateRefused(why []string, sendsHappened bool) func(*testing.T, *project, outcome, int) string {
	return func(t *testing.T, p *project, o outcome, _ int) string {
		t.Helper()
		said := slices.ContainsFunc(why, func(w string) bool { return strings.Contains(strings.ToLower(o.stderr), w) })
		if !said || !strings.Contains(o.stderr, "state") {
			t.Errorf("apply's error does not say why (%q): %s", why, o.stderr)
		}
		tl := p.tally()
		if tl.InDoubtBatches > 4 {
			t.Errorf("%d in-doubt batches after the state refused a write, want at most one per request in flight", tl.InDoubtBatches)
		}
		if !sendsHappened && len(p.srv.Messages()) != p.sentBefore {
			t.Errorf("%d messages sent with a read-only state", len(p.srv.Messages())-p.sentBefore)
		}
		t.Logf("the state refused: %s", o.stderr)
		note := fmt.Sprintf("stopped after %d of %d sent: %s", tl.Sent, len(p.phones), firstLine(o.stderr))
		// Writable again: finish the campaign.
		p.env = withoutVars(p.env, envFsize, envBin)
		if p.cred != nil {
			chownAll(t, p.dir, os.Getuid())
		}
		p.exe, p.cred = "", nil
		if p.stateURL == "" {
			os.Chmod(p.statePath(), 0o600)
		}
		if p.restore != nil {
			p.restore()
		}
		finish(t, p)
		return note
	}
}

// finish completes a campaign an apply left unfinished, as an operator
// would: in-doubt batches resolved from the outbox, apply rerun until done;
// then nobody may have been messaged twice or left out.
func finish(t *testing.T, p *project) {
	t.Helper()
	for range 3 {
		resolveByOutbox(t, p)
		r := p.apply()
		if r.code == 0 {
			break
		}
		if r.code != 3 && r.code != 1 {
			t.Fatalf("apply to finish: exit %d: %s", r.code, r.stderr)
		}
	}
	if tl := p.tally(); tl.Duplicates != 0 || tl.Unaccounted() != 0 || tl.Sent != len(p.phones) {
		t.Errorf("finished: %d messaged twice, %d unaccounted, %d of %d sent: %v", tl.Duplicates, tl.Unaccounted(), tl.Sent, len(p.phones), tl.Problems)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 90 {
		s = s[:90] + "…"
	}
	return s
}

var reportOnce sync.Mutex

func report(t *testing.T, faults []fault, results []figures) {
	reportOnce.Lock()
	defer reportOnce.Unlock()
	var b strings.Builder
	tw := tablewriter.NewWriter(&b)
	tw.Header("fault", "runs", "recipients per run", "duplicates", "unaccounted", "in doubt batches", "retries", "wall per run", "exit codes", "note")
	for i, f := range faults {
		r := results[i]
		if r.runs == 0 {
			continue
		}
		var codes []string
		for _, c := range slices.Sorted(maps.Keys(r.exits)) {
			codes = append(codes, fmt.Sprintf("%d×%d", c, r.exits[c]))
		}
		tw.Append(f.name, fmt.Sprint(r.runs), fmt.Sprint(r.recipients), fmt.Sprint(r.duplicates), fmt.Sprint(r.unaccounted),
			fmt.Sprint(r.inDoubt), fmt.Sprint(r.retries), (r.wall / time.Duration(r.runs)).Round(time.Millisecond).String(),
			strings.Join(codes, " "), strings.Join(r.notes, "; "))
	}
	tw.Render()
	t.Log("fault matrix:\n" + b.String())
	fmt.Print("reliability: fault matrix\n" + b.String())
}

// inDoubtPhones lists the recipients the project's state holds in doubt.
func inDoubtPhones(t *testing.T, p *project) []string {
	t.Helper()
	st, err := state.OpenReadOnly(context.Background(), state.MustParseLocation(p.statePath()), p.name)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []string
	err = st.Recipients(context.Background(), func(r state.Recipient) error {
		if r.Status == state.InDoubt {
			out = append(out, r.Phone)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
