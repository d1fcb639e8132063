package planfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A refusal names the top-level keys whose value changed, was added or was
// removed; a change of comments, quoting or layout alone is said to be one.
func TestKeysChanged(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const base = "version: 1\nname: c\nprovider:\n  base_url: http://127.0.0.1:8080\ntest_recipients: [\"+447400123459\"]\nbody: hi\n"
	path := write("c.yaml", base)
	kept := yamlKeys(path)
	if len(kept) != 5 {
		t.Fatalf("keys of %s: %v, want 5", path, kept)
	}
	for _, tc := range []struct{ text, want string }{
		{strings.Replace(base, "+447400123459", "+447400123460", 1), "test_recipients changed"},
		{strings.Replace(base, "8080", "8081", 1), "provider changed"},
		{strings.Replace(base, "body: hi\n", "", 1) + "batch_size: 3\n", "batch_size added; body removed"},
		{strings.Replace(base, "body: hi", "body: 'hi' # greeting", 1), "no key's value changed (comments or layout only)"},
		{strings.Replace(base, "version: 1", "version: \"1\"", 1), "version changed"}, // a string is not a number
		{"- not\n- a mapping\n", ""},
	} {
		write("c.yaml", tc.text)
		if got := keysChanged(kept, path); got != tc.want {
			t.Errorf("after\n%s\nkeysChanged = %q, want %q", tc.text, got, tc.want)
		}
	}

	// Keys the plan file says it kept are not to be trusted with a
	// terminal.
	write("c.yaml", base)
	forged := map[string]string{"\x1b]0;pwned\a": "00"}
	if got := keysChanged(forged, path); !strings.Contains(got, `"\x1b]0;pwned\a" removed`) {
		t.Errorf("a forged key shown as %q, want it quoted", got)
	}

	// Not YAML, too many nodes through aliases: no keys, never a hang.
	if k := yamlKeys(write("l.csv", "phone\n+447400123459\n")); k != nil {
		t.Errorf("keys of a CSV list: %v", k)
	}
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i, prev := 'b', 'a'; i <= 'j'; i, prev = i+1, i {
		bomb += string(i) + ": &" + string(i) + " [" + strings.Repeat("*"+string(prev)+", ", 9) + "*" + string(prev) + "]\n"
	}
	if k := yamlKeys(write("bomb.yaml", bomb)); k != nil {
		t.Errorf("keys of an alias bomb: %v", k)
	}
}
