package campaign

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smsform/smsform/compliance"
)

func TestComplianceKeys(t *testing.T) {
	dir := t.TempDir()
	c := strings.Replace(tinyCampaign, "body:", `kind: transactional
compliance: [in, gsm7]
dlt:
  template_id: "1107161234567890123"
  template: "Dear {#var#}, your code is {#var#}"
  entity_id: "1101234567890"
  header: ACMEIN
body:`, 1)
	write(t, dir, map[string]string{".git/HEAD": "", "c.yaml": c})
	got, err := Load(filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cc := got.Compliance
	if cc.Kind != compliance.Transactional || !slices.Equal(cc.Sets, []string{"in", "gsm7"}) || cc.Rules == nil {
		t.Errorf("Compliance = %+v", cc)
	}
	if cc.DLT == nil || cc.DLT.TemplateID != "1107161234567890123" || cc.Template == nil || cc.Template.Variables() != 2 || cc.Template.MaxVariable() != 30 {
		t.Errorf("DLT = %+v, template %+v", cc.DLT, cc.Template)
	}
}

// TestComplianceFromProject: the project's kind and rule sets hold for its
// campaigns; a campaign adds rule sets and may say its own kind.
func TestComplianceFromProject(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"smsform.yaml": "version: 1\nkind: transactional\ncompliance: [us]\nopt_out_words: [ARRET]\n",
		"a.yaml":       tinyCampaign,
		"b.yaml":       strings.Replace(tinyCampaign, "body:", "kind: marketing\ncompliance: [gsm7, us]\nbody:", 1),
	})
	a, err := Load(filepath.Join(dir, "a.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Compliance.Kind != compliance.Transactional || !slices.Equal(a.Compliance.Sets, []string{"us"}) {
		t.Errorf("a: %+v", a.Compliance)
	}
	b, err := Load(filepath.Join(dir, "b.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Compliance.Kind != compliance.Marketing || !slices.Equal(b.Compliance.Sets, []string{"us", "gsm7"}) {
		t.Errorf("b: %+v", b.Compliance)
	}
	if v := b.Compliance.Rules.CheckBody("Sale! Reply ARRET", compliance.Marketing); len(v) != 0 {
		t.Errorf("the project's opt_out_words are not used: %v", v)
	}
	// They add to the law's words: STOP still counts.
	if v := b.Compliance.Rules.CheckBody("Sale! Reply STOP", compliance.Marketing); len(v) != 0 {
		t.Errorf("the project's opt_out_words replaced the law's STOP: %v", v)
	}
	// A project's words that its rule sets do not check are checked by
	// the rule set a campaign adds.
	write(t, dir, map[string]string{
		"smsform.yaml": "version: 1\nopt_out_words: [ARRET]\n",
		"c.yaml":       strings.Replace(tinyCampaign, "body:", "compliance: [uk]\nbody:", 1),
	})
	c, err := Load(filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Compliance.Rules.CheckBody("Sale! ARRET", compliance.Marketing); len(v) != 0 {
		t.Errorf("the project's opt_out_words are not used by the campaign's rule set: %v", v)
	}
}

func TestComplianceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, project, keys string
		want                []string
		not                 string // a message that must not come with them
	}{
		{name: "unknown set", keys: "compliance: [us, fr]\n", want: []string{`c.yaml:6: compliance[1]: unknown rule set "fr": the rule sets are gsm7, in, uk, us`}},
		{name: "set twice", keys: "compliance: [us, us]\n", want: []string{`rule set "us" is named twice`}},
		{name: "not a list", keys: "compliance: us\n", want: []string{"compliance: must be a list of rule sets", "compliance: [gsm7, in, uk, us]"}},
		{name: "bad kind", keys: "kind: promo\n", want: []string{`c.yaml:6: kind: "promo" is not a kind of campaign`, "kind: transactional"}},
		{name: "in without dlt", keys: "compliance: [in]\n", want: []string{"c.yaml:6: compliance: the in rule set checks every message against the campaign's DLT template"}},
		{name: "dlt without in", keys: "compliance: [us]\ndlt: {template_id: \"1\", template: \"Hi {#var#}\"}\n", want: []string{"c.yaml:7: dlt: a DLT template is checked by the in rule set"}},
		{name: "dlt without sets", keys: "dlt: {template_id: \"1\", template: \"Hi {#var#}\"}\n", want: []string{"c.yaml:6: dlt: a DLT template is checked by the in rule set"}},
		{name: "template id a number", keys: "compliance: [in]\ndlt: {template_id: 1107161234567890123, template: \"Hi {#var#}\"}\n",
			want: []string{"dlt.template_id: the template id is written as a YAML number", `quote it: template_id: "1107161234567890123"`}, not: "needs template_id"},
		{name: "no template", keys: "compliance: [in]\ndlt: {template_id: \"1\"}\n", want: []string{"dlt: needs template_id and template"}},
		{name: "bad placeholder", keys: "compliance: [in]\ndlt:\n  template_id: \"1\"\n  template: \"Dear {#name#}\"\n",
			want: []string{"c.yaml:9: dlt.template: placeholder {#name#} is not one smsform knows"}},
		{name: "max_variable too large", keys: "compliance: [in]\ndlt:\n  template_id: \"1\"\n  template: \"Hi {#var#}\"\n  max_variable: 1001\n",
			want: []string{"c.yaml:10: dlt.max_variable: 1001 is too large: the most allowed is 1000", "1 to 1000 characters"}, not: "dlt.template"},
		{name: "max_variable 0", keys: "compliance: [in]\ndlt:\n  template_id: \"1\"\n  template: \"Hi {#var#}\"\n  max_variable: 0\n",
			want: []string{"c.yaml:10: dlt.max_variable: 0 is too small", "leave max_variable out for the rule set's limit of 30"}, not: "no bound"},
		{name: "nested dlt key", keys: "compliance: [in]\ndlt: {template_id: \"1\", template: \"Hi {#var#}\", extra: [1]}\n", want: []string{"dlt.extra: must be text or a number"}},
		{name: "words without sets", keys: "opt_out_words: [STOP]\n", want: []string{"opt_out_words: opt-out words are checked by a rule set"}},
		{name: "words without an opt-out rule", keys: "compliance: [gsm7]\nopt_out_words: [STOP]\n", want: []string{"opt_out_words: no rule set of compliance checks opt-out words"}},
		{name: "empty word", keys: "compliance: [us]\nopt_out_words: [\" \"]\n", want: []string{"opt_out_words[0]: an opt-out word must not be empty"}},
		{name: "project unknown set", project: "version: 1\ncompliance: [eu]\n", want: []string{`smsform.yaml:2: compliance[0]: unknown rule set "eu"`}},
		{name: "project words without sets", project: "version: 1\nopt_out_words: [ARRET]\n",
			want: []string{"smsform.yaml:2: opt_out_words: campaign", "is held to no rule set: these opt-out words would be checked by nothing", "add us or uk to compliance"}},
		{name: "project words without an opt-out rule", project: "version: 1\ncompliance: [gsm7]\nopt_out_words: [ARRET]\n",
			keys: "compliance: [in]\n", want: []string{"smsform.yaml:3: opt_out_words: campaign", "is held to the rule sets gsm7, in, none of which"}},
		{name: "project dlt", project: "version: 1\ndlt: {template_id: \"1\"}\n", want: []string{"smsform.yaml:2: dlt: unknown key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{".git/HEAD": "", "c.yaml": strings.Replace(tinyCampaign, "body:", tc.keys+"body:", 1)}
			if tc.project != "" {
				files["smsform.yaml"] = tc.project
			}
			write(t, dir, files)
			_, err := Load(filepath.Join(dir, "c.yaml"))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error() + hints(err)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if tc.not != "" && strings.Contains(msg, tc.not) {
				t.Errorf("error %q says %q too", msg, tc.not)
			}
		})
	}
}

