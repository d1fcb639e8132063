package testharness

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
)

// BuildSmsform builds the smsform binary into dir and returns its path.
//
// With race set (the caller's own binary is race-built, as under make test)
// smsform is built with the race detector too: on an empty build cache its
// dependencies are then compiled once for the whole make test, not twice,
// which saves a fresh clone about a minute. The long targets pass false, so
// what they measure is the binary users run.
func BuildSmsform(dir string, race bool) (string, error) {
	out := filepath.Join(dir, "smsform")
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append(args, "github.com/smsform/smsform")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build smsform: %v\n%s", err, b)
	}
	return out, nil
}
