// Package exitcode is the one table of smsform's exit codes: each code's
// number, its name and what it means. main turns errors into these codes,
// `smsform --help` and each command's help list them from here, the GitHub
// Action branches on them, and a test holds README.md and docs/commands.md
// to the same table, so that no list of codes can drift from another.
package exitcode

// A Code is what the smsform process returns.
type Code int

// The codes, in the order [All] lists them. They are untyped constants so
// that they compare with the int that os.Exit takes and exec reports.
const (
	OK          = 0
	Error       = 1
	Pending     = 2   // plan --detailed-exitcode: something to send
	Incomplete  = 3   // recipients owed: failed, in doubt, past not_after, provider silent
	Locked      = 4   // another apply holds the state
	Closed      = 5   // nothing more is sendable now
	Paused      = 6   // the campaign is paused
	Interrupted = 130 // Ctrl-C or SIGTERM, as shells report a SIGINT
)

// row is one line of the table. meaning is plain text, one sentence that
// reads the same in --help, README.md and docs/commands.md (where code
// spans may mark commands and keys).
type row struct {
	code    Code
	name    string
	meaning string
}

// table is the single source; it is an array so that nothing can change it.
var table = [...]row{
	{OK, "ok", "success; for apply: everything planned was sent, and nobody is recorded failed or in doubt"},
	{Error, "error", "error: bad input, an API or state problem, a cancelled prompt, a plan over budget, a refused saved plan"},
	{Pending, "pending", "plan --detailed-exitcode: there is something to send"},
	{Incomplete, "incomplete", "apply finished, but recipients are owed: failed or in doubt (this run or earlier ones), left unsent past not_after, or unanswered by a silent provider"},
	{Locked, "locked", "the state is locked by another apply (the message says who holds it)"},
	{Closed, "closed", "stopped: nothing more is sendable now (send window closed, not_before ahead, or the frequency cap); nothing recorded for what waits, rerun later"},
	{Paused, "paused", "the campaign is paused (smsform pause): apply stopped before its next batch, or refused to start"},
	{Interrupted, "interrupted", "interrupted (Ctrl-C or SIGTERM): what was in flight is recorded; at the confirmation prompt, nothing is sent or recorded"},
}

// All is every code, in increasing order.
func All() []Code {
	codes := make([]Code, len(table))
	for i, r := range table {
		codes[i] = r.code
	}
	return codes
}

// Name is the code's short name (incomplete, locked…), "" for a number
// that is not one of smsform's codes.
func (c Code) Name() string { return c.row().name }

// Meaning is what the code tells a script or a person, "" for a number
// that is not one of smsform's codes.
func (c Code) Meaning() string { return c.row().meaning }

func (c Code) row() row {
	for _, r := range table {
		if r.code == c {
			return r
		}
	}
	return row{}
}
