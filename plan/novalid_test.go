package plan

import (
	"errors"
	"strings"
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

// TestNoValidHint: numbers written with their country code that the
// country does not give out are to be checked, not rewritten in E.164;
// numbers that could not be placed are to be written with their code.
func TestNoValidHint(t *testing.T) {
	for _, tt := range []struct{ reason, region, want string }{
		{"not a valid number for GB", "", "check them against their source"},
		{"too long", "", "check them against their source"},
		{"not a valid number for +800", "GB", "check them against their source"},
		{"not in E.164 (+ and country code); set default_region to allow national numbers", "", "write the numbers in E.164"},
		{"unknown country code", "GB", "with default_region GB"},
	} {
		if got := (&NoValidError{Reason: tt.reason, Region: tt.region}).Hint(); !strings.Contains(got, tt.want) {
			t.Errorf("%q (region %q): hint %q, want %q", tt.reason, tt.region, got, tt.want)
		}
	}
}
