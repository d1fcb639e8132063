package report

import (
	"strings"
	"testing"

	"github.com/smsform/smsform/plan"
)

// A pull-request comment names a PostgreSQL state by its database (and a
// schema that is not smsform's), never its host, port, socket folder,
// role, password or options: those are the infrastructure's. A file state
// keeps its name.
func TestFirstSendNamesNoInfrastructure(t *testing.T) {
	for loc, want := range map[string]string{
		"postgres://smsform_plan@/campaigns?host=/var/run/postgresql":                          "in the PostgreSQL state (database `campaigns`)",
		"postgres://smsform_plan:xxxxx@db.internal.example:5432/campaigns?sslmode=verify-full": "in the PostgreSQL state (database `campaigns`)",
		"postgresql://ro@db.internal.example/campaigns?schema=team_b":                          "in the PostgreSQL state (database `campaigns`, schema `team_b`)",
		"postgres://ro@db.internal.example/campaigns?schema=smsform":                           "in the PostgreSQL state (database `campaigns`)",
		"host=/var/run/postgresql user=smsform_plan password=xxxxx dbname='camp aigns'":        "in the PostgreSQL state (database `camp aigns`)",
		"user=smsform_plan host=db.internal.example":                                           "in the PostgreSQL state:",
		"…/.smsform/smsform.smsstate":                                                          "in the state `…/.smsform/smsform.smsstate`",
	} {
		p := &plan.Plan{Campaign: "news", Sender: "ACME", State: plan.StateStamp{Location: loc, FirstSend: true}}
		var b strings.Builder
		if err := WriteMarkdown(&b, p, Output{}); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		if !strings.Contains(md, "No record of campaign `news` "+want) {
			t.Errorf("%s: the comment lacks %q:\n%s", loc, want, md)
		}
		for _, leak := range []string{"smsform_plan", "/var/run", "db.internal", "5432", "xxxxx", "sslmode", "postgres://"} {
			if strings.Contains(md, leak) {
				t.Errorf("%s: the comment shows %q:\n%s", loc, leak, md)
			}
		}
		p.State.Lineage = "0123"
		b.Reset()
		WriteMarkdown(&b, p, Output{})
		if !strings.Contains(b.String(), "T"+strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(want, "in "), ":"), "t")+" records nothing yet of campaign `news`") {
			t.Errorf("%s with a lineage:\n%s", loc, b.String())
		}
	}
}
