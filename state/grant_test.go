package state

import (
	"strings"
	"testing"
)

func TestReadOnlyGrants(t *testing.T) {
	got, err := ReadOnlyGrants(MustParseLocation("postgres://apply:s3cret@db.example/sms?schema=team_a&sslmode=require"), `plan"er`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`CREATE SCHEMA IF NOT EXISTS "team_a" AUTHORIZATION "apply"`,
		`GRANT USAGE ON SCHEMA "team_a" TO "plan""er"`,
		`GRANT SELECT ON ALL TABLES IN SCHEMA "team_a" TO "plan""er"`,
		`ALTER DEFAULT PRIVILEGES FOR ROLE "apply" IN SCHEMA "team_a" GRANT SELECT ON TABLES TO "plan""er"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ReadOnlyGrants =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(strings.Join(got, ""), "s3cret") {
		t.Error("the SQL holds the password")
	}
	if got, _ := ReadOnlyGrants(MustParseLocation("host=db user=app dbname=x"), "ro"); !strings.Contains(got[1], `SCHEMA "smsform" TO "ro"`) {
		t.Errorf("a keyword string's default schema: %v", got)
	}
	for loc, role := range map[string]string{
		"campaign.smsstate":             "ro",       // a file
		"postgres://apply@db/x":         " ",        // no role
		"postgres://apply@db/x?schema=": "ro\nDROP", // a line break would end the printed comment
	} {
		if _, err := ReadOnlyGrants(MustParseLocation(loc), role); err == nil {
			t.Errorf("ReadOnlyGrants(%q, %q) = nil error", loc, role)
		}
	}
	if r := Role(MustParseLocation("postgres://apply:pw@db/x")); r != "apply" {
		t.Errorf("Role = %q, want apply", r)
	}
}
