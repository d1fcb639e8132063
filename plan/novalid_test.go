package plan

import (
	"errors"
	"testing"
)

// TestNoValid: a plan whose every number is invalid is an error naming the
// most common reason; one valid number, or none listed, is not.
func TestNoValid(t *testing.T) {
	p := &Plan{Invalid: []Invalid{{Reason: "too short"}, {Reason: "not in E.164"}, {Reason: "not in E.164"}}}
	var e *NoValidError
	if err := noValid(p, ""); !errors.As(err, &e) || e.Reason != "not in E.164" || e.Count != 2 || e.Invalid != 3 {
		t.Fatalf("noValid = %v", err)
	}
	if got, want := e.Error(), "none of the campaign's 3 recipients has a valid number; 2 of them: not in E.164"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	p.Summary.Recipients = 1
	if err := noValid(p, ""); err != nil {
		t.Errorf("with a valid number: %v", err)
	}
	if err := noValid(&Plan{}, ""); err != nil {
		t.Errorf("with no recipient at all: %v", err)
	}
}
