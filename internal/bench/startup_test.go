package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/state"
)

// startupRow measures what a project adds to every command's start: the
// project file found four folders up and loaded, the state's location
// checked and its file resolved (links, folders), against the same
// campaign outside a project. Measured in-process with testing.Benchmark:
// a process's own start varies by more than the figure.
func startupRow(t *testing.T) row {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"plain/.git/HEAD":       "",
		"plain/c.yaml":          startupCampaign,
		"repo/.git/HEAD":        "",
		"repo/smsform.yaml":     "version: 1\nstate: .smsform/\nprovider:\n  base_url: https://sms.example.com\nfrequency_cap: {max: 3, per: 24h}\n",
		"repo/a/b/c/d/c.yaml":   startupCampaign,
		"repo/.smsform/.keep":   "",
		"repo/a/b/c/d/list.csv": "phone\n+447400123459\n",
		"plain/list.csv":        "phone\n+447400123459\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := func(path string) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				c, err := campaign.Load(path)
				if err != nil {
					b.Fatal(err)
				}
				// What every command does next: find the state and
				// resolve its identity.
				loc := filepath.Join(filepath.Dir(path), "c.smsstate")
				if c.Project != nil {
					if _, err := campaign.ProjectFor(filepath.Dir(path)); err != nil {
						b.Fatal(err)
					}
					loc = filepath.Join(c.Project.Dir, ".smsform", "smsform.smsstate")
				}
				if err := state.CheckLocation(loc); err != nil {
					b.Fatal(err)
				}
				if _, err := state.ResolveFile(loc); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	with := testing.Benchmark(start(filepath.Join(root, "repo/a/b/c/d/c.yaml")))
	without := testing.Benchmark(start(filepath.Join(root, "plain/c.yaml")))
	added := time.Duration(with.NsPerOp() - without.NsPerOp())
	return row{figure: "start-up: a project 4 folders up (discovery, project file, state identity), added", smsform: added.Round(time.Microsecond).String(),
		comparison: time.Duration(without.NsPerOp()).Round(time.Microsecond).String() + " without", ratio: added.Seconds() / 0.005,
		target: "< 5 ms", pass: added < 5*time.Millisecond}
}

const startupCampaign = "version: 1\nname: startup\nsender: ACME\nrecipients:\n  - file: list.csv\nbody: \"Hi {{ .phone }}\"\n"
