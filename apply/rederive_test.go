package apply_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/plan"
)

func batch(body string, phones ...string) plan.Batch {
	return plan.Batch{ID: plan.BatchID(body, phones), Body: body, Encoding: "GSM-7", Segments: 1, Recipients: phones}
}

// walk is a plan's EachBatch over bs that counts the batches it made.
func walk(bs []plan.Batch, made *int) func(func(int, plan.Batch) error) error {
	return func(fn func(int, plan.Batch) error) error {
		for i, b := range bs {
			*made++
			if err := fn(i, b); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestCompareBatches: two ordered streams, compared a batch at a time; the
// first difference of any field, or of length, is named with its place
// and the saved batch's id, numbers masked.
func TestCompareBatches(t *testing.T) {
	genuine := []plan.Batch{
		batch("Hi", "+447400123459", "+447400123564"),
		batch("Hi", "+447400123565"),
		batch("Hola", "+34612345678"),
	}
	edited := func(i int, edit func(*plan.Batch)) []plan.Batch {
		bs := append([]plan.Batch{}, genuine...)
		b := bs[i]
		b.Recipients = append([]string{}, b.Recipients...)
		edit(&b)
		b.ID = plan.BatchID(b.Body, b.Recipients) // ids are recomputed by whoever edits
		bs[i] = b
		return bs
	}
	tests := []struct {
		name   string
		saved  []plan.Batch
		batch  int    // 0: no difference
		want   string // in the error
		forbid string // never in the error
	}{
		{name: "the same", saved: genuine},
		{name: "saved empty", saved: nil},
		{name: "a body", saved: edited(1, func(b *plan.Batch) { b.Body = "URGENT: verify at http://evil.example" }), batch: 2,
			want: "its body is not the one the campaign renders (37 characters in the plan, 2 rendered)"},
		{name: "a recipient", saved: edited(0, func(b *plan.Batch) { b.Recipients[1] = "+447400123999" }), batch: 1,
			want: "its recipient 2 is +44 74•• •••999; the campaign has +44 74•• •••564 there", forbid: "447400123999"},
		{name: "not a number", saved: edited(0, func(b *plan.Batch) { b.Recipients[0] = "not-a-number" }), batch: 1,
			want: "its recipient 1 is"},
		{name: "a recipient added", saved: edited(1, func(b *plan.Batch) { b.Recipients = append(b.Recipients, "+447400123777") }), batch: 2,
			want: "it has 2 recipients, the campaign 1 here: +44 74•• •••777 is not the campaign's"},
		{name: "a recipient dropped", saved: edited(0, func(b *plan.Batch) { b.Recipients = b.Recipients[:1] }), batch: 1,
			want: "it has 1 recipients, the campaign 2 here: +44 74•• •••564 is missing"},
		{name: "the order", saved: []plan.Batch{genuine[1], genuine[0], genuine[2]}, batch: 1, want: "its body|its recipient 1"},
		{name: "the encoding", saved: edited(2, func(b *plan.Batch) { b.Encoding = "UCS-2" }), batch: 3, want: "it says UCS-2 in 1 segment(s); the body is GSM-7 in 1"},
		{name: "the zones", saved: edited(2, func(b *plan.Batch) { b.Zones = []string{"Europe/Madrid"} }), batch: 3, want: "its time zones are Europe/Madrid; the recipients' are none"},
		{name: "an id", saved: func() []plan.Batch {
			bs := append([]plan.Batch{}, genuine...)
			bs[2].ID = "b-0000000000000000"
			return bs
		}(), batch: 3, want: "its id is b-0000000000000000; the campaign makes b-"},
		{name: "a batch more", saved: append(append([]plan.Batch{}, genuine...), batch("Hi", "+447400123777")), batch: 4,
			want: "the campaign makes no batch here: the saved plan has more"},
		{name: "a batch less", saved: genuine[:2], batch: 3, want: "the campaign makes a batch here (b-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var savedMade, derivedMade int
			err := apply.CompareBatches(walk(tt.saved, &savedMade), walk(genuine, &derivedMade))
			if savedMade != len(tt.saved) {
				t.Errorf("%d of the %d saved batches walked: a saved plan is read to its end", savedMade, len(tt.saved))
			}
			if tt.batch == 0 && tt.saved == nil {
				var diff *apply.DiffError
				if !errors.As(err, &diff) || diff.Batch != 1 {
					t.Fatalf("an empty plan against three batches: %v", err)
				}
				return
			}
			if tt.batch == 0 {
				if err != nil {
					t.Fatalf("the same batches: %v", err)
				}
				return
			}
			var diff *apply.DiffError
			if !errors.As(err, &diff) || !errors.Is(err, apply.ErrPlanDiffers) {
				t.Fatalf("err = %v, want a *DiffError", err)
			}
			if diff.Batch != tt.batch {
				t.Errorf("batch %d named, want %d: %v", diff.Batch, tt.batch, err)
			}
			if tt.batch <= len(tt.saved) && !strings.Contains(err.Error(), tt.saved[tt.batch-1].ID) {
				t.Errorf("the saved batch's id is not named: %v", err)
			}
			if !matchAny(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to say %q", err, tt.want)
			}
			if tt.forbid != "" && strings.Contains(err.Error(), tt.forbid) {
				t.Errorf("err = %q shows %s whole", err, tt.forbid)
			}
		})
	}
}

// TestCompareBatchesStreams: neither plan is loaded whole. The derived
// batches are made a little ahead of the comparison, and no further once
// it has found a difference.
func TestCompareBatchesStreams(t *testing.T) {
	var genuine []plan.Batch
	for i := range 20_000 {
		genuine = append(genuine, batch(fmt.Sprintf("Hi %d", i), "+447400123459"))
	}
	saved := append([]plan.Batch{}, genuine...)
	saved[1] = batch("edited", "+447400123459")
	var savedMade, derivedMade int
	err := apply.CompareBatches(walk(saved, &savedMade), walk(genuine, &derivedMade))
	var diff *apply.DiffError
	if !errors.As(err, &diff) || diff.Batch != 2 {
		t.Fatalf("err = %v, want batch 2 named", err)
	}
	if derivedMade > 1000 {
		t.Errorf("%d derived batches made for a difference at batch 2", derivedMade)
	}
}

func matchAny(s, alternatives string) bool {
	for _, a := range strings.Split(alternatives, "|") {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
}

// TestCompareBatchesErrors: an error of either walk is returned as it is,
// not taken for a difference.
func TestCompareBatchesErrors(t *testing.T) {
	bs := []plan.Batch{batch("Hi", "+447400123459"), batch("Hi", "+447400123564")}
	broken := errors.New("the spool could not be read")
	failing := func(fn func(int, plan.Batch) error) error {
		if err := fn(0, bs[0]); err != nil {
			return err
		}
		return broken
	}
	var n int
	if err := apply.CompareBatches(failing, walk(bs, &n)); !errors.Is(err, broken) || errors.Is(err, apply.ErrPlanDiffers) {
		t.Errorf("saved walk failing: %v", err)
	}
	n = 0
	if err := apply.CompareBatches(walk(bs, &n), failing); !errors.Is(err, broken) || errors.Is(err, apply.ErrPlanDiffers) {
		t.Errorf("derived walk failing: %v", err)
	}
}
