package plan

import (
	"github.com/smsform/smsform/internal/e164"

	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/state"
)

// benchCampaign generates a campaign of n recipients (1% invalid, 1%
// duplicates, 14 countries) and loads it.
func benchCampaign(b *testing.B, n int, personalised bool) *campaign.Campaign {
	b.Helper()
	g, err := testharness.Generate(b.TempDir(), testharness.Spec{Name: "bench", Recipients: n, Personalised: personalised, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	c, err := campaign.Load(g.Campaign)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkCompute plans 100,000 recipients from a CSV list, with a body of
// their own each (personalised) or one body for all (shared).
func BenchmarkCompute(b *testing.B) {
	for _, tc := range []struct {
		name         string
		personalised bool
	}{{"personalised", true}, {"shared", false}} {
		b.Run(tc.name, func(b *testing.B) {
			c := benchCampaign(b, 100_000, tc.personalised)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compute(context.Background(), c, nil); err != nil {
					b.Fatal(err)
				}
			}
			reportPerRecipient(b, 100_000)
		})
	}
}

// BenchmarkComputeResume plans 100,000 recipients that the state (here in
// memory, so that only the plan's own cost is measured) records as sent.
func BenchmarkComputeResume(b *testing.B) {
	for _, tc := range []struct {
		name         string
		personalised bool
	}{{"personalised", true}, {"shared", false}} {
		b.Run(tc.name, func(b *testing.B) {
			c := benchCampaign(b, 100_000, tc.personalised)
			p, err := Compute(context.Background(), c, nil)
			if err != nil {
				b.Fatal(err)
			}
			var rec testharness.Recorded
			for _, batch := range p.AllBatches() {
				for _, phone := range batch.Recipients {
					rec = append(rec, state.Recipient{Phone: phone, Status: state.Sent, BatchID: batch.ID, BodyHash: state.BodyHash(batch.Body)})
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				p, err := Compute(context.Background(), c, rec)
				if err != nil {
					b.Fatal(err)
				}
				if p.Summary.ToSend != 0 || p.BodyChanged != 0 {
					b.Fatalf("resume plans %d, %d bodies changed", p.Summary.ToSend, p.BodyChanged)
				}
			}
			reportPerRecipient(b, 100_000)
		})
	}
}

func reportPerRecipient(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/recipient")
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapSys)/(1<<20), "heap-sys-MB")
}

// BenchmarkCut cuts 100,000 recipients with a body each into batches and
// makes each batch once, as writing the plan does.
func BenchmarkCut(b *testing.B) {
	var g groups
	bodies := &bodyStore{}
	for i := range 100_000 {
		phone := "+" + strconv.Itoa(447400000000+i)
		k, _ := e164.Pack(phone)
		g.phones.append(k)
		body := "Hi Ada, your code is " + phone[7:]
		id, err := bodies.add(body, sumBody(body), metaOf(body))
		if err != nil {
			b.Fatal(err)
		}
		g.bodies = append(g.bodies, id)
		g.ends = append(g.ends, int32(i+1))
	}
	if err := bodies.done(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		t := newBatchTable(&g, bodies, 100)
		if err := t.each(func(int, Batch) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComputeScale plans a personalised campaign at each size listed
// in $PLAN_SCALE (e.g. "1000000,4000000"), to see whether time and memory
// per recipient stay flat as campaigns grow (issue: ten million). Skipped
// when unset: each size takes seconds and up to gigabytes.
func BenchmarkComputeScale(b *testing.B) {
	sizes := os.Getenv("PLAN_SCALE")
	if sizes == "" {
		b.Skip("set PLAN_SCALE=1000000,4000000 to run")
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			b.Fatalf("PLAN_SCALE: %q is not a size", s)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			c := benchCampaign(b, n, true)
			runtime.GC()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compute(context.Background(), c, nil); err != nil {
					b.Fatal(err)
				}
			}
			reportPerRecipient(b, n)
		})
	}
}
