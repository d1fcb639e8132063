package plan

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSaveStreamsSameBytes checks that Save, which encodes the batches one
// at a time, writes what encoding the whole plan at once writes: with no
// batch (none or an empty list), one, several, and strings that look like
// the list it splices the batches into or that JSON escapes.
func TestSaveStreamsSameBytes(t *testing.T) {
	tricky := `"batches":[],"x":"<a href='&'>` + "\u2028\"\\\n"
	batches := []Batch{
		{ID: "b-1", Body: "hi " + tricky, Encoding: "UCS-2", Segments: 2, Recipients: []string{"+447400123459", "+12015550133"}},
		{ID: "b-2", Body: tricky, Encoding: "GSM-7", Segments: 1, Recipients: []string{"+33612345702"}},
		{ID: "b-3", Body: "", Recipients: []string{"+447400123460"}},
	}
	plan := func(bs []Batch) *Plan {
		return &Plan{Campaign: tricky, Sender: "ACME", Summary: Summary{Batches: len(bs), Recipients: 4},
			Batches: bs, Invalid: []Invalid{{Source: "l.csv:2", Value: tricky, Reason: "x"}},
			Warnings: []string{tricky}, Removed: []string{"+447400123401"}, InDoubt: []Held{{Phone: "+1", BatchID: "b-0"}},
			State: StateStamp{Lineage: tricky, Serial: 3}}
	}
	for name, p := range map[string]*Plan{
		"no plan":       nil,
		"nil batches":   plan(nil),
		"empty batches": plan([]Batch{}),
		"one batch":     plan(batches[:1]),
		"several":       plan(batches),
		"nothing else":  {Batches: batches},
	} {
		t.Run(name, func(t *testing.T) {
			s := &Saved{FormatVersion: FormatVersion, SmsformVersion: tricky, ID: "abc", CreatedAt: time.Unix(1e9, 0).UTC(),
				CampaignPath: `"batches":[]`, Files: []FileSum{{Path: tricky, SHA256: "00"}}, Plan: p}
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(s); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "p.plan")
			if err := Save(path, s); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("saved:\n%s\nencoding at once:\n%s", got, want.Bytes())
			}
		})
	}
}

// newBatch is a batch as plan makes it, its id from its content.
func newBatch(body string, phones ...string) Batch {
	var scratch []byte
	return Batch{ID: batchID(hashStrings(&scratch, body, phones)), Body: body, Encoding: "GSM-7", Segments: 1, Recipients: phones}
}

// savedForTest saves a plan of three batches and returns its path and the
// batches.
func savedForTest(t *testing.T) (string, []Batch) {
	t.Helper()
	batches := []Batch{
		newBatch("hi", "+447400123459", "+12015550133"),
		newBatch("héllo", "+33612345702"),
		newBatch("", "+447400123460"),
	}
	p := &Plan{Campaign: "c", Sender: "ACME", Batches: batches,
		Summary: Summary{Recipients: 4, ToSend: 4, Batches: 3}, Invalid: []Invalid{{Source: "l.csv:2", Value: "x", Reason: "y"}}}
	s := &Saved{FormatVersion: FormatVersion, ID: "abc", CreatedAt: time.Unix(1e9, 0).UTC(), Plan: p}
	path := filepath.Join(t.TempDir(), "p.plan")
	if err := Save(path, s); err != nil {
		t.Fatal(err)
	}
	return path, batches
}

// rewrite decompresses the plan file at path, applies edit to its JSON and
// writes it back, compressed again (a valid gzip stream), into the same file.
func rewrite(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(zr)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	edited := edit(string(doc))
	if edited == string(doc) {
		t.Fatal("the edit changed nothing")
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(edited))
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOpenStreams checks that Open keeps the frame only and reads the
// batches from the file each time they are walked, as they were saved.
func TestOpenStreams(t *testing.T) {
	path, batches := savedForTest(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Plan.Batches != nil || s.Plan.Stream == nil {
		t.Fatalf("Open kept %d batches in memory, stream %v", len(s.Plan.Batches), s.Plan.Stream)
	}
	if s.Plan.Invalid[0].Source != "l.csv:2" || s.Plan.Summary.ToSend != 4 || s.ID != "abc" {
		t.Errorf("frame not read: %+v", s)
	}
	if got := s.Plan.BatchedRecipients(); got != 4 {
		t.Errorf("BatchedRecipients = %d, want 4", got)
	}
	for walk := range 2 {
		var got []Batch
		if err := s.Plan.EachBatch(func(i int, b Batch) error {
			if i != len(got) {
				t.Errorf("walk %d: batch numbered %d, want %d", walk, i, len(got))
			}
			got = append(got, b)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, batches) {
			t.Errorf("walk %d read %+v, want %+v", walk, got, batches)
		}
	}
	whole, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Plan.Stream != nil || !reflect.DeepEqual(whole.Plan.Batches, batches) {
		t.Errorf("Load read %+v", whole.Plan.Batches)
	}
}

// TestOpenRefuses checks that a damaged or edited plan is refused before
// Open returns, so before anything is sent, and that a file changed in
// place after Open stops the walk at the changed batch.
func TestOpenRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, path string)
		want string
	}{
		{"truncated", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)*2/3], 0o600)
		}, "truncated or corrupted"},
		{"checksum", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			b[len(b)-6] ^= 0xff // in gzip's CRC-32 trailer
			os.WriteFile(path, b, 0o600)
		}, "truncated or corrupted"},
		{"number edited", func(t *testing.T, path string) {
			rewrite(t, path, func(doc string) string { return strings.Replace(doc, "+33612345702", "+33612345703", 1) })
		}, "the file was changed after plan --out"},
		{"body edited", func(t *testing.T, path string) {
			rewrite(t, path, func(doc string) string { return strings.Replace(doc, `"body":"hi"`, `"body":"ho"`, 1) })
		}, "the file was changed after plan --out"},
		{"summary edited", func(t *testing.T, path string) {
			rewrite(t, path, func(doc string) string { return strings.Replace(doc, `"to_send":4`, `"to_send":3`, 1) })
		}, "its summary says 3 batch(es) to 3 recipient(s)"},
		{"trailing data", func(t *testing.T, path string) {
			rewrite(t, path, func(doc string) string { return doc + `{"more":1}` })
		}, "data after the plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := savedForTest(t)
			tc.edit(t, path)
			s, err := Open(path)
			if err == nil {
				s.Close()
				t.Fatal("Open accepted the file")
			}
			if !errors.Is(err, ErrNotPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want ErrNotPlan saying %q", err, tc.want)
			}
		})
	}

	t.Run("changed in place after open", func(t *testing.T) {
		path, _ := savedForTest(t)
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rewrite(t, path, func(doc string) string { return strings.Replace(doc, "+33612345702", "+33612345703", 1) })
		n := 0
		err = s.Plan.EachBatch(func(int, Batch) error { n++; return nil })
		if err == nil || !strings.Contains(err.Error(), "changed after plan --out") || n != 1 {
			t.Errorf("walk after the change: %d batch(es), error %v; want 1 and the change named", n, err)
		}
	})
}
