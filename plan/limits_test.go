package plan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
)

// TestProviderLimits: batches never carry more recipients than the provider
// takes, and a body longer than it takes fails the plan, naming the rows.
func TestProviderLimits(t *testing.T) {
	list := "phone,name\n+447400123451,Al\n+447400123452,Bea\n+447400123453,Christopherson\n+447400123454,Di\n+447400123455,Maximilianus\n"
	tests := []struct {
		name      string
		yaml      string
		batchSize int
		batches   int
		warn      string
		err       []string // in the error, in order
		noErr     []string // not in the error
	}{
		{name: "cut to max_recipients", yaml: "batch_size: 4\nprovider:\n  max_recipients: 2\nbody: hi\n",
			batchSize: 2, batches: 3, warn: "batches of 2 recipients, not batch_size's 4: provider.max_recipients is 2"},
		{name: "batch_size smaller", yaml: "batch_size: 2\nprovider:\n  max_recipients: 3\nbody: hi\n", batchSize: 2, batches: 3},
		{name: "equal", yaml: "batch_size: 5\nprovider:\n  max_recipients: 5\nbody: hi\n", batchSize: 5, batches: 1},
		{name: "bodies within", yaml: "provider:\n  max_body_length: 19\nbody: \"Hi {{ .name }}!!\"\n", batchSize: 100, batches: 5}, // "Hi Christopherson!!" is 19
		{name: "bodies over", yaml: "provider:\n  max_body_length: 16\nbody: \"Hi {{ .name }}!!\"\n",
			err:   []string{"l.csv:4: body: the message is 19 characters long, more than provider.max_body_length (16)", "l.csv:6: body: the message is 17 characters long"},
			noErr: []string{"l.csv:2:", "l.csv:3:", "l.csv:5:"}},
		{name: "shared body over", yaml: "provider:\n  max_body_length: 4\nbody: hello\n",
			err: []string{"c.yaml:8: body: the message is 5 characters long, more than provider.max_body_length (4)"}},
		{name: "characters, not bytes", yaml: "provider:\n  max_body_length: 5\nbody: héllo\n", batchSize: 100, batches: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.csv\n"+tt.yaml, map[string]string{"l.csv": list})
			p, err := Compute(context.Background(), c, nil)
			if tt.err != nil {
				var ce *campaign.Error
				if err == nil || !errors.As(err, &ce) || ce.Hint == "" {
					t.Fatalf("err = %v, want a campaign error with a hint", err)
				}
				msg, at := err.Error(), 0
				for _, want := range tt.err {
					i := strings.Index(msg[at:], want)
					if i < 0 {
						t.Fatalf("err = %q\nwant %q after position %d", msg, want, at)
					}
					at += i
				}
				for _, bad := range tt.noErr {
					if strings.Contains(msg, bad) {
						t.Errorf("err = %q names %q", msg, bad)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.BatchSize != tt.batchSize || p.Summary.Batches != tt.batches {
				t.Errorf("batch size %d, %d batches; want %d, %d", p.BatchSize, p.Summary.Batches, tt.batchSize, tt.batches)
			}
			if err := p.EachBatch(func(_ int, b Batch) error {
				if len(b.Recipients) > tt.batchSize {
					t.Errorf("batch %s carries %d recipients", b.ID, len(b.Recipients))
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			warned := false
			for _, w := range p.Warnings {
				warned = warned || (tt.warn != "" && w == tt.warn) || strings.Contains(w, "max_recipients")
			}
			if warned != (tt.warn != "") {
				t.Errorf("warnings %q, want %q", p.Warnings, tt.warn)
			}
		})
	}
}
