package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/smsform/smsform/plan"
)

// TestHintOfLibraryError: a library error that says what to do (a plan
// that could not spool its bodies) gets its hint line, wrapped or not.
func TestHintOfLibraryError(t *testing.T) {
	err := fmt.Errorf("apply: %w", &plan.SpillError{Err: errors.New("open /x/smsform-bodies-1: not a directory")})
	if h := hint(err); !strings.Contains(h, "set TMPDIR to a writable folder") {
		t.Fatalf("hint = %q", h)
	}
	if h := hint(errors.New("plain")); h != "" {
		t.Fatalf("hint of a plain error = %q", h)
	}
}
