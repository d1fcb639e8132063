package apply_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smsform/smsform/api"
	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// TestRunNamesNobody: a provider mapped as docs/providers.md maps Plivo
// (the refused numbers under an optional invalid_number, the rest sent)
// answers 202 with a refusal that names none of the batch's numbers. Nobody
// is recorded sent (the refusal may be about any of them), the run says so,
// and a rerun sends nothing.
func TestRunNamesNobody(t *testing.T) {
	for _, tt := range []struct {
		name, body string
	}{
		{"a number with words in it", `{"api_id":"a1","invalid_number":["447400123564 (invalid)"]}`},
		{"no number", `{"api_id":"a1","invalid_number":[null]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var sends atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				sends.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusAccepted)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			dir := t.TempDir()
			path, phones := testharness.WriteCampaign(t, dir, testharness.Campaign{Recipients: 3, BatchSize: 3})
			camp, err := campaign.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			st, err := state.Open(context.Background(), state.MustParseLocation(filepath.Join(dir, "c.smsstate")), state.Options{Campaign: camp.Name})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			results := &mapping.Results{Others: mapping.Sent, Lists: []mapping.List{{List: rawjson.MustPointer("/invalid_number"), Number: rawjson.Pointer{},
				Outcome: mapping.Failed, Optional: true}}}
			sender := &api.Authenticated{Static: "tok", Client: &api.Client{BaseURL: srv.URL, Results: results, Timeout: 5 * time.Second}}
			p, err := plan.Compute(context.Background(), camp, st)
			if err != nil {
				t.Fatal(err)
			}
			_, err = apply.Run(context.Background(), p, st, sender, apply.Options{From: camp.Sender, Results: results})
			var inc *apply.IncompleteError
			if !errors.As(err, &inc) || inc.InDoubt != 3 {
				t.Errorf("run: %v; want 3 recipients in doubt", err)
			}
			got := map[string]state.Status{}
			if err := st.Recipients(context.Background(), func(r state.Recipient) error {
				got[r.Phone] = r.Status
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, ph := range phones {
				if got[ph] != state.InDoubt {
					t.Errorf("%s recorded %v, want in doubt", ph, got[ph])
				}
			}
			p, err = plan.Compute(context.Background(), camp, st)
			if err != nil {
				t.Fatal(err)
			}
			if p.Summary.ToSend != 0 || sends.Load() != 1 {
				t.Errorf("a rerun plans %d recipients; %d sends, want 1", p.Summary.ToSend, sends.Load())
			}
		})
	}
}
