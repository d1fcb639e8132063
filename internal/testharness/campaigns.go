// Campaigns of any size for benchmarks and tests (see the package doc).

package testharness

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/nyaruka/phonenumbers"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/state"
)

// Spec describes a generated campaign.
type Spec struct {
	Name       string // campaign name, also the file names' stem
	Recipients int    // rows in the list
	// Personalised uses a per-recipient template ("Hi {{ .name }}, your
	// code is {{ .code }}"): every recipient gets a body of their own.
	// Otherwise everyone gets the same body.
	Personalised bool
	BatchSize    int    // 0: 1000
	Concurrency  int    // 0: the campaign's default
	BaseURL      string // provider.base_url, "" for none
	Seed         uint64
}

// Generated is what Generate wrote.
type Generated struct {
	Campaign string   // path of the campaign file
	List     string   // path of the CSV list
	Numbers  []string // the phone column, in file order (for the naive loop)
	Region   string   // the campaign's default_region
	Invalid  int      // rows written with a number meant to be invalid
	Dups     int      // rows repeating an earlier number
}

// regions are the countries numbers come from: mobile numbers, varied in
// their last digits.
var regions = []string{"GB", "US", "DE", "FR", "IT", "ES", "NL", "IN", "BR", "NG", "AU", "JP", "MX", "ZA"}

var firstNames = []string{"Ada", "Grace", "Alan", "Linus", "Barbara", "Ken", "Dennis", "Margaret", "Edsger", "Frances",
	"Tim", "Radia", "Niklaus", "Sophie", "John", "Hedy", "Donald", "Karen", "Guido", "Ada-Mae"}

