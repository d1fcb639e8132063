package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smsform/smsform/campaign"
)

// TestStrayCampaignsBounded: a project's folder larger than the walk's
// bound is an error, never a partial list (prune would drop the sends a
// missed campaign's cap counts); a hidden folder's campaign is read.
func TestStrayCampaignsBounded(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"smsform.yaml":   "version: 1\nstate: .smsform/\n",
		".drafts/d.yaml": "version: 1\nname: d\nsender: ACME\nrecipients:\n  - numbers: [\"+447400100001\"]\nbody: hi\nfrequency_cap: {max: 1, per: 48h}\n",
		".git/x.yaml":    "not a campaign",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := campaign.LoadProject(filepath.Join(dir, "smsform.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := strayCampaigns(p, nil)
	if err != nil || len(cs) != 1 || cs[0].Name != "d" {
		t.Fatalf("stray campaigns %v, %v; want the hidden folder's d", cs, err)
	}
	defer func(n int) { maxStrayWalk = n }(maxStrayWalk)
	maxStrayWalk = 3
	if cs, err := strayCampaigns(p, nil); err == nil || !strings.Contains(err.Error(), "more than 3 files and folders") {
		t.Errorf("over the bound: %v, %v; want an error", cs, err)
	}
}
