package planfile

import (
	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"

	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/plan"
)

// TestSaveStreamsSameBytes checks that Save, which encodes the batches one
// at a time, writes what encoding the whole plan at once writes: with no
// batch (none or an empty list), one, several, and strings that look like
// the list it splices the batches into or that JSON escapes.
func TestSaveStreamsSameBytes(t *testing.T) {
	tricky := `"batches":[],"x":"<a href='&'>` + "\u2028\"\\\n"
	batches := []plan.Batch{
		{ID: "b-1", Body: "hi " + tricky, Encoding: "UCS-2", Segments: 2, Recipients: []string{"+447400123459", "+12015550133"}},
		{ID: "b-2", Body: tricky, Encoding: "GSM-7", Segments: 1, Recipients: []string{"+33612345702"}},
		{ID: "b-3", Body: "", Recipients: []string{"+447400123460"}},
	}
	planOf := func(bs []plan.Batch) *plan.Plan {
		return &plan.Plan{Campaign: tricky, Sender: "ACME", Summary: plan.Summary{Batches: len(bs), Recipients: 4},
			Batches: bs, Invalid: []plan.Invalid{{Source: "l.csv:2", Value: tricky, Reason: "x"}},
			Warnings: []string{tricky}, Removed: []string{"+447400123401"}, InDoubt: []plan.Held{{Phone: "+1", BatchID: "b-0"}},
			State: plan.StateStamp{Lineage: tricky, Serial: 3}}
	}
	for name, p := range map[string]*plan.Plan{
		"no plan":       nil,
		"nil batches":   planOf(nil),
		"empty batches": planOf([]plan.Batch{}),
		"one batch":     planOf(batches[:1]),
		"several":       planOf(batches),
		"nothing else":  {Batches: batches},
	} {
		t.Run(name, func(t *testing.T) {
			s := &Saved{FormatVersion: plan.FormatVersion, SmsformVersion: tricky, ID: "abc", CreatedAt: time.Unix(1e9, 0).UTC(),
				CampaignPath: `"batches":[]`, Files: []FileSum{{Path: tricky, SHA256: "00"}}, Plan: p}
			path := filepath.Join(t.TempDir(), "p.plan")
			// The file holds the paths relative to its folder.
			frame, err := s.relativeTo(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if frame, err = withID(frame); err != nil { // the id its content makes
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(frame); err != nil {
				t.Fatal(err)
			}
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
func newBatch(body string, phones ...string) plan.Batch {
	return plan.Batch{ID: plan.BatchID(body, phones), Body: body, Encoding: "GSM-7", Segments: 1, Recipients: phones}
}

// savedForTest saves a plan of three batches and returns its path and the
// batches.
func savedForTest(t *testing.T) (string, []plan.Batch) {
	t.Helper()
	batches := []plan.Batch{
		newBatch("hi", "+447400123459", "+12015550133"),
		newBatch("héllo", "+33612345702"),
		newBatch("", "+447400123460"),
	}
	p := &plan.Plan{Campaign: "c", Sender: "ACME", Batches: batches,
		Summary: plan.Summary{Recipients: 4, ToSend: 4, Batches: 3}, Invalid: []plan.Invalid{{Source: "l.csv:2", Value: "x", Reason: "y"}}}
	s := &Saved{FormatVersion: plan.FormatVersion, ID: "abc", CreatedAt: time.Unix(1e9, 0).UTC(), Plan: p}
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

// reID sets the id of the plan file at path to the one its content makes,
// as anyone who edits a plan file can.
func reID(t *testing.T, path string) {
	t.Helper()
	rewrite(t, path, func(doc string) string {
		id, err := DocumentID([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return regexp.MustCompile(`"id":"p-[0-9a-f]+"`).ReplaceAllLiteralString(doc, `"id":"`+id+`"`)
	})
}

// TestOpenStreams checks that Open keeps the frame only and reads the
// batches from the file each time they are walked, as they were saved.
func TestOpenStreams(t *testing.T) {
	path, batches := savedForTest(t)
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Plan.Batches != nil || s.Plan.Stream == nil {
		t.Fatalf("Open kept %d batches in memory, stream %v", len(s.Plan.Batches), s.Plan.Stream)
	}
	if s.Plan.Invalid[0].Source != "l.csv:2" || s.Plan.Summary.ToSend != 4 || !strings.HasPrefix(s.ID, "p-") {
		t.Errorf("frame not read: %+v", s)
	}
	if got := s.Plan.BatchedRecipients(); got != 4 {
		t.Errorf("BatchedRecipients = %d, want 4", got)
	}
	for walk := range 2 {
		var got []plan.Batch
		if err := s.Plan.EachBatch(func(i int, b plan.Batch) error {
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
	// A walk the caller stops ends with the caller's error, as it gave it:
	// not taken for a damaged file.
	stop := errors.New("seen enough")
	n := 0
	err = s.Plan.EachBatch(func(int, plan.Batch) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Errorf("stopped walk: %v after %d batches, want %v after 1", err, n, stop)
	}
	whole, err := Load(context.Background(), path)
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
		{"id edited", func(t *testing.T, path string) {
			rewrite(t, path, func(doc string) string {
				return regexp.MustCompile(`"id":"p-[0-9a-f]+"`).ReplaceAllString(doc, `"id":"0123456789abcdef0123456789abcdef"`)
			})
		}, `its id "0123456789abcdef0123456789abcdef" is not the one its content makes`},
		{"header edited", func(t *testing.T, path string) {
			rewrite(t, path, func(doc string) string { return strings.Replace(doc, `"created_at":"2001-`, `"created_at":"2002-`, 1) })
		}, "is not the one its content makes: the file was changed after plan --out"},
		{"what a reviewer reads edited", func(t *testing.T, path string) {
			rewrite(t, path, func(doc string) string { return strings.Replace(doc, `"source":"l.csv:2"`, `"source":"l.csv:3"`, 1) })
		}, "is not the one its content makes"},
		{"a field added", func(t *testing.T, path string) {
			rewrite(t, path, func(doc string) string {
				return strings.Replace(doc, `"plan":{`, `"plan":{"approved_by":"security",`, 1)
			})
		}, "is not the one its content makes"},
		{"trailing data", func(t *testing.T, path string) {
			rewrite(t, path, func(doc string) string { return doc + `{"more":1}` })
		}, "data after the plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := savedForTest(t)
			tc.edit(t, path)
			s, err := Open(context.Background(), path)
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
		s, err := Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rewrite(t, path, func(doc string) string { return strings.Replace(doc, "+33612345702", "+33612345703", 1) })
		n := 0
		err = s.Plan.EachBatch(func(int, plan.Batch) error { n++; return nil })
		if err == nil || !strings.Contains(err.Error(), "changed after plan --out") || n != 1 {
			t.Errorf("walk after the change: %d batch(es), error %v; want 1 and the change named", n, err)
		}
	})
}

const header = "version: 1\nname: t\nsender: ACME\n"

const windowNumbers = `recipients:
  - numbers: ["+12125550101", "+33612345678", "+819012345678", "+12125550102", "+12085550100", "+14155550101", "+447400123459", "+80012345678", "+33612345679"]
`

// planAndSave plans c and saves the plan; it returns the plan, what was
// saved and where.
func planAndSave(t *testing.T, c *campaign.Campaign) (*plan.Plan, *Saved, string) {
	t.Helper()
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := NewSaved(context.Background(), p, "test", c.Path, "", false, c.Files())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p.plan")
	if err := Save(path, saved); err != nil {
		t.Fatal(err)
	}
	return p, saved, path
}

func TestSavedPlan(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.txt\nbody: hi\n", map[string]string{"l.txt": "+447400123459\n"})
	_, saved, path := planAndSave(t, c)
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("plan file mode %v, want 0600: it holds phone numbers", fi.Mode().Perm())
	}
	back, err := Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != saved.ID || back.Plan.Batches[0].Recipients[0] != "+447400123459" || len(back.Files) != 2 {
		t.Fatalf("round trip lost data: %+v", back)
	}
	if err := back.CheckFiles(context.Background(), c.Files()); err != nil {
		t.Fatalf("unchanged files: %v", err)
	}

	raw, _ := os.ReadFile(path)
	damaged := func(name string, data []byte) {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.plan")
			os.WriteFile(p, data, 0o600)
			if _, err := Load(context.Background(), p); !errors.Is(err, ErrNotPlan) {
				t.Fatalf("err = %v, want ErrNotPlan", err)
			}
		})
	}
	damaged("truncated", raw[:len(raw)/2])
	damaged("empty", nil)
	damaged("not gzip", []byte("version: 1\n"))
	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 0xff
	damaged("a flipped byte", flipped)

	os.WriteFile(c.Files()[1], []byte("+447400123564\n"), 0o644)
	if err := back.CheckFiles(context.Background(), c.Files()); !errors.Is(err, ErrCampaignChanged) || !strings.Contains(err.Error(), "l.txt") {
		t.Fatalf("edited list: err = %v, want ErrCampaignChanged naming l.txt", err)
	}
}

// FuzzDecodeSaved feeds arbitrary bytes to the plan-file reader: it must
// return a plan or an ErrNotPlan, never panic. Seeds: a real plan file and
// the broken ones of the catalogue.
func FuzzDecodeSaved(f *testing.F) {
	b := newBatch("hi", "+447400123459")
	p := &plan.Plan{Campaign: "t", Sender: "ACME", Summary: plan.Summary{Batches: 1, ToSend: 1}, Batches: []plan.Batch{b}}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	seed, err := withID(&Saved{FormatVersion: plan.FormatVersion, Plan: p}) // a plan the reader takes
	if err != nil {
		f.Fatal(err)
	}
	json.NewEncoder(zw).Encode(seed)
	zw.Close()
	f.Add(buf.Bytes())
	bad, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "bad", "*.plan"))
	for _, path := range bad {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := openSaved(&source{ctx: context.Background(), path: "fuzz.plan", r: bytes.NewReader(data), lim: defaultLimits}, nil)
		if err != nil && !errors.Is(err, ErrNotPlan) {
			t.Fatalf("error %v is not ErrNotPlan", err)
		}
		if err == nil && (s.Plan == nil || s.ID == "") {
			t.Fatalf("accepted a plan without content")
		}
	})
}

// TestSavedPlanKeepsWindow: a saved plan carries what apply needs to check
// the windows at send time.
func TestSavedPlanKeepsWindow(t *testing.T) {
	c := testharness.LoadCampaign(t, header+windowNumbers+"send_window: {days: [sat, sun], from: \"10:00\", to: \"18:00\"}\nnot_before: 2026-12-01T00:00:00Z\nbody: hi\n", nil)
	p, _, path := planAndSave(t, c)
	back, err := Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	w := back.Plan.Window
	if strings.Join(w.Days, ",") != "sat,sun" || w.From != "10:00" || w.To != "18:00" || !w.NotBefore.Equal(c.Window.NotBefore) {
		t.Errorf("window after a round trip: %+v", w)
	}
	for i, b := range back.Plan.Batches {
		if strings.Join(b.Zones, ",") != strings.Join(p.AllBatches()[i].Zones, ",") {
			t.Errorf("batch %d zones %v, want %v", i, b.Zones, p.AllBatches()[i].Zones)
		}
	}
}
