package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smsform/smsform/internal/cli"
)

// TestBadFiles runs the command line over the catalogue of broken plan and
// state files in testdata/bad (campaign and list files have their own,
// larger catalogue in campaign/testdata/bad): every one is a clear error that
// names the file, never a panic, and nothing is written next to it.
func TestBadFiles(t *testing.T) {
	const notPlan = "not a readable smsform plan file"
	tests := []struct {
		file string
		args []string // FILE stands for the bad file
		want []string
	}{
		{"plan-truncated.plan", []string{"show", "FILE"}, []string{notPlan, "truncated or corrupted"}},
		{"plan-flipped-byte.plan", []string{"show", "FILE"}, []string{notPlan, "truncated or corrupted"}},
		{"plan-empty.plan", []string{"show", "FILE"}, []string{notPlan, "not written by smsform plan --out"}},
		{"plan-plain-json.plan", []string{"show", "FILE"}, []string{notPlan, "not written by smsform plan --out"}},
		{"plan-yaml.plan", []string{"apply", "FILE"}, []string{notPlan, "not written by smsform plan --out"}},
		{"plan-binary.plan", []string{"apply", "FILE"}, []string{notPlan, "not written by smsform plan --out"}},
		{"plan-gzip-garbage.plan", []string{"show", "FILE"}, []string{notPlan, "content is damaged"}},
		{"plan-newer-version.plan", []string{"show", "FILE"}, []string{notPlan, `format version "2"`}},
		{"plan-empty-batch.plan", []string{"apply", "FILE"}, []string{notPlan, "no recipients"}},
		{"plan-no-plan.plan", []string{"show", "FILE"}, []string{notPlan, "holds no plan"}},
		{"state-text.smsstate", []string{"state", "list", "--state", "FILE"}, []string{"not an smsform state"}},
		{"state-garbage.smsstate", []string{"plan", "CAMPAIGN", "--state", "FILE"}, []string{"not an smsform state"}},
		{"state-header-only.smsstate", []string{"state", "list", "--state", "FILE"}, []string{"not an smsform state"}},
		{"state-empty.smsstate", []string{"plan", "CAMPAIGN", "--state", "FILE"}, []string{"empty"}},
		{"state-other-db.smsstate", []string{"state", "resolve", "--state", "FILE", "--in-doubt", "--as", "sent"}, []string{"without smsform's tables"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			dir := t.TempDir()
			src, err := os.ReadFile(filepath.Join("testdata", "bad", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tt.file)
			if err := os.WriteFile(path, src, 0o600); err != nil {
				t.Fatal(err)
			}
			camp := filepath.Join(dir, "c.yaml")
			os.WriteFile(camp, []byte("version: 1\nname: t\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123459\"]\nbody: hi\n"), 0o600)
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.NewReplacer("FILE", path, "CAMPAIGN", camp).Replace(a)
			}
			var stdout, stderr bytes.Buffer
			err = cli.Run(context.Background(), args, cli.Env{
				Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: io.Discard,
				Getenv: func(k string) string {
					return map[string]string{"SMSFORM_CLIENT_ID": "id", "SMSFORM_CLIENT_SECRET": "secret",
						"SMSFORM_BASE_URL": "http://127.0.0.1:1", "SMSFORM_TOKEN_DIR": filepath.Join(dir, "tokens")}[k]
				},
			})
			code := exitCode(err, &stderr)
			if code != 1 {
				t.Fatalf("exit %d, want 1 (err %v)", code, err)
			}
			for _, w := range append(tt.want, tt.file) {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, src) {
				t.Errorf("the bad file was changed")
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if name := e.Name(); name != tt.file && name != "c.yaml" {
					t.Errorf("%s was written", name)
				}
			}
		})
	}
}
