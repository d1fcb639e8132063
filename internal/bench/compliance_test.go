package bench

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smsform/smsform/internal/e164"
)

// complianceRow measures what the us rule set costs a plan: n US numbers
// (every area code, so that every state's rules are met) planned with
// compliance: [us] against the same campaign without it, alternating runs.
// With the rules, plan looks up each recipient's state and time zones and
// groups the batches by the hours the law allows them; the body, one for
// everyone, is checked once.
func complianceRow(t *testing.T, smsform, dir string, n, runs int) row {
	t.Helper()
	t.Logf("generating %d US recipients", n)
	plain, ruled, err := usCampaigns(dir, n, 7)
	if err != nil {
		t.Fatal(err)
	}
	without, with := medianPair(t, runs, smsform, []string{"plan", plain}, []string{"plan", ruled})
	if !strings.Contains(with.stdout, "Compliance (marketing campaign):") {
		t.Fatalf("the plan with compliance: [us] shows no compliance:\n%s", firstLines(with.stdout, 5))
	}
	return row{figure: fmt.Sprintf("plan %s US recipients, compliance: [us], vs without", count(n)), smsform: secs(with.wall), rss: with.rss,
		comparison: secs(without.wall), ratio: with.wall.Seconds() / without.wall.Seconds(), target: "≤ 1.2",
		pass: with.wall.Seconds() <= 1.2*without.wall.Seconds()}
}

// usCampaigns writes a list of n distinct valid US mobile numbers, drawn
// over every area code, and two campaigns of one body that read it: one
// without rule sets, one held to us.
func usCampaigns(dir string, n int, seed uint64) (plain, ruled string, err error) {
	list := filepath.Join(dir, "us.csv")
	f, err := os.Create(list)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("phone,name\n")
	rng := rand.New(rand.NewPCG(seed, 0x05))
	norm := e164.NewNormalizer("")
	seen := e164.NewMap[bool](n)
	for written := 0; written < n; {
		raw := fmt.Sprintf("+1%03d%03d%04d", 200+rng.IntN(800), 200+rng.IntN(800), rng.IntN(10000))
		num, err := norm.Normalize(raw)
		if err != nil || num.Region != "US" {
			continue
		}
		if v, added := seen.Ref(num.E164); added {
			*v = true
			fmt.Fprintf(w, "%s,Ada\n", num.E164)
			written++
		}
	}
	if err := w.Flush(); err != nil {
		return "", "", err
	}
	const campaign = "version: 1\nname: %s\nsender: ACME\nrecipients:\n  - file: us.csv\nbody: \"ACME spring sale: 20%% off everything until Sunday. Reply STOP to opt out.\"\nbatch_size: 1000\n%s"
	plain, ruled = filepath.Join(dir, "us-plain.yaml"), filepath.Join(dir, "us-rules.yaml")
	if err := os.WriteFile(plain, fmt.Appendf(nil, campaign, "us-plain", ""), 0o644); err != nil {
		return "", "", err
	}
	return plain, ruled, os.WriteFile(ruled, fmt.Appendf(nil, campaign, "us-rules", "compliance: [us]\n"), 0o644)
}

// TestBenchCompliance runs the compliance row alone: go test -run
// TestBenchCompliance ./internal/bench -bench.full -bench.bin ./smsform.
func TestBenchCompliance(t *testing.T) {
	n, rounds := 3_000, 1
	if *full {
		n, rounds = 1_000_000, *runs
	}
	var tab table
	tab.add(complianceRow(t, binary(t), t.TempDir(), n, rounds))
	tab.print(os.Stdout, "bench", *full)
}
