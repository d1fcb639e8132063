package ledger

import (
	"testing"
	"time"
)

// BenchmarkCapHoldsRow is what a plan pays for each number of the cap
// index sent to within the cap's window (a project's ledger has hundreds of
// thousands): when the number may be messaged again, from its sends.
func BenchmarkCapHoldsRow(b *testing.B) {
	caps := []Cap{{Max: 1, Per: 24 * time.Hour}}
	now := time.Unix(1_800_000_000, 0)
	es := []send{{1_799_990_000, true}, {1_799_000_000, true}, {1_798_000_000, false}, {1_797_000_000, true}, {1_796_000_000, true}}
	b.ReportAllocs()
	for b.Loop() {
		if !sendableAt(caps, es, now).After(now) {
			b.Fatal("not held")
		}
	}
}

// TestSendableAt: each cap counts the sends of its window (a marketing
// cap only marketing ones), and the number may go when every cap lets it.
func TestSendableAt(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration, marketing bool) send { return send{now.Add(-d).Unix(), marketing} }
	es := []send{ago(time.Hour, false), ago(2*time.Hour, true), ago(3*time.Hour, true), ago(30*time.Hour, true)}
	for _, tc := range []struct {
		caps []Cap
		want time.Time
	}{
		{nil, now},
		{[]Cap{{Max: 4, Per: 24 * time.Hour}}, now},
		{[]Cap{{Max: 3, Per: 24 * time.Hour}}, now.Add(21 * time.Hour)},                  // three in 24 h: the oldest of them leaves it 21 h on
		{[]Cap{{Max: 3, Per: 24 * time.Hour, Marketing: true}}, now},                     // two marketing in 24 h
		{[]Cap{{Max: 2, Per: 24 * time.Hour, Marketing: true}}, now.Add(21 * time.Hour)}, // the older of the two leaves it 21 h on
		{[]Cap{{Max: 9, Per: 24 * time.Hour}, {Max: 1, Per: 2 * time.Hour}}, now.Add(time.Hour)},
	} {
		if got := sendableAt(tc.caps, es, now); !got.Equal(tc.want) {
			t.Errorf("%v: %v, want %v", tc.caps, got, tc.want)
		}
	}
}
