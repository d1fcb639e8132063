package plan

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
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
