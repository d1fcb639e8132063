package plan

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/ledger"
	"github.com/smsform/smsform/state"
)

// A plan of a project's state subtracts the opt-outs as of a number of
// their log (the campaign's own records first), and counts, without
// taking them out of the batches, the recipients the cap holds back at the
// moment given.
func TestComputeLedger(t *testing.T) {
	ctx := context.Background()
	c := testharness.LoadCampaign(t, header+"recipients:\n  - numbers: [\"+447400123401\", \"+447400123402\", \"+447400123403\", \"+447400123404\", \"+447400123405\", \"+447400123406\"]\nbody: \"Hi\"\n",
		map[string]string{"smsform.yaml": "version: 1\nstate: st/\nfrequency_cap: {max: 1, per: 24h}\n", "st/.keep": ""})
	loc := filepath.Join(c.Project.Dir, "st", "smsform.smsstate")
	t0 := time.Date(2026, 11, 25, 9, 12, 0, 0, time.UTC)
	clock := func() time.Time { return t0 }

	// Campaign t sent +…401, which opted out later: already sent, not
	// opted out. Another campaign sent +…404 and +…405: the cap holds them.
	own := openProject(t, loc, "t", clock)
	send(t, own, "t1", "+447400123401")
	must(t, own.Close())
	other := openProject(t, loc, "other", clock)
	send(t, other, "o1", "+447400123404", "+447400123405")
	must(t, other.Close())
	first, err := ledger.ChangeOptOuts(ctx, state.MustParseLocation(loc), []ledger.OptOutChange{{Phone: "+447400123401", At: t0}, {Phone: "+447400123402", At: t0}})
	must(t, err)
	latest, err := ledger.ChangeOptOuts(ctx, state.MustParseLocation(loc), []ledger.OptOutChange{{Phone: "+447400123403", At: t0}})
	must(t, err)

	ro, err := state.OpenSharedReadOnly(ctx, state.MustParseLocation(loc), "t")
	must(t, err)
	defer ro.Close()
	p, err := ComputeWith(ctx, c, ro, Options{Now: t0.Add(time.Hour), Ledger: ledger.ViewOf(ro)})
	must(t, err)
	want := Summary{Recipients: 6, ToSend: 3, AlreadySent: 1, OptedOut: 2, Batches: 1, Segments: 3, HeldByCap: 2, HeldByCapUntil: t0.Add(24 * time.Hour)}
	if p.Summary != want {
		t.Errorf("summary = %+v\nwant      %+v", p.Summary, want)
	}
	if got := p.AllBatches()[0].Recipients; !slices.Equal(got, []string{"+447400123404", "+447400123405", "+447400123406"}) {
		t.Errorf("batch: %v", got)
	}
	if p.State.OptOutSeq != latest {
		t.Errorf("stamp's opt-out seq %d, want %d", p.State.OptOutSeq, latest)
	}

	// As of the log's first change (a saved plan made again), a day later:
	// +…403 is planned, and nobody is held back.
	p, err = ComputeWith(ctx, c, ro, Options{OptOutsAsOf: &first, Now: t0.Add(24*time.Hour + time.Minute), Ledger: ledger.ViewOf(ro)})
	must(t, err)
	if s := p.Summary; s.OptedOut != 1 || s.ToSend != 4 || s.HeldByCap != 0 || !s.HeldByCapUntil.IsZero() || p.State.OptOutSeq != first {
		t.Errorf("as of %d: %+v, seq %d", first, s, p.State.OptOutSeq)
	}
	// As of before the first (a plan saved before any opt-out): none.
	var none int64
	p, err = ComputeWith(ctx, c, ro, Options{OptOutsAsOf: &none, Now: t0, Ledger: ledger.ViewOf(ro)})
	must(t, err)
	if s := p.Summary; s.OptedOut != 0 || s.ToSend != 5 || p.State.OptOutSeq != 0 {
		t.Errorf("as of none: %+v, seq %d", s, p.State.OptOutSeq)
	}
}

// A campaign's own cap, at least as strict, wins over its project's.
func TestCapsOf(t *testing.T) {
	project := map[string]string{"smsform.yaml": "version: 1\nstate: st/\nfrequency_cap: {max: 3, per: 24h}\n"}
	body := "recipients:\n  - numbers: [\"+447400123401\"]\nbody: \"Hi\"\n"
	for _, tc := range []struct {
		name  string
		yaml  string
		files map[string]string
		want  *ledger.Cap
	}{
		{"no project", header + body, nil, nil},
		{"project's", header + body, project, &ledger.Cap{Max: 3, Per: 24 * time.Hour}},
		{"campaign's", header + "frequency_cap: {max: 1, per: 48h}\n" + body, project, &ledger.Cap{Max: 1, Per: 48 * time.Hour}},
		{"transactional, the project's", header + "kind: transactional\n" + body, project, nil},
		{"transactional, its own", header + "kind: transactional\nfrequency_cap: {max: 1, per: 48h}\n" + body, project, &ledger.Cap{Max: 1, Per: 48 * time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CapsOf(testharness.LoadCampaign(t, tc.yaml, tc.files))
			marketing := !strings.Contains(tc.yaml, "transactional")
			if tc.want == nil && len(got.All) != 0 || tc.want != nil && (len(got.All) != 1 || got.All[0] != *tc.want) || got.Marketing != marketing {
				t.Errorf("CapsOf = %+v, want %+v, marketing", got, tc.want)
			}
		})
	}
}

func openProject(t *testing.T, loc, name string, now func() time.Time) *state.State {
	t.Helper()
	s, err := state.Open(context.Background(), state.MustParseLocation(loc), state.Options{Campaign: name, Shared: true,
		Gate: ledger.NewGate(&ledger.Caps{All: []ledger.Cap{{Max: 1, Per: 24 * time.Hour}}}), Now: now})

	must(t, err)
	return s
}

// send records a batch to phones as sent.
func send(t *testing.T, s *state.State, batch string, phones ...string) {
	t.Helper()
	ctx := context.Background()
	adm, err := s.AdmitIntent(ctx, state.Intent{BatchID: batch, Phones: phones, BodyHash: state.BodyHash("Hi")})
	must(t, err)
	if len(adm.Send) != len(phones) {
		t.Fatalf("admitted %v of %v", adm.Send, phones)
	}
	must(t, s.RecordOutcome(ctx, batch, state.Outcome{Status: state.Sent, HTTPStatus: 200}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