// Generate writes the campaign and its list into dir.
//
// About 1% of rows hold an invalid number (too short, or not a number) and
// about 1% repeat an earlier number (sometimes written differently); the
// rest are distinct valid mobile numbers from 14 countries, mostly in E.164,
// some with spaces, and British ones partly in national format (the campaign's
// default_region is GB).
func Generate(dir string, s Spec) (*Generated, error) {
	if s.BatchSize == 0 {
		s.BatchSize = 1000
	}
	g := &Generated{
		Campaign: filepath.Join(dir, s.Name+".yaml"),
		List:     filepath.Join(dir, s.Name+".csv"),
		Numbers:  make([]string, 0, s.Recipients),
		Region:   "GB",
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	gens := make([]*numberGen, len(regions))
	for i, r := range regions {
		gens[i] = newNumberGen(r)
	}
	norm := e164.NewNormalizer(g.Region)

	f, err := os.Create(g.List)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("phone,name,code\n")
	for i := range s.Recipients {
		var raw string
		switch k := rng.IntN(100); {
		case k == 0:
			g.Invalid++
			raw = invalidNumber(rng, gens[rng.IntN(len(gens))])
		case k == 1 && len(g.Numbers) > 0:
			g.Dups++
			raw = g.Numbers[rng.IntN(len(g.Numbers))]
		default:
			raw = gens[rng.IntN(len(gens))].next(rng, norm)
		}
		g.Numbers = append(g.Numbers, raw)
		name := firstNames[rng.IntN(len(firstNames))]
		fmt.Fprintf(w, "%s,%s,%06d\n", raw, name, (i*7919+rng.IntN(1000))%1000000)
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}

	body := "ACME spring sale: 20% off everything until Sunday. Reply STOP to opt out."
	if s.Personalised {
		body = "Hi {{ .name }}, your code is {{ .code }}"
	}
	yaml := fmt.Sprintf("version: 1\nname: %s\nsender: ACME\n", s.Name)
	if s.BaseURL != "" {
		yaml += fmt.Sprintf("provider:\n  base_url: %s\n", s.BaseURL)
	}
	yaml += fmt.Sprintf("default_region: %s\nrecipients:\n  - file: %s\nbody: %q\nbatch_size: %d\n",
		g.Region, filepath.Base(g.List), body, s.BatchSize)
	if s.Concurrency > 0 {
		yaml += fmt.Sprintf("concurrency: %d\n", s.Concurrency)
	}
	if err := os.WriteFile(g.Campaign, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	return g, nil
}

// numberGen writes distinct valid mobile numbers of one region: the
// region's example mobile number with its last digits replaced by a counter
// walked in a scattered order.
type numberGen struct {
	region string
	cc     string
	prefix string // the example's national digits that are kept
	free   int    // how many trailing digits vary
	space  uint64 // 10^free
	step   uint64 // coprime with space: i*step mod space visits every value once
	i      uint64
}

func newNumberGen(region string) *numberGen {
	ex := phonenumbers.GetExampleNumberForType(region, phonenumbers.MOBILE)
	nsn := phonenumbers.GetNationalSignificantNumber(ex)
	free := min(6, len(nsn)-3)
	space := uint64(1)
	for range free {
		space *= 10
	}
	return &numberGen{
		region: region,
		cc:     strconv.Itoa(int(ex.GetCountryCode())),
		prefix: nsn[:len(nsn)-free],
		free:   free,
		space:  space,
		step:   387403, // neither even nor a multiple of 5: coprime with 10^free
	}
}

// next returns the next valid number, written as people do.
func (g *numberGen) next(rng *rand.Rand, norm *e164.Normalizer) string {
	for {
		g.i++
		if g.i >= g.space {
			panic(fmt.Sprintf("bench: region %s ran out of numbers", g.region))
		}
		v := g.i * g.step % g.space
		nsn := g.prefix + fmt.Sprintf("%0*d", g.free, v)
		e := "+" + g.cc + nsn
		if _, err := norm.Normalize(e); err != nil {
			continue
		}
		switch {
		case g.region == "GB" && rng.IntN(3) == 0:
			return "0" + nsn
		case rng.IntN(10) == 0:
			return "+" + g.cc + " " + nsn[:3] + " " + nsn[3:]
		}
		return e
	}
}

func invalidNumber(rng *rand.Rand, g *numberGen) string {
	switch rng.IntN(3) {
	case 0:
		return "+" + g.cc + g.prefix[:min(2, len(g.prefix))] // too short
	case 1:
		return "n/a"
	}
	return "+999" + strconv.Itoa(100000+rng.IntN(900000)) // no such country code
}

// LoadCampaign writes a campaign file (c.yaml) of the given YAML and the
// files it reads into a new temporary folder, and loads it.
func LoadCampaign(t testing.TB, yaml string, files map[string]string) *campaign.Campaign {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := campaign.Load(path)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return c
}

// Recorded is a state held in memory, as plan.Compute reads one: the
// recipients are given in the order it walks them. Its lineage is "bench"
// and its location "memory", as golden files show them.
type Recorded []state.Recipient

func (Recorded) Lineage() string { return "bench" }
func (Recorded) Path() string    { return "memory" }
func (Recorded) Serial() int64   { return 1 }

// EachRecipient calls fn for each recipient in order.
func (r Recorded) EachRecipient(_ context.Context, fn func(state.Recipient) error) error {
	for _, x := range r {
		if err := fn(x); err != nil {
			return err
		}
	}
	return nil
}

// GoldenCampaign loads one of the campaigns whose plans internal/report
// holds as golden files (internal/report/testdata/campaigns/NAME.yaml);
// plan's tests compute from the same ones.
func GoldenCampaign(t testing.TB, name string) *campaign.Campaign {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("golden campaigns: this source file is not known")
	}
	path := filepath.Join(filepath.Dir(here), "..", "report", "testdata", "campaigns", name+".yaml")
	// Relative to the test's folder, as the golden files write the lists.
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, path); err == nil {
			path = rel
		}
	}
	c, err := campaign.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ResumedState is what the state records for the golden campaign
// "resumed": Ann sent the body she would get today, Ben an earlier one, Cid
// in doubt.
func ResumedState() Recorded {
	return Recorded{
		{Phone: "+447800123456", Status: state.Sent, BatchID: "b-1", BodyHash: state.BodyHash("Hi Ann, see you soon")},
		{Phone: "+447400123459", Status: state.Sent, BatchID: "b-1", BodyHash: state.BodyHash("Hi Ben, an earlier body")},
		{Phone: "+447400123564", Status: state.InDoubt, BatchID: "b-2"},
	}
}