// TestOptOutWordsReceived: in a project whose receive takes the replies,
// an opt_out_words word that is no stop word of it is refused: the message
// would tell people to reply ARRET, and receive would not opt them out.
func TestOptOutWordsReceived(t *testing.T) {
	const receiving = "provider:\n  replies: {number: /from, text: /text}\nreceive:\n  auth: bearer\n"
	for _, tc := range []struct {
		name, project, campaign, want string
	}{
		{"the project's word, default stop words", "version: 1\ncompliance: [us]\nopt_out_words: [ARRET]\n" + receiving, tinyCampaign,
			`smsform.yaml:3: opt_out_words: "ARRET" is no stop word of the project's receive`},
		{"a campaign's word", "version: 1\n" + receiving, strings.Replace(tinyCampaign, "body:", "compliance: [us]\nopt_out_words: [Arrêt]\nbody:", 1),
			`c.yaml:7: opt_out_words: "Arrêt" is no stop word of the project's receive`},
		{"a stop word of receive", "version: 1\ncompliance: [us]\nopt_out_words: [ARRET]\n" + receiving + "  stop_words: [STOP, arret]\n", tinyCampaign, ""},
		{"a default stop word", "version: 1\ncompliance: [us]\nopt_out_words: [cancel]\n" + receiving, tinyCampaign, ""},
		{"no receive", "version: 1\ncompliance: [us]\nopt_out_words: [ARRET]\n", tinyCampaign, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{"smsform.yaml": tc.project, "c.yaml": tc.campaign})
			_, err := Load(filepath.Join(dir, "c.yaml"))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
