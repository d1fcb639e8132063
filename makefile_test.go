package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestMakeFuzzRunsEveryTarget keeps `make fuzz` in step with the fuzz
// targets: one added to a test file and forgotten in the Makefile would
// never run for longer than its seeds.
func TestMakeFuzzRunsEveryTarget(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(\./[\w/]+):(Fuzz\w+)`).FindAllStringSubmatch(string(mk), -1) {
		listed[m[1]+":"+m[2]] = true
	}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	found := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			found++
			if target := "./" + filepath.Dir(path) + ":" + m[1]; !listed[target] {
				t.Errorf("%s (%s) is not in the Makefile's FUZZ_TARGETS", target, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found != len(listed) {
		t.Errorf("%d fuzz targets in the code, %d in the Makefile", found, len(listed))
	}
}

// TestMakeTestVetsWithEveryAnalyzer keeps make test's vet list in step with
// go vet's own: make test vets through go test, which runs only the
// analyzers it is given.
func TestMakeTestVetsWithEveryAnalyzer(t *testing.T) {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "vet", "help").CombinedOutput()
	if err != nil {
		t.Fatalf("go tool vet help: %v\n%s", err, out)
	}
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VET_CHECKS := (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile has no VET_CHECKS")
	}
	listed := map[string]bool{}
	for _, a := range strings.Split(string(m[1]), ",") {
		listed[a] = true
	}
	inRegistered := false
	for line := range strings.Lines(string(out)) {
		switch {
		case strings.HasPrefix(line, "Registered analyzers"):
			inRegistered = true
		case inRegistered && strings.HasPrefix(line, "    "):
			if name := strings.Fields(line)[0]; !listed[name] {
				t.Errorf("vet analyzer %s is not in the Makefile's VET_CHECKS", name)
			}
		case inRegistered && strings.TrimSpace(line) != "":
			inRegistered = false
		}
	}
}
