package report

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/plan"
)

// policyCampaigns are the example campaigns of examples/policy.
var policyCampaigns = filepath.Join("..", "..", "examples", "policy", "campaigns")

// planOf plans an example campaign of examples/policy as a first send,
// keeping the plan of one that breaks a rule.
func planOf(t *testing.T, name string) *plan.Plan {
	t.Helper()
	c, err := campaign.Load(filepath.Join(policyCampaigns, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil && !errors.As(err, new(*plan.ComplianceError)) {
		t.Fatal(err)
	}
	return p
}

// TestGoldenCompliance holds a plan held to the us rule set, and one that
// breaks it, to their table, markdown and JSON.
func TestGoldenCompliance(t *testing.T) {
	checkGoldens(t, "compliance", planOf(t, "held"))
	checkGoldens(t, "compliance-fail", planOf(t, "nostop"))
}

// TestPolicySamples writes what smsform plan --json gives for the example
// campaigns of examples/policy into its testdata (with -update), where the
// policy's own test (a module of its own, for OPA) evaluates the example
// policy over them: a change of the JSON that breaks the policy fails here
// first, as a difference to review.
func TestPolicySamples(t *testing.T) {
	for _, name := range []string{"held", "nostop", "plain"} {
		var b bytes.Buffer
		if err := WriteJSON(&b, planOf(t, name), Output{}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "..", "examples", "policy", "testdata", name+".plan.json")
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./internal/report -run TestPolicySamples -update writes it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s is not what plan --json gives: run go test ./internal/report -run 'TestPolicySamples|TestGoldenCompliance' -update and review the diff", path)
		}
	}
}
