package receive_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/cli"
	"github.com/smsform/smsform/internal/mapping"
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/receive"
	"github.com/smsform/smsform/sandbox"
)

// importFile writes content to a file of dir named name and imports it
// with the sandbox's mapping, a batch of size reports at a time.
func importFile(t *testing.T, rec receive.Recorder, dir, name, content string, size int) (receive.Imported, error) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	im := receive.Import{Reports: sandboxReports, Record: rec, Batch: size}
	return im.File(context.Background(), path, receive.FormatOf(path))
}

// TestImportFiles: CSV rows and JSON lines (a body a line, a list or one
// report) reach the state in batches; a second import of the same file is
// all duplicates.
func TestImportFiles(t *testing.T) {
	dir := t.TempDir()
	o := &observed{inner: openReceiver(t, filepath.Join(dir, "smsform.smsstate"))}
	csv := "message_id,to,status,reason,at\r\n" +
		"m1,+33612340001,DELIVERED,,2026-03-01T12:00:01Z\r\n" +
		"m2,33612340002,UNDELIVERED,Absent subscriber,2026-03-01T12:00:02Z\r\n" +
		"m3,,ENROUTE,,\r\n" +
		"\"m4\",\"+33612340004\",\"DELIVERED\",\"\",\"1772366401\"\r\n" +
		"m5,+33612340005,DELIVERED,,\r\n"
	got, err := importFile(t, o, dir, "dlr.csv", csv, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Lines != 5 || got.Reports != 5 || got.Duplicates != 0 || o.calls != 3 {
		t.Errorf("imported %+v in %d calls", got, o.calls)
	}
	// A status the mapping names neither way is counted by its name, to
	// be seen (a slip of the mapping leaves every report pending).
	if len(got.PendingStatuses) != 1 || got.PendingStatuses["ENROUTE"] != 1 || got.Pending != 1 {
		t.Errorf("pending by status %v, want ENROUTE once", got.PendingStatuses)
	}
	want := []string{"m1 +33612340001 delivered", "m2 +33612340002 undelivered", "m3  pending", "m4 +33612340004 delivered", "m5 +33612340005 delivered"}
	for i, r := range o.reports {
		if s := fmt.Sprintf("%s %s %s", r.ProviderID, r.Phone, r.Delivery); s != want[i] {
			t.Errorf("report %d: %q, want %q", i, s, want[i])
		}
	}
	// Imported again, every report is a duplicate: those without a time
	// (m3, m5) too, as a provider that gives none (Twilio) posts them again.
	if again, err := importFile(t, o, dir, "dlr.csv", csv, 1000); err != nil || again.Duplicates != 5 || again.Reports != 5 || len(again.PendingStatuses) != 0 {
		t.Errorf("imported again: %+v, %v", again, err)
	}

	jsonl := "\uFEFF" + `{"message_id":"j1","to":"+33612340011","status":"DELIVERED","at":"2026-03-01T12:00:01Z"}` + "\n\n" +
		`  {"message_id":"j2","to":"+33612340012","status":"UNDELIVERED","reason":"x"}  ` + "\r\n" +
		`{"message_id":"j3","status":"DELIVERED"}`
	if got, err := importFile(t, o, dir, "dlr.jsonl", jsonl, 1000); err != nil || got.Lines != 3 || got.Reports != 3 || got.Duplicates != 0 {
		t.Errorf("JSON lines: %+v, %v", got, err)
	}
	// A log of bodies that each hold a list: read with the mapping's list.
	listed := receive.Import{Reports: listReports, Record: o}
	path := filepath.Join(dir, "pages.ndjson")
	os.WriteFile(path, []byte(`{"results":[{"messageId":"p1","status":"DELIVERED"},{"messageId":"p2","status":"DELIVERED"}]}`+"\n"+`{"results":[]}`+"\n"), 0o600)
	if got, err := listed.File(context.Background(), path, receive.JSONLines); err != nil || got.Lines != 2 || got.Reports != 2 {
		t.Errorf("pages: %+v, %v", got, err)
	}
}

// TestImportStops: a line the mapping cannot read stops the import,
// naming it, once every report before it is recorded; a header without a
// column of the mapping stops it before anything.
func TestImportStops(t *testing.T) {
	dir := t.TempDir()
	o := &observed{inner: openReceiver(t, filepath.Join(dir, "smsform.smsstate"))}
	good := "m%d,+3361234%04d,DELIVERED,,2026-03-01T12:00:01Z\n"
	var b strings.Builder
	b.WriteString("message_id,to,status,reason,at\n")
	for i := range 5 {
		fmt.Fprintf(&b, good, i, i)
	}
	b.WriteString("m9,+33612349999,DELIVERED,,noon\n")
	fmt.Fprintf(&b, good, 10, 10)
	got, err := importFile(t, o, dir, "bad.csv", b.String(), 2)
	var le *receive.LineError
	if !errors.As(err, &le) || le.Line != 7 || !strings.Contains(err.Error(), `bad.csv:7: "noon" at /at is not a time`) {
		t.Fatalf("err %v", err)
	}
	if got.Reports != 5 || len(o.reports) != 5 {
		t.Errorf("recorded %+v (%d reached the state), want the 5 before the line", got, len(o.reports))
	}

	for name, content := range map[string]string{
		"noheader.csv":  "id,number,state\nm1,+33612340001,DELIVERED\n",
		"empty.csv":     "",
		"ragged.csv":    "message_id,to,status,reason,at\nm1,+33612340001\n",
		"first.jsonl":   "{\"message_id\":\"m1\"}\n",
		"notjson.jsonl": "{\"message_id\":\n",
		"twice.csv":     "message_id,to,status,status,at\nm1,+33612340001,DELIVERED,FAILED,\n",
	} {
		o := &observed{}
		if _, err := importFile(t, o, dir, name, content, 1000); !errors.As(err, &le) || o.calls != 0 {
			t.Errorf("%s: %v, %d calls", name, err, o.calls)
		}
	}
	if _, err := importFile(t, &observed{}, dir, "short.csv", "message_id,to,status,reason,at\nm1,+33612340001,DELIVERED\n", 10); err == nil ||
		!strings.Contains(err.Error(), "short.csv:2: the row has 3 fields and the header row 5") {
		t.Errorf("a short row: %v", err)
	}
	long := strings.Repeat(" ", mapping.MaxBody+10) + "{}\n"
	if _, err := importFile(t, &observed{}, dir, "long.jsonl", long, 10); err == nil || !strings.Contains(err.Error(), "long.jsonl:1: a line longer than") {
		t.Errorf("a long line: %v", err)
	}
}

// TestImportIdempotentWithReceive: the reports smsform receive took,
// imported from a file (CSV and JSON lines), are all duplicates; and
// reports imported before the provider's webhook posts them make every
// post a duplicate, the state ending as the sandbox says.
func TestImportIdempotentWithReceive(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			// Received first, imported after.
			p := newProject(t, backend, 60)
			rc := p.receiveInProcess(t)
			p.startSandbox(t, rc.url, sandbox.Config{})
			p.apply(t)
			rs := p.sb.WaitReports(time.Minute)
			n := rs.Counts.Delivered + rs.Counts.Undelivered
			for _, f := range exportFiles(t, p.dir, rs) {
				if got := importCommand(t, p, f); got["new"] != 0 || got["duplicates"] != n || got["reports"] != n {
					t.Errorf("%s after receive: %v, want %d duplicates", filepath.Base(f), got, n)
				}
			}
			checkAgainstSandbox(t, p, rs)

			// Imported first, received after.
			q := newProject(t, backend, 60)
			addr := freePort(t)
			q.startSandbox(t, "http://"+addr, sandbox.Config{})
			q.apply(t)
			made := waitMade(t, q, 60)
			files := exportFiles(t, q.dir, made)
			if got := importCommand(t, q, files[0]); got["new"] != 60 || got["duplicates"] != 0 {
				t.Errorf("import before receive: %v", got)
			}
			pr := startProcess(t, q, addr)
			rs = q.sb.WaitReports(time.Minute)
			pr.terminate()
			if reports, dups := posted(pr.log()); reports == 0 || reports != dups {
				t.Errorf("after the import, receive took %d reports, %d of them duplicates", reports, dups)
			}
			checkAgainstSandbox(t, q, rs)
		})
	}
}

