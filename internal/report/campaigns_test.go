package report

// The campaigns these tests plan: written on the fly, or those of
// testdata/campaigns, whose plans plan's own tests check figure by figure.

const header = "version: 1\nname: t\nsender: ACME\n"

// windowNumbers are recipients in Europe, the Americas and Asia, one of
// them in a prefix that spans two zones and one with no zone at all.
const windowNumbers = `recipients:
  - numbers: ["+12125550101", "+33612345678", "+819012345678", "+12125550102", "+12085550100", "+14155550101", "+447400123459", "+80012345678", "+33612345679"]
`
