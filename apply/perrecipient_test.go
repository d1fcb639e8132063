package apply_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/apply"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/sandbox"
)

// sandboxResults is provider.results for the sandbox's per-recipient answer.
func sandboxResults() *mapping.Results {
	status, reason := rawjson.MustPointer("/status/groupName"), rawjson.MustPointer("/status/description")
	return &mapping.Results{Others: mapping.InDoubt, Lists: []mapping.List{{List: rawjson.MustPointer("/messages"), Number: rawjson.MustPointer("/to"),
		Status: &status, Reason: &reason, Sent: []mapping.Value{mapping.StringValue(sandbox.ResultPending)},
		Retry: []mapping.Value{mapping.StringValue(sandbox.ResultThrottled)}, Failed: []mapping.Value{mapping.StringValue(sandbox.ResultRejected)}}}}
}

// TestRunPerRecipient: against a provider that answers recipient by
// recipient, what the state records is what the provider did: sent only
// what it delivered, failed what it refused (with its words), and throttled
// recipients sent again until delivered; a 413 halves requests down to the
// provider's cap, and MaxRecipients keeps requests under it from the start.
func TestRunPerRecipient(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cfg   sandbox.Config
		camp  testharness.Campaign
		opts  apply.Options
		check func(t *testing.T, r *rig, res *apply.Result, events []apply.Event, err error)
	}{
		{
			name: "rejected and throttled inside a 200",
			cfg:  sandbox.Config{SuccessBody: "results", RejectRate: 0.1, ThrottleRate: 0.2, Seed: 3},
			camp: testharness.Campaign{Recipients: 200, BatchSize: 20, Concurrency: 2},
			check: func(t *testing.T, r *rig, res *apply.Result, events []apply.Event, err error) {
				st, tl := r.srv.Stats(), r.tally(t)
				if !errors.As(err, new(*apply.IncompleteError)) || tl.Sent != st.Messages || tl.Failed != st.Rejected || tl.InDoubt != 0 || tl.Unrecorded != 0 {
					t.Errorf("%v: state %+v; the provider delivered %d and refused %d", err, tl, st.Messages, st.Rejected)
				}
				if st.Throttled == 0 || res.Retried < st.Throttled || res.Sent != tl.Sent || res.Failed != tl.Failed {
					t.Errorf("result %+v, provider %+v: want every throttled recipient retried", res, st)
				}
				var failed bool
				for _, e := range events {
					if e.Type == "batch_failed" && e.Failed > 0 && e.Sent+e.Failed+e.InDoubt == e.Recipients {
						failed = true
						if !strings.Contains(e.Reason, "Destination refused by the network") {
							t.Errorf("reason %q lacks the provider's words", e.Reason)
						}
					}
				}
				if !failed {
					t.Error("no batch event with per-recipient counts")
				}
				r.rerunSendsNothing(t)
			},
		},
		{
			name: "413 halves requests down to the cap, once said",
			cfg:  sandbox.Config{MaxRecipients: 6},
			camp: testharness.Campaign{Recipients: 100, BatchSize: 20},
			check: func(t *testing.T, r *rig, res *apply.Result, events []apply.Event, err error) {
				st, tl := r.srv.Stats(), r.tally(t)
				if err != nil || tl.Sent != 100 || st.Messages != 100 {
					t.Errorf("%v: %+v", err, tl)
				}
				// 20 → 10 → 5: two 413s, then every request of 5 at most.
				if st.Status[413] != 2 {
					t.Errorf("%d answers 413, want 2: what a 413 teaches is kept", st.Status[413])
				}
				warnings := 0
				for _, e := range events {
					if e.Type == "warning" && strings.Contains(e.Reason, "provider.max_recipients") {
						warnings++
					}
				}
				if warnings != 1 {
					t.Errorf("%d warnings, want 1", warnings)
				}
			},
		},
		{
			name: "MaxRecipients cuts batches before the provider must say so",
			cfg:  sandbox.Config{MaxRecipients: 6},
			camp: testharness.Campaign{Recipients: 100, BatchSize: 20},
			opts: apply.Options{MaxRecipients: 6},
			check: func(t *testing.T, r *rig, res *apply.Result, events []apply.Event, err error) {
				st, tl := r.srv.Stats(), r.tally(t)
				if err != nil || tl.Sent != 100 || st.Status[413] != 0 || st.SendRequests != 20 {
					t.Errorf("%v: %+v, %d requests, %d answered 413; want 100 sent in 20 requests", err, tl, st.SendRequests, st.Status[413])
				}
			},
		},
		{
			name: "MaxSilent",
			cfg:  sandbox.Config{Latency: 300 * time.Millisecond},
			camp: testharness.Campaign{Recipients: 100, BatchSize: 10},
			opts: apply.Options{MaxSilent: 2, MaxErrors: 100},
			check: func(t *testing.T, r *rig, res *apply.Result, events []apply.Event, err error) {
				var silent *apply.SilentError
				if !errors.As(err, &silent) || len(silent.Batches) != 2 || r.srv.Stats().SendRequests != 2 {
					t.Errorf("%v after %d requests, want a SilentError after 2", err, r.srv.Stats().SendRequests)
				}
				if tl := r.tally(t); tl.InDoubt != 20 || tl.Unrecorded != 80 || res.Skipped != 80 {
					t.Errorf("%+v, %+v", tl, res)
				}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			timeout := time.Duration(0)
			if tt.cfg.Latency > 0 {
				timeout = 50 * time.Millisecond
			}
			r := newRig(t, tt.cfg, tt.camp, timeout)
			if tt.cfg.Latency > 0 {
				issueSlowly(t, r)
			}
			if tt.cfg.SuccessBody == "results" {
				tt.opts.Results = sandboxResults()
				r.auth.Client.Results = tt.opts.Results
			}
			var events []apply.Event
			tt.opts.Events = func(e apply.Event) { events = append(events, e) }
			res, err := r.apply(t, context.Background(), tt.opts)
			if res.Sent+res.Failed+res.InDoubt+res.Skipped != res.Total {
				t.Errorf("result does not add up: %+v", res)
			}
			tt.check(t, r, res, events, err)
		})
	}
}
