package compliance

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/window"
)

func mustLoad(t testing.TB, names ...string) *Rules {
	t.Helper()
	r, err := Load(names, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// number checks that s is a valid number and packs it.
func number(t testing.TB, s string) e164.Packed {
	t.Helper()
	n, err := e164.NewNormalizer("").Normalize(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	k, _ := e164.Pack(n.E164)
	return k
}

// TestTables walks every rule of every rule set: each has an id unique
// across the sets, a source, the date it took effect (not in the future:
// the tables hold rules in force), what it says, a fix, and a URL that
// parses where one is given.
func TestTables(t *testing.T) {
	known := Known()
	if !slices.Equal(known, []string{"gsm7", "in", "uk", "us"}) {
		t.Errorf("Known() = %v", known)
	}
	r := mustLoad(t, known...)
	ids := map[string]bool{}
	checks := map[Check]int{}
	for _, rule := range r.All() {
		if ids[rule.ID] {
			t.Errorf("rule id %s twice", rule.ID)
		}
		ids[rule.ID] = true
		checks[rule.Check]++
		if rule.Source == "" || rule.Says == "" || rule.Fix == "" {
			t.Errorf("%s: a source, what it says and a fix are required", rule.ID)
		}
		if rule.Effective.IsZero() || rule.Effective.After(time.Now()) {
			t.Errorf("%s: effective %s is not a date in the past", rule.ID, rule.Date())
		}
		if rule.URL != "" {
			if u, err := url.Parse(rule.URL); err != nil || u.Host == "" {
				t.Errorf("%s: url %q does not parse", rule.ID, rule.URL)
			}
		}
		if !strings.HasPrefix(rule.ID, rule.Set+"-") {
			t.Errorf("%s: the id does not start with its set's name %s", rule.ID, rule.Set)
		}
	}
	for _, c := range []Check{CheckHours, CheckCap, CheckOptOut, CheckDLT, CheckGSM7} {
		if checks[c] == 0 {
			t.Errorf("no rule checks %s", c)
		}
	}
	for _, id := range []string{"us-tcpa-hours", "us-fl-hours", "us-fl-cap", "us-tx-hours", "us-opt-out", "uk-pecr-opt-out", "in-dlt-template", "gsm7-only"} {
		if !ids[id] {
			t.Errorf("rule %s is missing", id)
		}
	}
}

func TestLoadUnknownSet(t *testing.T) {
	_, err := Load([]string{"us", "fr"}, Options{})
	var unknown *UnknownSetError
	if !errors.As(err, &unknown) || unknown.Name != "fr" {
		t.Fatalf("Load(us, fr) = %v, want an UnknownSetError naming fr", err)
	}
	if !strings.Contains(err.Error(), `"fr"`) || !strings.Contains(err.Error(), "gsm7, in, uk, us") {
		t.Errorf("the error does not name the set and the known ones: %v", err)
	}
	r := mustLoad(t, "us", "us")
	if got := r.Names(); !slices.Equal(got, []string{"us"}) {
		t.Errorf("a set named twice: %v", got)
	}
}

// when is an instant, written in RFC 3339.
func when(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// schedule is a campaign without a send window narrowed to what the rules
// ask of the number, and the number's zones, as plan and apply do it.
func schedule(t *testing.T, r *Rules, phone string, kind Kind) (*window.Schedule, *window.Zones, *Law) {
	t.Helper()
	sc, err := window.Compile(window.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	law := r.For(number(t, phone), kind)
	z, _ := sc.Finder().Zones(phone)
	if law.HasHours() {
		sc = sc.Narrow(law.Hours)
	}
	return sc, z, law
}

// TestFloridaClosedGeorgiaOpen: at 20:30 in Miami (Eastern time), a
// Florida number is closed until 8:00 the next morning, while a Georgia
// number in the same zone may be sent (the federal 21:00).
func TestFloridaClosedGeorgiaOpen(t *testing.T) {
	r := mustLoad(t, "us")
	at := when(t, "2026-12-02T01:30:00Z") // Tuesday 20:30 EST
	fl, flZones, flLaw := schedule(t, r, "+13052345678", Marketing)
	if fl.Open(flZones, at) {
		t.Error("a Florida number is open at 20:30 local time")
	}
	o := fl.Next(flZones, at)
	if o.Reason != window.ReasonWindow || !o.At.Equal(when(t, "2026-12-02T13:00:00Z")) || o.Local != "08:00" || o.Zone != "America/New_York" {
		t.Errorf("Florida opens %+v, want 08:00 America/New_York (13:00 UTC)", o)
	}
	if ids := ruleIDs(flLaw.HoursRules); !slices.Equal(ids, []string{"us-tcpa-hours", "us-fl-hours"}) {
		t.Errorf("Florida's hours rules: %v", ids)
	}
	ga, gaZones, gaLaw := schedule(t, r, "+14042345678", Marketing)
	if !ga.Open(gaZones, at) {
		t.Error("a Georgia number is closed at 20:30 local time")
	}
	if ga.Open(gaZones, at.Add(31*time.Minute)) {
		t.Error("a Georgia number is open at 21:01 local time")
	}
	if ids := ruleIDs(gaLaw.HoursRules); !slices.Equal(ids, []string{"us-tcpa-hours"}) {
		t.Errorf("Georgia's hours rules: %v", ids)
	}
	// A campaign window of 09:00-21:00 is narrowed for Florida by its own
	// rule, not by the federal one; Georgia's is left as it is.
	campaign := window.Spec{From: "09:00", To: "21:00"}.Week()
	if ids := ruleIDs(flLaw.Narrowing(campaign)); !slices.Equal(ids, []string{"us-fl-hours"}) {
		t.Errorf("Florida narrows by %v", ids)
	}
	if got := gaLaw.Narrowing(campaign); len(got) != 0 {
		t.Errorf("Georgia narrows by %v", ruleIDs(got))
	}
}

// TestTexasSunday: a Dallas number at 10:00 on a Sunday is closed until
// noon; at 10:00 on a Monday it is open.
func TestTexasSunday(t *testing.T) {
	r := mustLoad(t, "us")
	sc, z, law := schedule(t, r, "+12142345678", Marketing)
	if got := law.Hours.String(); got != "mon-sat 09:00-21:00, sun 12:00-21:00" {
		t.Errorf("Texas's hours: %s", got)
	}
	sunday := when(t, "2026-11-29T16:00:00Z") // 10:00 CST
	if sc.Open(z, sunday) {
		t.Error("a Texas number is open at 10:00 on a Sunday")
	}
	if o := sc.Next(z, sunday); !o.At.Equal(when(t, "2026-11-29T18:00:00Z")) || o.Local != "12:00" {
		t.Errorf("Texas opens %+v on Sunday, want 12:00 local", o)
	}
	if !sc.Open(z, sunday.Add(24*time.Hour)) {
		t.Error("a Texas number is closed at 10:00 on a Monday")
	}
}

// TestWhoIsConcerned: the federal rule for a US number whose area code is
// not geographic or not in the table; nothing of the US rules for Canada;
// no marketing rule for a transactional campaign; caps by state.
func TestWhoIsConcerned(t *testing.T) {
	r := mustLoad(t, "us", "uk", "in", "gsm7")
	tests := []struct {
		phone string
		kind  Kind
		hours []string // nil: no law at all
		caps  []string
	}{
		{"+13052345678", Marketing, []string{"us-tcpa-hours", "us-fl-hours"}, []string{"us-fl-cap"}},
		{"+14052345678", Marketing, []string{"us-tcpa-hours", "us-ok-hours"}, []string{"us-ok-cap"}},
		{"+14042345678", Marketing, []string{"us-tcpa-hours"}, nil},
		{"+18002345678", Marketing, []string{"us-tcpa-hours"}, nil}, // toll-free: no state
		{"+17872345678", Marketing, []string{"us-tcpa-hours"}, nil}, // Puerto Rico
		{"+14162345678", Marketing, nil, nil},                       // Toronto
		{"+13052345678", Transactional, nil, nil},
		{"+447400123456", Marketing, nil, nil},
		{"+918123456789", Marketing, nil, nil},
	}
	for _, tt := range tests {
		law := r.For(number(t, tt.phone), tt.kind)
		if tt.hours == nil && tt.caps == nil {
			if law != nil {
				t.Errorf("%s (%s): %v %v, want no rule", tt.phone, tt.kind, ruleIDs(law.HoursRules), ruleIDs(law.Caps))
			}
			continue
		}
		if law == nil {
			t.Errorf("%s (%s): no rule, want %v", tt.phone, tt.kind, tt.hours)
			continue
		}
		if got := ruleIDs(law.HoursRules); !slices.Equal(got, tt.hours) {
			t.Errorf("%s: hours rules %v, want %v", tt.phone, got, tt.hours)
		}
		if got := ruleIDs(law.Caps); !slices.Equal(got, tt.caps) {
			t.Errorf("%s: caps %v, want %v", tt.phone, got, tt.caps)
		}
	}
	// An area code the table lacks gets the federal rule.
	k, _ := e164.Pack("+19992345678")
	if law := r.For(k, Marketing); law == nil || !slices.Equal(ruleIDs(law.HoursRules), []string{"us-tcpa-hours"}) {
		t.Errorf("an unknown area code: %v", law)
	}
	fl := r.For(number(t, "+13052345678"), Marketing)
	if c := fl.Caps[0]; c.Max != 3 || c.Per != 24*time.Hour || !c.Concerns(Marketing) || c.Concerns(Transactional) {
		t.Errorf("Florida's cap: %+v", c)
	}
	if r.For(number(t, "+13059876543"), Marketing) != fl {
		t.Error("two Florida numbers got two Law values")
	}
}

func ruleIDs(rules []*Rule) []string {
	var ids []string
	for _, r := range rules {
		ids = append(ids, r.ID)
	}
	return ids
}

func TestOptOut(t *testing.T) {
	r := mustLoad(t, "us")
	tests := []struct {
		body string
		pass bool
	}{
		{"Spring sale: 20% off today. Reply STOP to opt out.", true},
		{"Spring sale! reply stop to end", true},
		{"Sale today. Text UNSUBSCRIBE to leave.", true},
		{"Sale today, opt-out at acme.example/x", true},
		{"Sale today.", false},
		{"Nonstop deals all weekend", false},
		{"STOPPED by the store yet?", false},
		// A phrase's words may be parted by any run of white space: a line
		// break, a non-breaking space, two spaces.
		{"Sale today. To opt\nout, reply.", true},
		{"Sale today. Opt\u00a0out at acme.example", true},
		{"Sale today. OPT  OUT at acme.example", true},
		{"Sale today. Opt \t\r\n out at acme.example", true},
		{"Sale today. Optouts", false},
		{"Sale today. Adopt outreach", false},
		{"Sale today. opt", false},
	}
	for _, tt := range tests {
		v := r.CheckBody(tt.body, Marketing)
		if tt.pass != (len(v) == 0) {
			t.Errorf("CheckBody(%q) = %v, want pass %v", tt.body, v, tt.pass)
			continue
		}
		if !tt.pass {
			if v[0].Rule.ID != "us-opt-out" || !strings.Contains(v[0].Error(), "us-opt-out") || !strings.Contains(v[0].Error(), "2023-05-01") {
				t.Errorf("the violation does not name the rule and its date: %v", v[0])
			}
		}
	}
	if v := r.CheckBody("Your code is 1234", Transactional); len(v) != 0 {
		t.Errorf("a transactional body was held to the opt-out rule: %v", v)
	}
	fr, err := Load([]string{"us"}, Options{OptOutWords: []string{"ARRET", "STOP SMS"}})
	if err != nil {
		t.Fatal(err)
	}
	if v := fr.CheckBody("Soldes ! Répondez ARRÊT", Marketing); len(v) != 1 {
		t.Errorf("ARRÊT is not ARRET: %v", v)
	}
	if v := fr.CheckBody("Soldes ! STOP SMS au 36000", Marketing); len(v) != 0 {
		t.Errorf("configured words: %v", v)
	}
	// opt_out_words add to the law's words, never replace them: STOP
	// still counts, and a word that is no opt-out instruction (sale) does
	// not make a body pass without one of the law's.
	if v := fr.CheckBody("Reply STOP to opt out", Marketing); len(v) != 0 {
		t.Errorf("the configured words replaced the rule's own: %v", v)
	}
	sale, err := Load([]string{"us", "uk"}, Options{OptOutWords: []string{"SALE", "stop"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range sale.All() {
		if rule.Check == CheckOptOut && (!slices.Contains(rule.Words, "STOP") || strings.Join(rule.Extra, ",") != "SALE") {
			t.Errorf("%s: words %v, extra %v: want the rule's own words and SALE added once", rule.ID, rule.Words, rule.Extra)
		}
	}
	if v := sale.CheckBody("Hi Ann, big sale today", Marketing); len(v) != 2 {
		t.Errorf("opt_out_words: [SALE] passed a body without an opt-out instruction: %v", v)
	}
	v := sale.CheckBody("Hi Ann", Marketing)
	if len(v) != 2 || !strings.Contains(v[0].Problem, "the opt-out words STOP, UNSUBSCRIBE, OPT OUT, OPT-OUT, OPTOUT (and SALE, from opt_out_words)") {
		t.Errorf("the problem does not name the words checked: %v", v)
	}
	for _, rule := range sale.All() {
		if strings.Contains(rule.Fix, "can be set with opt_out_words") {
			t.Errorf("%s: the fix says opt_out_words set the words: %s", rule.ID, rule.Fix)
		}
	}
}

// TestOptOutStandsAsInstruction: an opt-out word counts where it stands as
// a word of its own and reads as an instruction, not joined to a link, a
// hashtag, a name or another word, and not in passing.
func TestOptOutStandsAsInstruction(t *testing.T) {
	r := mustLoad(t, "us")
	tests := []struct {
		body string
		pass bool
	}{
		{"Hi Ann, non-stop deals", false},
		{"Deals at x.co/stop", false},
		{"stop_here", false},
		{"Reply OPT_OUT", false},
		{"don't stop shopping", false},
		{"#STOP", false},
		{"Reply @STOP", false},
		{"Deals at stop.com", false},
		{"Reply STOP's", false},
		{"Hi Stop, sale", false},
		{"nonstop", false},
		{"STOPS", false},
		{"STOP123", false},
		{"NON STOP DEALS", false},
		{"DON'T STOP NOW", false},
		{"STOP BY OUR STORE", false},
		{"BUS STOP 5", false},
		{"SALE NOW. STOP: REPLY", true},
		{"SALE! REPLY STOP", true},
		{"Reply STOP.", true},
		{"Reply STOP, or visit us", true},
		{"Sale. STOP=end", true},
		{"Sale. STOP to end", true},
		{"Sale. stop to end", true},
		{"Sale. Stop: reply", true},
		{"Sale. Text \"stop\" to 60000", true},
		{"Sale. Reply STOP - to opt out", true},
		{"Sale. (Reply STOP)", true},
		{"Sale. Reply \"STOP\"", true},
		{"Sale. reply stop", true},
		{"Sale. Reply OPT-OUT.", true},
	}
	for _, tt := range tests {
		if v := r.CheckBody(tt.body, Marketing); tt.pass != (len(v) == 0) {
			t.Errorf("CheckBody(%q) = %v, want pass %v", tt.body, v, tt.pass)
		}
	}
}

// TestCheckFixedText: the campaign's own text must carry the opt-out word,
// not only a recipient's variable.
func TestCheckFixedText(t *testing.T) {
	r := mustLoad(t, "us")
	if v := r.CheckFixedText("Hi \x00, sale", Marketing); len(v) != 1 || !strings.Contains(v[0].Problem, "variable") {
		t.Errorf("a body whose own text has no opt-out word: %v", v)
	}
	if v := r.CheckFixedText("Hi \x00, sale. Reply STOP to opt out", Marketing); len(v) != 0 {
		t.Errorf("a body whose own text has STOP: %v", v)
	}
	if v := r.CheckFixedText("Your code is \x00", Transactional); len(v) != 0 {
		t.Errorf("a transactional body: %v", v)
	}
}

func TestUK(t *testing.T) {
	r := mustLoad(t, "uk")
	v := r.CheckBody("Winter sale at ACME: 30% off until Sunday", Marketing)
	if len(v) != 1 || v[0].Rule.ID != "uk-pecr-opt-out" || !strings.Contains(v[0].Rule.Source, "regulation 22") {
		t.Fatalf("a UK marketing body without an opt-out: %v", v)
	}
	if v := r.CheckBody("Winter sale at ACME. Text STOP to 60000 to opt out", Marketing); len(v) != 0 {
		t.Errorf("with an opt-out: %v", v)
	}
	if v := r.CheckBody("Your parcel arrives today", Transactional); len(v) != 0 {
		t.Errorf("transactional: %v", v)
	}
}

func TestDLT(t *testing.T) {
	r := mustLoad(t, "in")
	tpl, err := r.Template("Dear {#var#}, your order {#var#} ships today. - ACME", 0)
	if err != nil {
		t.Fatal(err)
	}
	if tpl.Variables() != 2 || tpl.MaxVariable() != 30 || tpl.Rule().ID != "in-dlt-template" {
		t.Errorf("template: %d variables, at most %d, rule %s", tpl.Variables(), tpl.MaxVariable(), tpl.Rule().ID)
	}
	tests := []struct {
		body string
		want string // "" passes, else a word of the problem
	}{
		{"Dear Asha, your order 1234 ships today. - ACME", ""},
		{"Dear Asha Rao, your order A-99 ships today. - ACME", ""},
		{"Dear " + strings.Repeat("é", 30) + ", your order 1 ships today. - ACME", ""},
		{"Dear " + strings.Repeat("x", 31) + ", your order 1 ships today. - ACME", "variable 1 of the template is 31 characters, longer than 30"},
		{"Dear Asha, your order " + strings.Repeat("9", 40) + " ships today. - ACME", "variable 2 of the template is 40 characters"},
		{"Hello Asha, your order 1234 ships today. - ACME", `does not start with the template's text "Dear "`},
		{"Dear Asha, your parcel 1234 ships today. - ACME", `", your order " is not in the message`},
		{"Dear Asha, your order 1234 ships today.", `does not end with the template's text " ships today. - ACME"`},
	}
	for _, tt := range tests {
		v := tpl.Check(tt.body)
		switch {
		case tt.want == "" && v != nil:
			t.Errorf("Check(%q) = %v, want a match", tt.body, v)
		case tt.want != "" && (v == nil || !strings.Contains(v.Problem, tt.want)):
			t.Errorf("Check(%q) = %v, want %q", tt.body, v, tt.want)
		case v != nil && strings.Contains(v.Problem, "Asha"):
			t.Errorf("the problem quotes a variable: %v", v)
		}
	}
	wide, err := r.Template("Code {#var#}", 40)
	if err != nil || wide.Check("Code "+strings.Repeat("x", 40)) != nil {
		t.Errorf("a wider limit: %v", err)
	}
	for _, bad := range []string{"", "Dear {#name#}", "Dear {#var#, hi", "Dear {#var}"} {
		if _, err := r.Template(bad, 0); err == nil {
			t.Errorf("Template(%q) accepted it", bad)
		}
	}
	if tpl, err := mustLoad(t, "us").Template("Dear {#var#}", 0); tpl != nil || err != nil {
		t.Errorf("without the in rule set: %v, %v", tpl, err)
	}
}

func TestGSM7(t *testing.T) {
	r := mustLoad(t, "gsm7")
	if v := r.CheckBody("Hi Ana, 20% off {today} ~ €5", Transactional); len(v) != 0 {
		t.Errorf("a GSM-7 body: %v", v)
	}
	v := r.CheckBody("Hi Ana, it’s 20% off – today", Marketing)
	if len(v) != 1 || v[0].Rule.ID != "gsm7-only" {
		t.Fatalf("a UCS-2 body: %v", v)
	}
	for _, want := range []string{`'’' (U+2019)`, "position 11", "1 other character"} {
		if !strings.Contains(v[0].Problem, want) {
			t.Errorf("the problem %q does not say %q", v[0].Problem, want)
		}
	}
	if v := r.CheckBody("日本", Transactional); len(v) != 1 || !strings.Contains(v[0].Problem, "position 1 ") {
		t.Errorf("transactional bodies are held to GSM-7 too: %v", v)
	}
}

// TestCheckBodyAllocs: a body that passes costs no allocation, since plan
// checks every personalised body.
func TestCheckBodyAllocs(t *testing.T) {
	r := mustLoad(t, "us", "uk", "gsm7")
	body := "Hi Ana, the spring sale starts today. Reply STOP to opt out."
	if n := testing.AllocsPerRun(100, func() { r.CheckBody(body, Marketing) }); n != 0 {
		t.Errorf("CheckBody allocates %.0f times a passing body", n)
	}
}

// BenchmarkFor is the per-recipient lookup plan makes for every recipient
// of a campaign with compliance: [us].
func BenchmarkFor(b *testing.B) {
	r := mustLoad(b, "us")
	norm := e164.NewNormalizer("")
	var nums []e164.Packed
	for npa := 200; npa <= 999 && len(nums) < 1000; npa++ {
		if n, err := norm.Normalize("+1" + strconv.Itoa(npa) + "2345678"); err == nil {
			k, _ := e164.Pack(n.E164)
			nums = append(nums, k)
		}
	}
	b.ResetTimer()
	var law *Law
	for i := range b.N {
		law = r.For(nums[i%len(nums)], Marketing)
	}
	_ = law
}

// TestDLTManyVariables: a template of many long variables is read and
// checked, never a panic (a regular expression bounding each variable grew
// past what the regexp package compiles: 1,700 variables of up to 1,000
// characters panicked, and a hundred took most of a second to compile).
func TestDLTManyVariables(t *testing.T) {
	r := mustLoad(t, "in")
	const n = 3000
	tpl, err := r.Template(strings.Repeat("a {#var#} ", n), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if tpl.Variables() != n {
		t.Errorf("%d variables, want %d", tpl.Variables(), n)
	}
	if v := tpl.Check(strings.Repeat("a x ", n)); v != nil {
		t.Errorf("a body that fills it in: %v", v)
	}
	if v := tpl.Check(strings.Repeat("a x ", n-1) + "a " + strings.Repeat("y", 1001) + " "); v == nil || !strings.Contains(v.Problem, "variable 3000 of the template is 1001 characters") {
		t.Errorf("a variable too long: %v", v)
	}
}

// TestDLTSplits: a body matches when some split of it into the template's
// variables keeps each within the limit, not only the first split found.
func TestDLTSplits(t *testing.T) {
	r := mustLoad(t, "in")
	tests := []struct {
		tpl, body string
		max       int
		ok        bool
	}{
		{"{#var#}-{#var#}", "a-b-cd", 3, true},    // a-b | cd
		{"{#var#}-{#var#}", "ab-cd-ef", 3, false}, // ab | cd-ef or ab-cd | ef
		{"{#var#}-{#var#}", "abc-d-e", 3, true},   // abc | d-e
		{"{#var#}{#var#}", "abcdef", 3, true},
		{"{#var#}{#var#}", "abcdefg", 3, false},
		{"x{#var#}x", "x", 3, false},
		{"x{#var#}x", "xx", 3, true},
		{"x{#var#}x", "xxx", 3, true},
		{"x{#var#}x{#var#}x", "xxx", 3, true},
		{"x{#var#}x{#var#}x", "xx", 3, false},
		{"Hi {#var#}, code {#var#}", "Hi é€ü, code 12", 3, true},
		{"Hi {#var#}, code {#var#}", "Hi é€üa, code 12", 3, false},
		{"Hi {#var#}", "Hi \n\n\n", 3, true},
		{"{#var#}", "", 3, true},
		{"No variable", "No variable", 3, true},
		{"No variable", "No variables", 3, false},
	}
	for _, tt := range tests {
		tpl, err := r.Template(tt.tpl, tt.max)
		if err != nil {
			t.Fatal(err)
		}
		if v := tpl.Check(tt.body); (v == nil) != tt.ok {
			t.Errorf("template %q, at most %d: Check(%q) = %v, want a match: %v", tt.tpl, tt.max, tt.body, v, tt.ok)
		}
	}
}

// TestRuleFileErrors: a mistake in a rule set file is named by the file,
// the line of the key it concerns and the key, and says what to write;
// none is let through (a rule that checks nothing, or nobody) and none
// panics.
func TestRuleFileErrors(t *testing.T) {
	const head = "set: us\ntitle: United States\nnumbers:\n  calling_code: 1\nrules:\n" // rules from line 6
	const meta = "    says: s\n    source: src\n    effective: 2020-01-01\n    fix: f\n"
	tests := []struct {
		name, data string
		want       []string
	}{
		{"hours closed", head + "  - id: us-x\n    check: hours\n    hours: closed\n" + meta,
			[]string{"compliance/rules/us.yaml:8: rules[0].hours: are never open: write the hours"}},
		{"unknown key", head + "  - id: us-x\n    check: gsm7\n" + meta + "    colour: red\n",
			[]string{"compliance/rules/us.yaml:12: rules[0].colour: is not a key here: the keys are id, check"}},
		{"wrong kind of value", head + "  - id: us-x\n    check: hours\n    hours: [mon]\n" + meta,
			[]string{"compliance/rules/us.yaml:8: rules[0].hours: must be text, not a list"}},
		{"max not a number", head + "  - id: us-x\n    check: cap\n    max: three\n    per: 24h\n" + meta,
			[]string{"compliance/rules/us.yaml:8: rules[0].max: must be a whole number"}},
		{"an empty opt-out word", head + "  - id: us-x\n    check: opt_out\n    words: [STOP, \"\"]\n" + meta,
			[]string{`compliance/rules/us.yaml:8: rules[0].words: "": an opt-out word must not be empty`}},
		{"a variable longer than a campaign may allow", head + "  - id: us-x\n    check: dlt\n    max_variable: 5000\n" + meta,
			[]string{"compliance/rules/us.yaml:8: rules[0].max_variable: must be 1 to 1000"}},
		{"a region nanp.csv lacks", "set: us\ntitle: t\nnumbers:\n  calling_code: 1\n  regions: [US, XX]\nrules:\n  - id: us-x\n    check: hours\n    hours: mon-sun 08:00-21:00\n" + meta,
			[]string{`compliance/rules/us.yaml:5: numbers.regions: "XX" is not a country of the +1 plan`}},
		{"an id twice", head + "  - id: us-x\n    check: gsm7\n" + meta + "  - id: us-x\n    check: gsm7\n" + meta,
			[]string{"compliance/rules/us.yaml:12: rules[1].id: rule us-x is given twice (first on line 6)"}},
		{"an empty rule", head + "  -\n  - id: us-x\n    check: gsm7\n" + meta,
			[]string{"compliance/rules/us.yaml:6: rules[0]: must be a mapping of keys (id, check"}},
		{"a state in lower case", head + "  - id: us-x\n    check: hours\n    state: fl\n    hours: mon-sun 08:00-20:00\n" + meta,
			[]string{`compliance/rules/us.yaml:8: rules[0].state: "fl" has no area code in rules/nanp.csv: write a state's two-letter postal code`}},
		{"every mistake, not the first", head + "  - id: us-x\n    check: cap\n    max: 0\n    per: 1d\n" + meta,
			[]string{"compliance/rules/us.yaml:8: rules[0].max: must be at least 1", "compliance/rules/us.yaml:9: rules[0].per: must be a duration such as 24h"}},
		{"an unknown key hides no other mistake", head + "  - id: us-x\n    check: cap\n    bogus: 1\n    max: -3\n    per: 24d\n" + meta,
			[]string{"compliance/rules/us.yaml:8: rules[0].bogus: is not a key here", "compliance/rules/us.yaml:9: rules[0].max: must be at least 1",
				"compliance/rules/us.yaml:10: rules[0].per: must be a duration such as 24h"}},
		{"an empty file", "", []string{"compliance/rules/us.yaml: the file is empty"}},
	}
	for _, tt := range tests {
		s, err := parseSet("us", "rules/us.yaml", []byte(tt.data))
		if err == nil {
			err = (&Rules{sets: []*Set{s}}).prepare()
		}
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error\n%v\ndoes not say\n%s", tt.name, err, w)
			}
		}
	}
	// A value of the wrong kind is named once, not again as missing.
	_, err := parseSet("us", "rules/us.yaml", []byte(head+"  - id: us-x\n    check: cap\n    max: three\n    per: 24h\n"+meta))
	if err == nil || strings.Count(err.Error(), "rules[0].max") != 1 {
		t.Errorf("max: three is not named once: %v", err)
	}
}
