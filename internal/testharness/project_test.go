package testharness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The mapping the tests use is the one a user is given: docs/sandbox.md's
// fenced block and the example project make demo runs.
func TestSandboxProjectIsTheDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := os.ReadFile(filepath.Join(root, "docs", "sandbox.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(docs), "### The project file that reads the sandbox")
	_, block, _ = strings.Cut(block, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	if got := withoutComments(block); got != sandboxMapping {
		t.Errorf("docs/sandbox.md's mapping, without its comments:\n%s\nthe tests use:\n%s", got, sandboxMapping)
	}
	example, err := os.ReadFile(filepath.Join(root, "examples", "delivery", "smsform.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := withoutComments(string(example)), "version: 1\nstate: .smsform/\n"+sandboxMapping; got != want {
		t.Errorf("examples/delivery/smsform.yaml, without its comments:\n%s\nwant:\n%s", got, want)
	}
}

// withoutComments is YAML text without its comment lines and the comments
// at the ends of lines.
func withoutComments(text string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = strings.TrimRight(line[:i], " ") + "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}
