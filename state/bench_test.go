package state

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// fill records n recipients as sent, in batches of 1,000.
func fill(b *testing.B, s *State, n int) {
	b.Helper()
	ctx := context.Background()
	for i := 0; i < n; i += 1000 {
		batch := "fill-" + strconv.Itoa(i)
		must(b, s.RecordIntent(ctx, intent(batch, phones(fmt.Sprintf("9%07d", i), min(1000, n-i))...)))
		must(b, s.RecordOutcome(ctx, batch, Outcome{Status: Sent, HTTPStatus: 200}))
	}
}

// noSync turns fsync off when STATE_BENCH_NOSYNC is set, only to see what
// is not fsync: never in smsform itself.
func noSync(b *testing.B, s *State) {
	if os.Getenv("STATE_BENCH_NOSYNC") != "" {
		_, err := s.w.conn.ExecContext(context.Background(), "PRAGMA synchronous = OFF")
		must(b, err)
	}
}

// BenchmarkRecordBatch is one batch of 100 (intent, then outcome: two
// durable commits) at a state already holding 1,000 or 100,000 recipients.
// The two must cost about the same.
func BenchmarkRecordBatch(b *testing.B) {
	for _, size := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("held=%d", size), func(b *testing.B) {
			ctx := context.Background()
			s := openTest(b, filepath.Join(b.TempDir(), "s"))
			fill(b, s, size)
			noSync(b, s)
			i := 0
			defer reportCPU(b)()
			for b.Loop() {
				batch := "b" + strconv.Itoa(i)
				must(b, s.RecordIntent(ctx, intent(batch, phones(fmt.Sprintf("1%07d", i), 100)...)))
				must(b, s.RecordOutcome(ctx, batch, Outcome{Status: Sent, HTTPStatus: 200, RequestID: "req"}))
				i++
			}
		})
	}
}

// BenchmarkRecordBatchCombined is the same with the outcome of each batch
// and the intent of the next in one commit, as a sequential apply can do.
func BenchmarkRecordBatchCombined(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, filepath.Join(b.TempDir(), "s"))
	fill(b, s, 100_000)
	noSync(b, s)
	must(b, s.RecordIntent(ctx, intent("b0", phones("10000000", 100)...)))
	i := 1
	defer reportCPU(b)()
	for b.Loop() {
		batch := "b" + strconv.Itoa(i)
		must(b, s.RecordOutcomeAndIntent(ctx, "b"+strconv.Itoa(i-1), Outcome{Status: Sent, HTTPStatus: 200},
			intent(batch, phones(fmt.Sprintf("1%07d", i), 100)...)))
		i++
	}
}

// BenchmarkRecordBatchParallel records batches from 8 goroutines, as an
// apply with concurrency 8 does: their commits are grouped.
func BenchmarkRecordBatchParallel(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, filepath.Join(b.TempDir(), "s"))
	fill(b, s, 100_000)
	noSync(b, s)
	var next, goroutine int64
	var mu = make(chan struct{}, 1)
	b.SetParallelism(max(1, 8/runtimeProcs()))
	b.ResetTimer()
	defer reportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		mu <- struct{}{}
		goroutine++
		g := goroutine
		<-mu
		for j := 0; pb.Next(); j++ {
			batch := fmt.Sprintf("g%d-%d", g, j)
			must(b, s.RecordIntent(ctx, intent(batch, phones(fmt.Sprintf("2%02d%05d", g, j), 100)...)))
			must(b, s.RecordOutcome(ctx, batch, Outcome{Status: Sent, HTTPStatus: 200}))
		}
	})
	_ = next
}

// BenchmarkCommit is the cost of one durable commit of a tiny change: what
// every recording step pays at least.
func BenchmarkCommit(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, filepath.Join(b.TempDir(), "s"))
	i := 0
	for b.Loop() {
		must(b, s.MarkPlanApplied(ctx, strconv.Itoa(i)))
		i++
	}
}

// BenchmarkFsync is a bare write+fsync of a file in the same folder, the
// floor under BenchmarkCommit.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "f"))
	must(b, err)
	defer f.Close()
	buf := make([]byte, 4096)
	for b.Loop() {
		_, err := f.Write(buf)
		must(b, err)
		must(b, f.Sync())
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// reportCPU reports the process's CPU time (user and system, every
// goroutine, SQLite's writes and fsyncs included) per op, from now until
// the returned function is called after the loop.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecipients reads back a state of 1,000,000 sent recipients (in
// batches of 1,000, to build it fast), as plan does when resuming a
// campaign, and opens it as apply does.
func BenchmarkRecipients(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "s")
	s := openTest(b, path)
	// In random order, as a campaign's lists are: sorting sorted input
	// would flatter Recipients.
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	for i := 0; i < n; i += 1000 {
		batch := "big-" + strconv.Itoa(i)
		ps := make([]string, 1000)
		for j := range ps {
			ps[j] = fmt.Sprintf("+1%09d", perm[i+j])
		}
		must(b, s.RecordIntent(ctx, intent(batch, ps...)))
		must(b, s.RecordOutcome(ctx, batch, Outcome{Status: Sent, HTTPStatus: 200}))
	}
	must(b, s.Close())
	// What apply pays at start: reading every status for intent checks.
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			s, err := Open(ctx, MustParseLocation(path), Options{Campaign: "spring"})
			must(b, err)
			must(b, s.Close())
		}
	})
	r, err := OpenReadOnly(context.Background(), MustParseLocation(path), "")
	must(b, err)
	defer r.Close()
	for _, m := range []struct {
		name string
		fn   func(context.Context, func(Recipient) error) error
	}{
		{"ordered", r.Recipients},
		{"unordered", r.EachRecipient},
	} {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				got := 0
				must(b, m.fn(ctx, func(Recipient) error { got++; return nil }))
				if got != n {
					b.Fatalf("%d recipients, want %d", got, n)
				}
			}
		})
	}
	b.Run("counts", func(b *testing.B) {
		for b.Loop() {
			c, err := r.Counts(ctx)
			must(b, err)
			if c[Sent] != n {
				b.Fatalf("counts %v", c)
			}
		}
	})
}
