package campaign

import (
	"errors"
	"strings"
	"testing"
)

// TestMissingHint: a body reading a column that a list lacks is an error
// default cannot help with, so the hint says to add the column (it may be
// empty) and names the lists that lack it, never suggesting a default.
func TestMissingHint(t *testing.T) {
	head := "version: 1\nname: t\nsender: ACME\n"
	files := map[string][]byte{
		"all.csv":  []byte("phone,name,code,zip code\n+447400123459,Ann,A1,N1\n"),
		"vip.csv":  []byte("\uFEFFphone , name\n+447400123458,Bob\n"),
		"zip.csv":  []byte("mobile,zip code,phone2\n+447400123457,N2,x\n"),
		"vip2.csv": []byte("phone,name\n+447400123456,Cy\n"),
		"list.txt": []byte("+447400123455\n"),
	}
	tests := []struct {
		name, campaign, body string
		want                 string
	}{
		{"one list lacks it", "  - file: all.csv\n  - file: vip.csv\n  - file: vip.csv\n", `{{ default "none" .code }}`,
			`add the column "code" to every recipient list that lacks it (vip.csv); its values may be empty (default fills an empty value, never a missing column)`},
		{"two columns", "  - file: all.csv\n  - file: vip.csv\n  - file: zip.csv\n    phone_column: mobile\n", `{{ .code }} {{ index . "zip code" }}`,
			`add the columns "code", "zip code" to every recipient list that lacks them (vip.csv and zip.csv); their values may be empty`},
		{"the phone column is no variable", "  - file: zip.csv\n    phone_column: mobile\n", `{{ .mobile }}`,
			`add the column "mobile" to every recipient list that lacks it (zip.csv)`},
		{"text list", "  - file: list.txt\n  - file: vip2.csv\n", `{{ .code }}`,
			`add the column "code" to every recipient list that lacks it (vip2.csv); its values may be empty (default fills an empty value, never a missing column); list.txt has no columns: move those numbers into a .csv list with the column "code"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeCase(t, head+"body: '"+tt.body+"'\nrecipients:\n"+tt.campaign, files)
			c, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			_, rerr := c.Render(map[string]string{"name": "Bob"}, "+447400123458")
			var me *MissingError
			if !errors.As(rerr, &me) {
				t.Fatalf("Render: %v (%T), want a *MissingError", rerr, rerr)
			}
			h := c.MissingHint(rerr)
			if !strings.Contains(h, tt.want) {
				t.Errorf("hint\n%s\nlacks\n%s", h, tt.want)
			}
			if strings.Contains(h, "give it a default") || strings.Contains(h, "+44") {
				t.Errorf("hint %q suggests a default or shows a number", h)
			}
		})
	}
	if h := (&Campaign{}).MissingHint(errors.New("render body: something else")); h != "" {
		t.Errorf("hint of another error: %q", h)
	}
}
