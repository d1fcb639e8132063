package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readAll(t *testing.T, s Source) ([]Entry, error) {
	t.Helper()
	var got []Entry
	err := s.Read(context.Background(), func(e Entry) error {
		got = append(got, e)
		return nil
	})
	return got, err
}

func writeList(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadGoodCampaign(t *testing.T) {
	c, err := Load("testdata/good/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join("testdata", "good", "lists", "customers.csv")
	txtPath := filepath.Join("testdata", "good", "lists", "optout.txt")
	tests := []struct {
		src  Source
		want []Entry
	}{
		// BOM, CRLF, a quoted field over two lines, a blank line and an all-empty row.
		{c.Recipients[0], []Entry{
			{Raw: "+447700900123", Vars: map[string]string{"name": "ann lee", "note": "two\nlines"}, File: csvPath, Line: 2},
			{Raw: "07700900124", Vars: map[string]string{"name": "", "note": "x"}, File: csvPath, Line: 6},
		}},
		{c.Recipients[1], []Entry{
			{Raw: "+447700900126", Vars: map[string]string{"name": "Cid"}, File: filepath.Join("testdata", "good", "lists", "people.csv"), Line: 2},
		}},
		{c.Recipients[2], []Entry{
			{Raw: "+14155550101", File: "testdata/good/full.yaml", Line: 14},
			{Raw: "07700 900125", File: "testdata/good/full.yaml", Line: 15},
		}},
		{c.Exclude[0], []Entry{
			{Raw: "+447700900999", File: txtPath, Line: 3},
			{Raw: "07700 900998", File: txtPath, Line: 4},
		}},
	}
	for i, tt := range tests {
		got, err := readAll(t, tt.src)
		if err != nil {
			t.Fatalf("source %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("source %d (%s):\n got %+v\nwant %+v", i, tt.src.File, got, tt.want)
		}
	}
	// The shared body renders for a CSV entry, with default and title.
	e, _ := readAll(t, c.Recipients[0])
	if got, err := c.Render(e[1].Vars, "+447700900124"); err != nil || got != "Hi Friend, the spring sale starts today." {
		t.Errorf("Render = %q, %v", got, err)
	}
}

func TestReadCSV(t *testing.T) {
	tests := []struct {
		name, data, column string
		want               []Entry // File is filled in
	}{
		{name: "phone only", data: "phone\n+1\n+2\n", want: []Entry{{Raw: "+1", Line: 2}, {Raw: "+2", Line: 3}}},
		{name: "no rows", data: "phone,name\n", want: nil},
		{name: "no final newline", data: "phone,name\n+1,Ann", want: []Entry{{Raw: "+1", Vars: map[string]string{"name": "Ann"}, Line: 2}}},
		{name: "spaces around the number and header", data: " phone , name\n  +1  , Ann \n", want: []Entry{{Raw: "+1", Vars: map[string]string{"name": " Ann "}, Line: 2}}},
		{name: "phone column in the middle", data: "name,mobile,city\nAnn,+1,Paris\n", column: "mobile",
			want: []Entry{{Raw: "+1", Vars: map[string]string{"name": "Ann", "city": "Paris"}, Line: 2}}},
		{name: "blank lines between rows", data: "phone\n\n+1\n\n\n+2\n", want: []Entry{{Raw: "+1", Line: 3}, {Raw: "+2", Line: 6}}},
		{name: "empty number kept for plan to report", data: "phone,name\n,Ann\n", want: []Entry{{Raw: "", Vars: map[string]string{"name": "Ann"}, Line: 2}}},
		{name: "quoted comma and quotes", data: "phone,name\n+1,\"Lee, \"\"Ann\"\"\"\n", want: []Entry{{Raw: "+1", Vars: map[string]string{"name": `Lee, "Ann"`}, Line: 2}}},
		{name: "header after blank lines", data: "\n\nphone\n+1\n", want: []Entry{{Raw: "+1", Line: 4}}},
		{name: "unicode", data: "phone,name\n+1,Zoë 🎉\n", want: []Entry{{Raw: "+1", Vars: map[string]string{"name": "Zoë 🎉"}, Line: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeList(t, "list.csv", tt.data)
			col := tt.column
			if col == "" {
				col = "phone"
			}
			got, err := readAll(t, Source{Kind: KindCSV, Path: p, PhoneColumn: col})
			if err != nil {
				t.Fatal(err)
			}
			for i := range tt.want {
				tt.want[i].File = p
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestReadCSVEntriesMayBeKept(t *testing.T) {
	// plan keeps entries past fn's return and renders them on other
	// goroutines, so each entry's Vars must be its own.
	p := writeList(t, "list.csv", "phone,name\n+1,Ann\n+2,Bob\n")
	got, err := readAll(t, Source{Kind: KindCSV, Path: p, PhoneColumn: "phone"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Vars["name"] != "Ann" || got[1].Vars["name"] != "Bob" {
		t.Errorf("entries share their Vars: %+v", got)
	}
}

func TestReadText(t *testing.T) {
	p := writeList(t, "list.txt", "\uFEFF+1\r\n# comment\r\n   \r\n  +2  \r\n\t# indented comment\n+3")
	got, err := readAll(t, Source{Kind: KindText, Path: p})
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{Raw: "+1", File: p, Line: 1}, {Raw: "+2", File: p, Line: 4}, {Raw: "+3", File: p, Line: 6}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
	empty := writeList(t, "empty.txt", "")
	if got, err := readAll(t, Source{Kind: KindText, Path: empty}); err != nil || len(got) != 0 {
		t.Errorf("empty text list: %v, %v", got, err)
	}
}

func TestReadStopsAtFnError(t *testing.T) {
	stop := errors.New("stop")
	for _, s := range []Source{
		{Kind: KindCSV, Path: writeList(t, "l.csv", "phone\n+1\n+2\n")},
		{Kind: KindText, Path: writeList(t, "l.txt", "+1\n+2\n")},
		{Kind: KindInline, Numbers: []string{"+1", "+2"}},
	} {
		n := 0
		err := s.Read(context.Background(), func(Entry) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Errorf("kind %d: err = %v after %d entries, want stop after 1", s.Kind, err, n)
		}
	}
}

func TestReadHonoursContext(t *testing.T) {
	big := "phone\n" + strings.Repeat("+14155550101\n", 5000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, s := range []Source{
		{Kind: KindCSV, Path: writeList(t, "l.csv", big)},
		{Kind: KindText, Path: writeList(t, "l.txt", big)},
		{Kind: KindInline, Numbers: strings.Split(strings.Repeat("+1,", 5000), ",")},
	} {
		n := 0
		err := s.Read(ctx, func(Entry) error {
			n++
			if n == 10 {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) || n > ctxEvery+1 {
			t.Errorf("kind %d: err = %v after %d entries, want context.Canceled soon after cancel", s.Kind, err, n)
		}
	}
}

func TestReadMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gone.csv")
	err := Source{Kind: KindCSV, Path: p}.Read(context.Background(), func(Entry) error { return nil })
	var ce *Error
	if !errors.As(err, &ce) || ce.File != p || !strings.Contains(ce.Msg, "does not exist") {
		t.Errorf("err = %v", err)
	}
}

func BenchmarkReadCSV(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("phone,name,city\n")
	for range 10000 {
		sb.WriteString("+447700900123,Ann Lee,London\n")
	}
	p := filepath.Join(b.TempDir(), "l.csv")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	s := Source{Kind: KindCSV, Path: p, PhoneColumn: "phone"}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Read(context.Background(), func(Entry) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
