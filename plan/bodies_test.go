package plan

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
)

// spillAll makes every spool of the test move to a temporary file at once.
func spillAll(t *testing.T) {
	old := spillAfter
	spillAfter = 0
	t.Cleanup(func() { spillAfter = old })
}

// TestSpoolReadsBack writes texts past the spill point and reads them back
// in order, backwards and by jumps, as the plan's outputs do; in memory,
// texts cross from one piece to the next.
func TestSpoolReadsBack(t *testing.T) {
	old := pieceSize
	pieceSize = 1000
	t.Cleanup(func() { pieceSize = old })
	for _, spill := range []bool{false, true} {
		t.Run(fmt.Sprintf("spilled=%v", spill), func(t *testing.T) {
			if spill {
				spillAll(t)
			}
			var s spool
			var want []string
			for i := range 3*markEvery + 17 {
				text := strings.Repeat("é", i%300) + fmt.Sprint(i) // lengths past one uvarint byte
				want = append(want, text)
				if err := s.write(text); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.flush(); err != nil {
				t.Fatal(err)
			}
			if (s.file != nil) != spill {
				t.Fatalf("spilled to a file: %v, want %v", s.file != nil, spill)
			}
			r := s.reader()
			order := []int{0, 1, 2, 2, 700, 5, len(want) - 1, markEvery, markEvery - 1, 3 * markEvery, 0}
			for i := range want {
				order = append(order, i)
			}
			for _, i := range order {
				got, err := r.at(i)
				if err != nil {
					t.Fatalf("text %d: %v", i, err)
				}
				if got != want[i] {
					t.Fatalf("text %d: got %.20q…, want %.20q…", i, got, want[i])
				}
			}
		})
	}
}

// TestComputeSpilled plans a personalised campaign with its bodies in
// memory and in a temporary file: the plans are the same.
func TestComputeSpilled(t *testing.T) {
	g, err := testharness.Generate(t.TempDir(), testharness.Spec{Name: "spill", Recipients: 3000, Personalised: true, BatchSize: 7, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	c, err := campaign.Load(g.Campaign)
	if err != nil {
		t.Fatal(err)
	}
	inMemory, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	spillAll(t)
	spilled, err := Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if spilled.cut.bodies.spool.file == nil {
		t.Fatal("bodies were not spilled")
	}
	if a, b := inMemory.AllBatches(), spilled.AllBatches(); !reflect.DeepEqual(a, b) || len(a) < 100 {
		t.Fatalf("%d batches in memory, %d spilled, or they differ", len(a), len(b))
	}
	if !reflect.DeepEqual(inMemory.Samples, spilled.Samples) || len(spilled.Samples) == 0 {
		t.Fatalf("samples differ: %+v\n%+v", inMemory.Samples, spilled.Samples)
	}
	last, err := spilled.Batch(spilled.NumBatches() - 1)
	if err != nil || !reflect.DeepEqual(last, inMemory.AllBatches()[inMemory.NumBatches()-1]) {
		t.Fatalf("last batch: %+v, %v", last, err)
	}

	// A file that lost its end is an error, never a short body.
	if err := spilled.cut.bodies.spool.file.Truncate(spilled.cut.bodies.spool.size / 2); err != nil {
		t.Fatal(err)
	}
	err = spilled.EachBatch(func(int, Batch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "reading rendered bodies back: unexpected EOF") {
		t.Fatalf("walk of a truncated spool: %v", err)
	}
}

// TestComputeSpillRefused: a plan whose bodies cannot go to a temporary
// file fails, saying where it tried and what to do.
func TestComputeSpillRefused(t *testing.T) {
	spillAll(t)
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	c := testharness.LoadCampaign(t, "version: 1\nname: t\nsender: ACME\nrecipients:\n  - file: l.csv\nbody: hi {{ .name }}\n",
		map[string]string{"l.csv": "phone,name\n+447400123401,Ann\n"})
	_, err := Compute(context.Background(), c, nil)
	var spill *SpillError
	if !errors.As(err, &spill) || !strings.Contains(err.Error(), "missing") || !strings.Contains(spill.Hint(), "set TMPDIR to a writable folder") {
		t.Fatalf("err = %v", err)
	}
}