// waitMade waits until the sandbox has made a report of each of n
// messages (posted or not), and returns them.
func waitMade(t *testing.T, p *project, n int) sandbox.Reports {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		rs := p.sb.Reports()
		made := 0
		for _, cb := range rs.Callbacks {
			if cb.Kind == "report" && !cb.Duplicate {
				made++
			}
		}
		if made >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox made %d reports of %d", made, n)
		}
	}
}

// exportFiles writes the sandbox's reports (each once) as a provider's
// export would: a CSV file and a JSON lines file.
func exportFiles(t *testing.T, dir string, rs sandbox.Reports) []string {
	t.Helper()
	var csv, jsonl strings.Builder
	csv.WriteString("message_id,to,status,reason,at\n")
	for _, cb := range rs.Callbacks {
		if cb.Kind != "report" || cb.Duplicate {
			continue
		}
		r := cb.Report
		fmt.Fprintf(&csv, "%s,%s,%s,%q,%s\n", r.MessageID, r.To, r.Status, r.Reason, r.At)
		b, _ := json.Marshal(r)
		jsonl.Write(append(b, '\n'))
	}
	var files []string
	for name, content := range map[string]string{"export.csv": csv.String(), "export.jsonl": jsonl.String()} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	return files
}

// importCommand runs smsform reports import FILE --json for p.
func importCommand(t *testing.T, p *project, file string) map[string]int {
	t.Helper()
	var out, stderr strings.Builder
	err := cli.Run(context.Background(), []string{"reports", "import", file, "--json", "--project", p.dir}, cli.Env{Stdout: &out, Stderr: &stderr, Getenv: p.getenv})
	if err != nil {
		t.Fatalf("reports import %s: %v\n%s", filepath.Base(file), err, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	counts := map[string]int{}
	for k, v := range got {
		if f, ok := v.(float64); ok {
			counts[k] = int(f)
		}
	}
	return counts
}

// TestImportExportColumns: a provider whose export names its columns
// otherwise than its webhook's fields is read through
// provider.reports.export, with the webhook's statuses; without it the
// refusal says so. JSON lines keep the posted body's pointers.
func TestImportExportColumns(t *testing.T) {
	dir := t.TempDir()
	o := &observed{inner: openReceiver(t, filepath.Join(dir, "smsform.smsstate"))}
	csv := "Sid,Recipient,State,When\n" +
		"x1,+33612340021,DELIVERED,2026-03-01T12:00:01Z\n" +
		"x2,+33612340022,UNDELIVERED,\n"
	if _, err := importFile(t, &observed{}, dir, "export.csv", csv, 10); err == nil || !strings.Contains(err.Error(), "name them under provider.reports.export") {
		t.Errorf("the webhook's mapping against the export: %v", err)
	}
	exported := *sandboxReports
	exported.Export = &mapping.ExportColumns{ID: ptr("/Sid"), Number: ptr("/Recipient"), Status: rawjson.MustPointer("/State"), At: ptr("/When")}
	path := filepath.Join(dir, "export.csv")
	im := receive.Import{Reports: &exported, Record: o}
	got, err := im.File(context.Background(), path, receive.CSV)
	if err != nil || got.Reports != 2 {
		t.Fatalf("imported %+v, %v", got, err)
	}
	want := []string{"x1 +33612340021 delivered 2026-03-01T12:00:01Z", "x2 +33612340022 undelivered 0001-01-01T00:00:00Z"}
	for i, r := range o.reports {
		if s := fmt.Sprintf("%s %s %s %s", r.ProviderID, r.Phone, r.Delivery, r.At.Format(time.RFC3339)); s != want[i] {
			t.Errorf("report %d: %q, want %q", i, s, want[i])
		}
	}
	// An export mapping naming a column the file lacks is refused as such.
	exported.Export.Reason = ptr("/Error")
	if _, err := im.File(context.Background(), path, receive.CSV); err == nil || !strings.Contains(err.Error(), "provider.reports.export (") ||
		!strings.Contains(err.Error(), "/Error names no column of the header") {
		t.Errorf("a column the export lacks: %v", err)
	}
	jsonl := `{"message_id":"j9","to":"+33612340029","status":"DELIVERED"}` + "\n"
	jpath := filepath.Join(dir, "posted.jsonl")
	os.WriteFile(jpath, []byte(jsonl), 0o600)
	if got, err := im.File(context.Background(), jpath, receive.JSONLines); err != nil || got.Reports != 1 {
		t.Errorf("JSON lines with an export mapping: %+v, %v", got, err)
	}
	// A national number is read in the mapping's default_region, in an
	// export as in a post.
	exported.Export.Reason = nil
	exported.DefaultRegion = "FR"
	os.WriteFile(path, []byte("Sid,Recipient,State,When\nx3,06 12 34 00 23,DELIVERED,\n"), 0o600)
	o.reports = nil
	if got, err := im.File(context.Background(), path, receive.CSV); err != nil || got.Reports != 1 || len(o.reports) != 1 || o.reports[0].Phone != "+33612340023" {
		t.Errorf("a national number in FR: %+v, %v, %+v", got, err, o.reports)
	}
}

// TestImportCSVEdges: a byte-order mark before a quoted header is set
// aside; a quote never closed is named by the row it opened on.
func TestImportCSVEdges(t *testing.T) {
	dir := t.TempDir()
	o := &observed{inner: openReceiver(t, filepath.Join(dir, "smsform.smsstate"))}
	bom := "\ufeff\"message_id\",\"to\",\"status\",\"reason\",\"at\"\r\n\"m1\",\"+33612340031\",\"DELIVERED\",\"\",\"\"\r\n"
	if got, err := importFile(t, o, dir, "bom.csv", bom, 10); err != nil || got.Reports != 1 {
		t.Errorf("a BOM before a quoted header: %+v, %v", got, err)
	}
	var b strings.Builder
	b.WriteString("message_id,to,status,reason,at\n")
	for i := range 20 {
		status := "DELIVERED"
		if i == 10 {
			status = `"DELIVERED`
		}
		fmt.Fprintf(&b, "u%d,+3361234%04d,%s,,\n", i, i, status)
	}
	var le *receive.LineError
	if _, err := importFile(t, &observed{inner: o.inner}, dir, "unterminated.csv", b.String(), 1000); !errors.As(err, &le) || le.Line != 12 {
		t.Errorf("a quote never closed on line 12: %v", err)
	}
}
