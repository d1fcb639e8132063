package planfile

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/testharness"
	"github.com/smsform/smsform/plan"
)

// gzipped compresses plain, then n copies of pad: as gzip members one
// after the other (gzip.Reader reads them as one stream), so that pad is
// compressed once however large n is.
func gzipped(t testing.TB, plain []byte, pad []byte, n int) []byte {
	t.Helper()
	member := func(b []byte) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	out := member(plain)
	if n > 0 {
		out = append(out, bytes.Repeat(member(pad), n)...)
	}
	return out
}

// TestDecompressionBound: a file that decompresses to far more than any
// plan smsform writes (a gzip bomb) is refused once past the bound, without
// being read whole; the bound is also capped. White space costs its length
// to read, no more (encoding/json's decoder takes time that grows with the
// square of a run of it).
func TestDecompressionBound(t *testing.T) {
	// A 32 MB id: some 32 KB compressed, so a bound of some 2 MB.
	bomb := gzipped(t, []byte(`{"format_version":"1","id":"`), bytes.Repeat([]byte("a"), 1<<20), 32)
	path := filepath.Join(t.TempDir(), "bomb.plan")
	if err := os.WriteFile(path, bomb, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func(context.Context, string) (*Saved, error){Open, Load, OpenHeader} {
		s, err := open(context.Background(), path)
		if err == nil {
			s.Close()
			t.Fatal("a gzip bomb was read as a plan")
		}
		if !errors.Is(err, ErrNotPlan) || !strings.Contains(err.Error(), "decompresses to more than") {
			t.Errorf("err = %v, want ErrNotPlan saying it decompresses too far", err)
		}
	}
	spaces := gzipped(t, []byte(`{"format_version":"1",`), bytes.Repeat([]byte(" "), 1<<20), 32)
	if _, err := openSaved(&source{ctx: context.Background(), path: "spaces.plan", r: bytes.NewReader(spaces), lim: defaultLimits}, nil); !errors.Is(err, ErrNotPlan) ||
		!strings.Contains(err.Error(), "decompresses to more than") {
		t.Errorf("32 MB of spaces: err = %v, want ErrNotPlan saying it decompresses too far", err)
	}

	// Counted: no more is decompressed than the bound (and a read ahead).
	r := &countingReader{r: bytes.NewReader(bomb)}
	_, err := openSaved(&source{ctx: context.Background(), path: "bomb.plan", r: r, lim: defaultLimits}, nil)
	if !errors.Is(err, ErrNotPlan) {
		t.Fatalf("err = %v", err)
	}
	if r.n > int64(len(bomb))/2 {
		t.Errorf("read %d of the %d compressed bytes of a file refused past its bound: the bound is 1/16 of it", r.n, len(bomb))
	}

	// The cap: whatever the ratio, never past max.
	capped := limits{ratio: 1 << 20, max: 1 << 20}
	if _, err := openSaved(&source{ctx: context.Background(), path: "bomb.plan", r: bytes.NewReader(bomb), lim: capped}, nil); !errors.Is(err, ErrNotPlan) ||
		!strings.Contains(err.Error(), "more than 1048576 bytes") {
		t.Errorf("capped: err = %v, want refused past 1 MiB", err)
	}

	// A real plan is well within the bound, trailing white space included.
	pathOK, _ := savedForTest(t)
	if s, err := Open(context.Background(), pathOK); err != nil {
		t.Errorf("a plan smsform wrote: %v", err)
	} else {
		s.Close()
	}
}

func TestBound(t *testing.T) {
	for _, tc := range []struct{ size, want int64 }{
		{0, 0}, {1, 64}, {1 << 20, 64 << 20}, {128 << 20, 8 << 30}, {1 << 40, 8 << 30},
	} {
		if got := defaultLimits.bound(tc.size); got != tc.want {
			t.Errorf("bound(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

// countingReader counts the bytes read through it and calls at once when
// more than after were read.
type countingReader struct {
	r     io.ReadSeeker
	n     int64
	after int64
	at    func()
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.at != nil && c.n > c.after {
		c.at()
		c.at = nil
	}
	return n, err
}

func (c *countingReader) Seek(off int64, whence int) (int64, error) { return c.r.Seek(off, whence) }

// TestCancelStopsRead: once the context is done, a read of a plan file
// stops at its next read of the file, with the context's error (which main
// words as an interrupt), not as a damaged file.
func TestCancelStopsRead(t *testing.T) {
	// A 64 MB id in some 64 KB, read without a bound.
	bomb := gzipped(t, []byte(`{"format_version":"1","id":"`), bytes.Repeat([]byte("a"), 1<<20), 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &countingReader{r: bytes.NewReader(bomb), after: 16 << 10, at: cancel}
	unbounded := limits{ratio: 1 << 30, max: 1 << 40}
	_, err := openSaved(&source{ctx: ctx, path: "bomb.plan", r: r, lim: unbounded}, nil)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotPlan) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// What was read after the cancel is at most what one read of the
	// file's buffer holds.
	if r.n > (16<<10)+(8<<10) {
		t.Errorf("read %d compressed bytes, cancelled after 16 KiB", r.n)
	}

	// A walk of an open plan stops too, and a read begun after the
	// cancel does not start.
	path, _ := savedForTest(t)
	ctx2, cancel2 := context.WithCancel(context.Background())
	s, err := Open(ctx2, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cancel2()
	if err := s.Plan.EachBatch(func(int, plan.Batch) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("walk after cancel: %v, want context.Canceled", err)
	}
	if _, err := Load(ctx2, path); !errors.Is(err, context.Canceled) {
		t.Errorf("Load after cancel: %v, want context.Canceled", err)
	}
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.txt\nbody: hi\n", map[string]string{"l.txt": "+447400123459\n"})
	_, saved, _ := planAndSave(t, c)
	if err := saved.CheckFiles(ctx2, c.Files()); !errors.Is(err, context.Canceled) {
		t.Errorf("CheckFiles after cancel: %v, want context.Canceled", err)
	}
}

// TestPathsRelativeToPlanFile: the file stores the campaign's and the
// lists' paths relative to its own folder, so that it applies from any
// folder; a plan file of an earlier smsform (paths relative to where plan
// ran, no paths_from) is read as it always was.
func TestPathsRelativeToPlanFile(t *testing.T) {
	root := t.TempDir()
	camp := filepath.Join(root, "campaigns", "spring")
	os.MkdirAll(filepath.Join(camp, "lists"), 0o755)
	os.WriteFile(filepath.Join(camp, "c.yaml"), []byte(header+"recipients:\n  - file: lists/l.txt\nbody: hi\n"), 0o644)
	os.WriteFile(filepath.Join(camp, "lists", "l.txt"), []byte("+447400123459\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "plans"), 0o755)

	// Planned from root, with paths relative to it.
	t.Chdir(root)
	c, err := campaign.Load(filepath.Join("campaigns", "spring", "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compute(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := NewSaved(context.Background(), p, "test", c.Path, filepath.Join("campaigns", "spring", "c.smsstate"), true, c.Files())
	if err != nil {
		t.Fatal(err)
	}
	planPath := filepath.Join("plans", "p.plan")
	if err := Save(planPath, saved); err != nil {
		t.Fatal(err)
	}
	raw := decompress(t, planPath)
	for _, want := range []string{`"campaign_path":"../campaigns/spring/c.yaml"`, `"path":"../campaigns/spring/lists/l.txt"`, `"paths_from":"plan_file"`,
		`"state_path":"../campaigns/spring/c.smsstate","state_is_file":true`} {
		if !strings.Contains(raw, want) {
			t.Errorf("the file does not hold %s:\n%s", want, raw)
		}
	}

	// Applied from elsewhere, by the plan's absolute path.
	t.Chdir(t.TempDir())
	back, err := Open(context.Background(), filepath.Join(root, planPath))
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if want := filepath.Join(camp, "c.yaml"); back.CampaignPath != want {
		t.Errorf("campaign path %q, want %q", back.CampaignPath, want)
	}
	if want := filepath.Join(camp, "c.smsstate"); back.StatePath != want {
		t.Errorf("state path %q, want %q", back.StatePath, want)
	}
	again, err := campaign.Load(back.CampaignPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.CheckFiles(context.Background(), again.Files()); err != nil {
		t.Errorf("from another folder: %v", err)
	}

	// An older plan file: no paths_from, paths relative to where plan ran.
	t.Chdir(root)
	rewrite(t, planPath, func(doc string) string {
		doc = strings.Replace(doc, `"paths_from":"plan_file",`, "", 1)
		return strings.ReplaceAll(doc, `"../campaigns/`, `"campaigns/`)
	})
	reID(t, planPath) // as an smsform of that format would have derived it
	old, err := Open(context.Background(), planPath)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if want := filepath.Join("campaigns", "spring", "c.yaml"); old.CampaignPath != want {
		t.Errorf("older plan: campaign path %q, want %q", old.CampaignPath, want)
	}
	if err := old.CheckFiles(context.Background(), c.Files()); err != nil {
		t.Errorf("older plan, from the folder it was made in: %v", err)
	}
}

func decompress(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCheckFilesList: a plan must list exactly the files the campaign
// reads; with none, one missing or one too many it is refused before any
// file is read.
func TestCheckFilesList(t *testing.T) {
	c := testharness.LoadCampaign(t, header+"recipients:\n  - file: l.txt\nexclude:\n  - file: x.txt\nbody: hi\n",
		map[string]string{"l.txt": "+447400123459\n", "x.txt": "+447400123460\n"})
	_, saved, _ := planAndSave(t, c)
	if len(saved.Files) != 3 {
		t.Fatalf("the plan lists %d files, want 3 (campaign, list, exclusions)", len(saved.Files))
	}
	if err := saved.CheckFiles(context.Background(), c.Files()); err != nil {
		t.Fatalf("the files as saved: %v", err)
	}
	all := saved.Files
	for _, tc := range []struct {
		name  string
		files []FileSum
		want  string
	}{
		{"none", []FileSum{}, "does not list"},
		{"nil", nil, "does not list"},
		{"the exclusions dropped", all[:2], "does not list " + c.Files()[2]},
		{"one more", append(append([]FileSum{}, all...), FileSum{Path: filepath.Join(t.TempDir(), "other.txt")}), "which the campaign does not read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := *saved
			s.Files = tc.files
			err := s.CheckFiles(context.Background(), c.Files())
			if !errors.Is(err, ErrFileList) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrFileList saying %q", err, tc.want)
			}
		})
	}
}

// TestCheckOverwrite: plan --out writes a new file or over a plan file,
// and nothing else: judged by content, whatever the name.
func TestCheckOverwrite(t *testing.T) {
	dir := t.TempDir()
	planPath, _ := savedForTest(t)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := map[string]string{
		"new":             filepath.Join(dir, "new.plan"),
		"an earlier plan": planPath,
	}
	for name, p := range ok {
		if err := CheckOverwrite(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	refused := map[string]string{
		"a state":         write("c.smsstate", []byte("SQLite format 3\x00rest")),
		"a campaign":      write("c.yaml", []byte("version: 1\n")),
		"a list":          write("c.plan", []byte("+447400123459\n")),
		"empty":           write("empty.plan", nil),
		"gzip, not plan":  write("other.gz", gzipped(t, []byte(`{"other":1}`), nil, 0)),
		"a folder":        dir,
		"JSON not zipped": write("plain.plan", []byte(`{"format_version":"1"}`)),
	}
	for name, p := range refused {
		err := CheckOverwrite(p)
		if !errors.Is(err, ErrNotOverwritable) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want ErrNotOverwritable naming %s", name, err, p)
		}
		if err := Save(p, &Saved{FormatVersion: plan.FormatVersion, ID: "x", Plan: &plan.Plan{}}); !errors.Is(err, ErrNotOverwritable) {
			t.Errorf("%s: Save wrote over it (%v)", name, err)
		}
	}
	if b, _ := os.ReadFile(refused["a state"]); string(b) != "SQLite format 3\x00rest" {
		t.Errorf("the state was changed: %q", b)
	}
}

// FuzzOpenBounded feeds the plan-file reader documents followed by a run
// of padding that compresses to almost nothing, read under a small bound:
// the reader must return a plan or ErrNotPlan, never panic, and never
// accept a file that decompresses past its bound.
func FuzzOpenBounded(f *testing.F) {
	b := newBatch("hi", "+447400123459")
	p := &plan.Plan{Campaign: "t", Sender: "ACME", Summary: plan.Summary{Batches: 1, ToSend: 1}, Batches: []plan.Batch{b}}
	var doc bytes.Buffer
	seed, err := withID(&Saved{FormatVersion: plan.FormatVersion, Plan: p}) // a plan the reader takes
	if err != nil {
		f.Fatal(err)
	}
	if err := encodeSaved(&doc, seed); err != nil {
		f.Fatal(err)
	}
	f.Add(doc.Bytes(), byte(' '), uint16(0))
	f.Add(doc.Bytes(), byte(' '), uint16(200))
	f.Add(doc.Bytes(), byte('\n'), uint16(65535))
	f.Add([]byte(`{"format_version":"1","plan":{"batches":[`), byte('['), uint16(300))
	f.Add([]byte(`{"format_version":"1","id":"`), byte('a'), uint16(400))
	f.Add([]byte{}, byte(0), uint16(100))
	lim := limits{ratio: 64, max: 256 << 10}
	f.Fuzz(func(t *testing.T, doc []byte, pad byte, kib uint16) {
		n := int(kib) % 512 // up to 512 KiB: past the cap of 256
		data := gzipped(t, doc, bytes.Repeat([]byte{pad}, 1024), n)
		plain := int64(len(doc)) + int64(n)*1024
		s, err := openSaved(&source{ctx: context.Background(), path: "fuzz.plan", r: bytes.NewReader(data), lim: lim}, nil)
		if err != nil && !errors.Is(err, ErrNotPlan) {
			t.Fatalf("error %v is not ErrNotPlan", err)
		}
		if err == nil && plain > lim.bound(int64(len(data))) {
			t.Fatalf("accepted %d bytes from a file of %d, bound %d", plain, len(data), lim.bound(int64(len(data))))
		}
		if err == nil && (s.Plan == nil || s.ID == "") {
			t.Fatalf("accepted a plan without content")
		}
	})
}

// FuzzFastBatch: the batch decoder that skips encoding/json accepts only
// what encoding/json decodes to the same batch.
func FuzzFastBatch(f *testing.F) {
	for _, b := range []plan.Batch{
		newBatch("hi", "+447400123459", "+12015550133"),
		{ID: "b-1", Body: "héllo \"quoted\" <&>", Encoding: "UCS-2", Segments: 12, Recipients: []string{"+33612345702"}, Zones: []string{"Europe/Paris"}},
		{ID: "b-2", Body: "", Recipients: []string{"x"}},
	} {
		raw, _ := json.Marshal(b)
		f.Add(raw)
	}
	f.Add([]byte(`{"id":"b","body":"\u00e9","encoding":"","segments_per_message":01,"recipients":["+1"]}`))
	f.Add([]byte(`{"id":"b","body":"a","encoding":"","segments_per_message":1,"recipients":["+1"],"zones":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, ok := fastBatch(raw)
		if !ok {
			return
		}
		var want plan.Batch
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("fastBatch accepted %q, encoding/json refuses it: %v", raw, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("fastBatch(%q) = %+v, encoding/json %+v", raw, fast, want)
		}
	})
}

// TestFastBatchTakesWhatSaveWrites: the batches Save writes are decoded
// without encoding/json (else reading a plan of a million batches takes
// several times as long).
func TestFastBatchTakesWhatSaveWrites(t *testing.T) {
	for _, b := range []plan.Batch{
		newBatch("Hi Sophie, your code is 1234", "+447400123459"),
		{ID: "b-1", Body: "ça va", Encoding: "UCS-2", Segments: 2, Recipients: []string{"+33612345702", "+33612345703"}, Zones: []string{"Europe/Paris"}},
	} {
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(&b); err != nil {
			t.Fatal(err)
		}
		got, ok := fastBatch(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		if !ok || !reflect.DeepEqual(got, b) {
			t.Errorf("fastBatch(%s) = %+v, %v", buf.Bytes(), got, ok)
		}
	}
}
