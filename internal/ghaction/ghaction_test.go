package ghaction

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smsform/smsform/plan/planfile"
)

func zipOf(t *testing.T, names ...string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("plan " + n))
	}
	zw.Close()
	return b.Bytes()
}

// Nothing in the artifact chooses where a file lands: only plain NAME.plan.
func TestUnzipPlansTakesOnlyPlanFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plans")
	names, err := unzipPlans(zipOf(t, "news.plan", "promo.plan", planfile.ManifestName), dir)
	if err != nil || !slices.Equal(names, []string{"news.plan", "promo.plan"}) {
		t.Fatalf("unzipPlans = %v, %v", names, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, planfile.ManifestName)); string(b) != "plan "+planfile.ManifestName {
		t.Errorf("the manifest holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "promo.plan")); string(b) != "plan promo.plan" {
		t.Errorf("promo.plan holds %q", b)
	}
	for _, bad := range []string{"../evil.plan", "sub/x.plan", "/etc/x.plan", "notes.txt", ".hidden.plan", "sub/" + planfile.ManifestName} {
		out := filepath.Join(t.TempDir(), "plans")
		if _, err := unzipPlans(zipOf(t, bad), out); err == nil {
			t.Errorf("unzipPlans took %q", bad)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(out), "evil.plan")); err == nil {
			t.Errorf("%q was written outside the folder", bad)
		}
	}
}

// The state input: a location is SMSFORM_STATE; for apply anything else is
// the password of the project's database (of the role it names, the one
// that applies); a file state is refused.
func TestStateEnv(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "smsform.yaml"), []byte("version: 1\nstate: postgres://smsform@db.example.com/campaigns\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".git"), nil, 0o644) // the project's search stops here
	env := func(state string) Env {
		return Env{Dir: dir, Getenv: func(k string) string { return map[string]string{"INPUT_STATE": state}[k] }}
	}
	for _, cmd := range []string{"plan", "apply"} {
		for in, want := range map[string]string{
			"": "",
			"postgres://ro:pw@db.example.com/campaigns": "SMSFORM_STATE=postgres://ro:pw@db.example.com/campaigns",
			"host=db user=ro dbname=campaigns":          "SMSFORM_STATE=host=db user=ro dbname=campaigns",
		} {
			got, err := stateEnv(env(in), cmd)
			if err != nil || strings.Join(got, " ") != want {
				t.Errorf("%s, state %q: %v, %v; want %q", cmd, in, got, err, want)
			}
		}
	}
	if got, err := stateEnv(env("hunter2"), "apply"); err != nil || strings.Join(got, " ") != "PGPASSWORD=hunter2" {
		t.Errorf("apply, a password: %v, %v; want PGPASSWORD", got, err)
	}
	os.WriteFile(filepath.Join(dir, "smsform.yaml"), []byte("version: 1\nstate: .smsform/\n"), 0o644)
	for _, cmd := range []string{"plan", "apply"} {
		for _, in := range []string{"", "hunter2", "states/x.smsstate"} {
			if _, err := stateEnv(env(in), cmd); err == nil || !strings.Contains(err.Error(), "not in PostgreSQL") {
				t.Errorf("%s, state %q with a file state: %v, want a refusal", cmd, in, err)
			}
		}
	}
}

// Plan reads the state as a read-only role that the project file does not
// name (it names the role that applies): a bare password would be tried as
// the applier's, refused, and people would then give the pull-request job
// the applier's password. So plan takes only a whole location, and its
// refusal never shows the value.
func TestStateEnvPlanWantsTheReadersURL(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "smsform.yaml"), []byte("version: 1\nstate: postgres://smsform@db.example.com/campaigns\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".git"), nil, 0o644)
	for _, in := range []string{"readpw-Secret456", "postgres:/smsform_plan:pw@db/campaigns", "  s3cr3t  "} {
		env := Env{Dir: dir, Getenv: func(k string) string { return map[string]string{"INPUT_STATE": in}[k] }}
		got, err := stateEnv(env, "plan")
		if err == nil {
			t.Errorf("plan, state %q: %v; want a refusal", in, got)
			continue
		}
		for _, want := range []string{"not a postgres:// URL", "read-only role's whole URL", "SMSFORM_STATE_READONLY"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("plan, state %q: the refusal lacks %q: %v", in, want, err)
			}
		}
		if strings.Contains(err.Error(), strings.TrimSpace(in)) || strings.Contains(err.Error(), "pw@") {
			t.Errorf("the refusal shows the input: %v", err)
		}
	}
}

// The comment lists the plans as the folder's manifest does: each file, its
// campaign and its SHA-256; nothing else of the file reaches the markup.
func TestPlansSection(t *testing.T) {
	dir := t.TempDir()
	if got, err := plansSection(dir); got != "" || err != nil {
		t.Fatalf("no manifest: %q, %v", got, err)
	}
	sum := strings.Repeat("ab", 32)
	if err := planfile.WriteManifest(dir, "test", []planfile.ManifestPlan{
		{File: "news.plan", Campaign: "news", ID: "p-1", SHA256: sum},
		{File: "x`|y.plan", Campaign: "<b>x</b>", ID: "p-2", SHA256: "00"},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := plansSection(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| `news.plan` | `news` | `" + sum + "` |\n", "| `news.plan` |", "| `(unreadable)` | `(unreadable)` | `00` |\n", "`plans.manifest.json`"} {
		if !strings.Contains(got, want) {
			t.Errorf("the section lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "<b>") || strings.Contains(got, "x`|y") {
		t.Errorf("a name reached the markup as it is:\n%s", got)
	}
	if err := planfile.WriteManifest(dir, "test", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := plansSection(dir); got != "" || err != nil {
		t.Errorf("no plan saved: %q, %v", got, err)
	}
}
