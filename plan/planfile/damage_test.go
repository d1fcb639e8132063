package planfile

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestDamageInPlainWords: a plan file whose JSON is broken or holds the
// wrong kind of value says so in words, naming the field or the byte where
// the JSON breaks off, never encoding/json's messages about Go types or
// MarshalJSON.
func TestDamageInPlainWords(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to string
		want     string
		whole    bool // only Open, which reads the batches, sees it
	}{
		{"broken JSON inside a field", `"to_send":4,`, `"to_send":4 9,`,
			`its plan.summary is not valid JSON (invalid character '9' after object key:value pair, at byte `, false},
		{"text for a number", `"batches":3,`, `"batches":"3",`,
			"its plan.summary.batches holds text where a whole number should be", false},
		{"not a time", `"created_at":"2001-09-09T01:46:40Z"`, `"created_at":"yesterday"`,
			`its created_at holds "yesterday" where a time (RFC 3339) should be`, false},
		{"a list for text", `"sender":"ACME"`, `"sender":["ACME"]`,
			"its plan.sender holds a list where text should be", false},
		{"broken between fields", `"id":`, `"id" 9:`,
			`its content is damaged: not valid JSON at byte `, false},
		{"text for a number in a batch", `"segments_per_message":1,`, `"segments_per_message":"1",`,
			"batch 1: its segments_per_message holds text where a whole number should be", true},
		{"broken JSON in a batch", `"+12015550133"]`, `"+12015550133" 9]`,
			"batch 1: it is not valid JSON (invalid character '9' after array element, at byte ", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := savedForTest(t)
			found := false
			rewrite(t, path, func(doc string) string {
				found = strings.Contains(doc, tc.from)
				return strings.Replace(doc, tc.from, tc.to, 1)
			})
			if !found {
				t.Fatalf("the plan file lacks %q", tc.from)
			}
			opens := map[string]func(context.Context, string) (*Saved, error){"Open": Open, "Load": Load}
			if !tc.whole {
				opens["OpenHeader"] = OpenHeader
			}
			for name, open := range opens {
				s, err := open(context.Background(), path)
				if err == nil {
					s.Close()
					t.Fatalf("%s accepted the file", name)
				}
				if !errors.Is(err, ErrNotPlan) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %q, want ErrNotPlan saying %q", name, err, tc.want)
				}
				for _, internal := range []string{"json:", "MarshalJSON", "Go struct", "unmarshal", "2006-01-02"} {
					if strings.Contains(err.Error(), internal) {
						t.Errorf("%s: %q says %q", name, err, internal)
					}
				}
			}
		})
	}
}

// TestDamageAtByte: where the JSON breaks off is counted from the start of
// the decompressed content, from 1.
func TestDamageAtByte(t *testing.T) {
	path, _ := savedForTest(t)
	var at int
	rewrite(t, path, func(doc string) string {
		at = strings.Index(doc, `,"id":`) + 1
		return strings.Replace(doc, `,"id":`, ` 9,"id":`, 1)
	})
	_, err := Open(context.Background(), path)
	want := "its content is damaged: not valid JSON at byte " + strconv.Itoa(at+1) + ` of its decompressed content: found '9' where ',' or '}' should be`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestOpenRefusesNotAFile: a folder, a device or a named pipe is no plan
// file, and is refused without reading it (a pipe would wait for a writer).
func TestOpenRefusesNotAFile(t *testing.T) {
	paths := map[string]string{"folder": t.TempDir()}
	if _, err := os.Stat(os.DevNull); err == nil && os.DevNull == "/dev/null" {
		paths["device"] = os.DevNull
	}
	for kind, p := range paths {
		for name, open := range map[string]func(context.Context, string) (*Saved, error){"Open": Open, "Load": Load, "OpenHeader": OpenHeader} {
			_, err := open(context.Background(), p)
			if want := "it is a " + kind + ", not a plan file"; !errors.Is(err, ErrNotPlan) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s(%s): %v, want %q", name, p, err, want)
			}
		}
	}
}
