package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
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

// tree writes files (path: content; content "->target" makes a symbolic
// link to target, relative to root) under a fresh root and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(data, "->"); ok {
			err = os.Symlink(filepath.Join(root, target), p)
		} else {
			err = os.WriteFile(p, []byte(data), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// secretLine stands for the first line of a system file such as /etc/passwd.
const secretLine = "root:x:0:0:SECRET-LINE:/root:/bin/bash"

// TestListLinks: a list reached through a symbolic link that leaves the
// campaign's folder (or its project's) is refused, without a word of what
// the file holds; a path written outside the folder stays allowed.
func TestListLinks(t *testing.T) {
	files := map[string]string{
		"outside/passwd":          secretLine + "\ndaemon:x:1:1\n",
		"outside/list.txt":        "+14155550101\n",
		"outside/dir/ok.txt":      "+14155550101\n",
		"proj/smsform.yaml":       "version: 1\n",
		"proj/shared/optout.txt":  "+14155550101\n",
		"proj/c/in.txt":           "+14155550101\n",
		"proj/c/lists/in.txt":     "->proj/c/in.txt",          // a link that stays in the folder
		"proj/c/lists/shared.txt": "->proj/shared/optout.txt", // leaves the folder, stays in the project
		"proj/c/lists/passwd.csv": "->outside/passwd",
		"proj/c/lists/passwd.txt": "->outside/passwd",
		"proj/c/linked":           "->outside/dir", // a folder link
		"outside/passwd.csv":      "->outside/passwd",
		"outside/dir/up.txt":      "->outside/list.txt", // leaves its own folder
	}
	root := tree(t, files)
	tests := []struct {
		file    string
		refused bool
		escapes bool
	}{
		{"in.txt", false, false},
		{"lists/in.txt", false, false},
		{"lists/shared.txt", false, true},
		{"../shared/optout.txt", false, true},
		{"lists/passwd.csv", true, false},
		{"lists/passwd.txt", true, false},
		{"linked/ok.txt", true, false},
		{"../../outside/list.txt", false, true},
		{filepath.Join(root, "outside", "list.txt"), false, true},
		{"../../outside/passwd.csv", false, true}, // written outside, a link within its own folder
		{"../../outside/dir/up.txt", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := filepath.Join(root, "proj", "c", "campaign.yaml")
			if err := os.WriteFile(p, []byte(okHead+"recipients:\n  - file: "+tt.file+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Load(p)
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "is a symbolic link to") {
					t.Fatalf("err = %v, want a refused link", err)
				}
				var ce *Error
				if !errors.As(err, &ce) || ce.Line != 6 || !strings.Contains(ce.Hint, "write the list's own path") {
					t.Errorf("err = %#v, want line 6 and a hint", ce)
				}
				if strings.Contains(err.Error(), "SECRET") {
					t.Errorf("err shows the file's content: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Recipients[0].Escapes; got != tt.escapes {
				t.Errorf("Escapes = %v, want %v", got, tt.escapes)
			}
		})
	}
}

// TestListErrorsShowNoContent: a list outside the campaign's folder may be
// any file: its errors never show what it holds. Text that an error does
// show is quoted so that it cannot leave its line or a code fence.
func TestListErrorsShowNoContent(t *testing.T) {
	root := tree(t, map[string]string{
		"outside/secret.csv": secretLine + "\n",
		"outside/dups.csv":   "phone,SECRET-LINE,SECRET-LINE\n",
		"c/fence.csv":        "\"```\nrm -rf /\",name\n+14155550101,x\n",
		"c/ctrl.csv":         "phone,na\x1bme\n",
		"c/binary.csv":       "phone\n\x00\x01\x02",
	})
	tests := []struct {
		file string
		want string
	}{
		{"../outside/secret.csv", `no column "phone" in the header row (a list outside the campaign's folder does not show its header)`},
		{"../outside/dups.csv", `column 3: column name is used twice`},
		{"fence.csv", `no column "phone" in the header row (columns: "\x60\x60\x60\nrm -rf /", name)`},
		{"ctrl.csv", `file holds binary data (a control character in the header row)`},
		{"binary.csv", `file holds binary data (a NUL byte)`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := filepath.Join(root, "c", "campaign.yaml")
			if err := os.WriteFile(p, []byte(okHead+"recipients:\n  - file: "+tt.file+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			_, err = readAll(t, c.Recipients[0])
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %T", err)
			}
			shown := ce.Error() + ce.Hint
			for _, bad := range []string{"SECRET", "`", "\n", "\x1b"} {
				if strings.Contains(shown, bad) {
					t.Errorf("error shows %q: %q", bad, shown)
				}
			}
		})
	}
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, quote, plain string }{
		{"lists/a.csv", `"lists/a.csv"`, "lists/a.csv"},
		{"first name", `"first name"`, "first name"},
		{"```", `"\x60\x60\x60"`, `"\x60\x60\x60"`},
		{"a\nb\tc", `"a\nb\tc"`, `"a\nb\tc"`},
		{"\u202eevil", `"\u202eevil"`, `"\u202eevil"`}, // a bidi override reorders what a reader sees
		{"é ü", `"é ü"`, "é ü"},
		{"bad\xffutf8", `"bad\xffutf8"`, `"bad\xffutf8"`},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.quote {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.quote)
		}
		if back, err := strconv.Unquote(Quote(tt.in)); err != nil || back != tt.in {
			t.Errorf("Unquote(Quote(%q)) = %q, %v", tt.in, back, err)
		}
		if got := Plain(tt.in); got != tt.plain {
			t.Errorf("Plain(%q) = %s, want %s", tt.in, got, tt.plain)
		}
		if got := Plain(Plain(tt.in)); got != Plain(tt.in) {
			t.Errorf("Plain(Plain(%q)) = %s", tt.in, got)
		}
	}
}
