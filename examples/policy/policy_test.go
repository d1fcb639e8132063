// Package policy holds an example OPA/conftest policy over smsform plan
// --json (smsform.rego) and checks it: OPA evaluates it over the JSON that
// plan gives for the example campaigns (testdata, kept in step with plan by
// smsform's own tests). OPA is a test tool here, not a dependency of
// smsform, so this is a module of its own.
package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
)

// eval returns the messages of rule (deny or warn) of the policy over the
// plan JSON in file, sorted.
func eval(t *testing.T, rule, file string) []string {
	t.Helper()
	policy, err := os.ReadFile("smsform.rego")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var input any
	if err := json.Unmarshal(data, &input); err != nil {
		t.Fatal(err)
	}
	rs, err := rego.New(rego.Query("data.main."+rule), rego.Module("smsform.rego", string(policy)), rego.Input(input)).Eval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, r := range rs {
		for _, e := range r.Expressions {
			for _, m := range e.Value.([]any) {
				msgs = append(msgs, m.(string))
			}
		}
	}
	slices.Sort(msgs)
	return msgs
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		file string
		deny []string // each a part of one message, in order
		warn []string
	}{
		// Held to us, every rule passing: nothing denied; the law's hours
		// hold 3 of 4 recipients, which the team wants to be told.
		{file: "held.plan.json", warn: []string{"us-tcpa-hours holds 3 of 4 recipients to mon-sun 08:00-21:00"}},
		{file: "nostop.plan.json", deny: []string{"campaign winter-sale-nostop breaks us-opt-out (CTIA Messaging Principles and Best Practices (May 2023), § 5.1.3 Consumer Opt-Out, in effect since 2023-05-01): 4 of 4 messages"},
			warn: []string{"us-tcpa-hours holds 3 of 4"}},
		{file: "plain.plan.json", deny: []string{"campaign winter-sale-plain is not held to the us rule set: add compliance: [us]"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			for _, c := range []struct {
				rule string
				want []string
			}{{"deny", tt.deny}, {"warn", tt.warn}} {
				got := eval(t, c.rule, tt.file)
				if len(got) != len(c.want) {
					t.Fatalf("%s = %q, want %d messages like %q", c.rule, got, len(c.want), c.want)
				}
				for i, w := range c.want {
					if !strings.Contains(got[i], w) {
						t.Errorf("%s[%d] = %q, want %q in it", c.rule, i, got[i], w)
					}
				}
			}
		})
	}
}
