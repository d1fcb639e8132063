package campaign

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestReadRowsMatchesRead holds the map-free rows to the entries Read gives,
// and RenderRow to Render.
func TestReadRowsMatchesRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l.csv")
	data := "name,phone,code\nAnn,+447700900123,1\n,+447700900124,\n\n\"Lee, \"\"B\"\"\",+1,3\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	src := Source{Kind: KindCSV, Path: p, PhoneColumn: "phone"}
	entries, err := readAll(t, src)
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	if err := src.ReadRows(context.Background(), func(r Row) error { rows = append(rows, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(entries) {
		t.Fatalf("%d rows, %d entries", len(rows), len(entries))
	}
	c := mustTemplate(t, `{{ .name }}/{{ .code }}/{{ .phone }}`)
	for i, r := range rows {
		e := entries[i]
		if r.Raw != e.Raw || r.File != e.File || r.Line != e.Line || len(r.Columns) != len(e.Vars) {
			t.Errorf("row %d = %+v, entry %+v", i, r, e)
		}
		for j, name := range r.Columns {
			if e.Vars[name] != r.Values[j] {
				t.Errorf("row %d: %s = %q, entry has %q", i, name, r.Values[j], e.Vars[name])
			}
		}
		want, werr := c.Render(e.Vars, e.Raw)
		got, gerr := c.RenderRow(r, r.Raw)
		if got != want || (werr == nil) != (gerr == nil) {
			t.Errorf("row %d: RenderRow = %q, %v; Render = %q, %v", i, got, gerr, want, werr)
		}
	}
	missing := mustTemplate(t, `{{ .city }}`)
	_, werr := missing.Render(entries[0].Vars, "+1")
	_, gerr := missing.RenderRow(rows[0], "+1")
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Errorf("missing variable: RenderRow %v, Render %v", gerr, werr)
	}
}
