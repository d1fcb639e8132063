package report

import (
	"github.com/smsform/smsform/internal/testharness"

	"path/filepath"
	"testing"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/state"
)

// The campaigns these tests plan: written on the fly, or those of
// testdata/campaigns, whose plans plan's own tests check figure by figure.

const header = "version: 1\nname: t\nsender: ACME\n"

// windowNumbers are recipients in Europe, the Americas and Asia, one of
// them in a prefix that spans two zones and one with no zone at all.
const windowNumbers = `recipients:
  - numbers: ["+12125550101", "+33612345678", "+819012345678", "+12125550102", "+12085550100", "+14155550101", "+447400123459", "+80012345678", "+33612345679"]
`

// loadGolden loads one of testdata/campaigns.
func loadGolden(t *testing.T, name string) *campaign.Campaign {
	t.Helper()
	c, err := campaign.Load(filepath.Join("testdata", "campaigns", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// resumedState records, for testdata/campaigns/resumed.yaml: Ann sent
// the body she would get today, Ben an earlier one, Cid in doubt.
func resumedState() testharness.Recorded {
	return testharness.Recorded{
		{Phone: "+447800123456", Status: state.Sent, BatchID: "b-1", BodyHash: state.BodyHash("Hi Ann, see you soon")},
		{Phone: "+447400123459", Status: state.Sent, BatchID: "b-1", BodyHash: state.BodyHash("Hi Ben, an earlier body")},
		{Phone: "+447400123564", Status: state.InDoubt, BatchID: "b-2"},
	}
}
