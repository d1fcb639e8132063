package cli

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/smsform/smsform/state"
)

// TestStatePasswordHint: when opening the state a saved plan records (a URL
// without its password) fails, apply says where a password comes from, but
// only when nothing here supplies one and the location came from the plan.
func TestStatePasswordHint(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".pgpass"), []byte("*:*:*:*:pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const url = "postgres://sms@db.example.com/c"
	tests := []struct {
		name       string
		savedState bool
		loc        string
		env        map[string]string
		hint       bool
	}{
		{"the plan's URL, no password anywhere", true, url, nil, true},
		{"the plan's URL, PGPASSWORD", true, url, map[string]string{"PGPASSWORD": "pw"}, false},
		{"the plan's URL, ~/.pgpass", true, url, map[string]string{"HOME": home}, false},
		{"the plan's URL, PGPASSFILE", true, url, map[string]string{"PGPASSFILE": filepath.Join(home, ".pgpass")}, false},
		{"the plan's URL, a PGPASSFILE that is not there", true, url, map[string]string{"HOME": home, "PGPASSFILE": filepath.Join(home, "none")}, true},
		{"--state or SMSFORM_STATE", false, url, nil, false},
		{"a state file", true, "c.smsstate", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Env{Getenv: func(k string) string { return tt.env[k] }}
			n := nextStep{env: env, savedState: tt.savedState}
			cause := errors.New("connect: failed")
			err := n.statePassword(cause, state.MustParseLocation(tt.loc))
			var h *HintError
			if got := errors.As(err, &h); got != tt.hint {
				t.Errorf("hint given: %v, want %v (%v)", got, tt.hint, err)
			}
			if !errors.Is(err, cause) {
				t.Errorf("the cause is lost: %v", err)
			}
		})
	}
}
