// Package compliance holds rules of law and of carriers as data, each with
// where it comes from, and answers what they ask of a campaign: when a
// recipient may be messaged, how many messages a person may get, what a body
// must say.
//
// A rule set is one file under rules/ (us.yaml, uk.yaml, in.yaml,
// gsm7.yaml), embedded in the program; every rule carries an id, a source
// (the statute, the regulator's or carriers' published rule, or the vendors'
// guide it is read from, with a URL where there is one), the date it took
// effect, and the fix a person applies when it fails. Code only interprets
// the tables: a change of the law is a reviewed change of a data file.
//
// [Load] reads rule sets by name. The result answers, for a recipient's
// number and a campaign's [Kind]:
//
//   - [Rules.For]: the hours the law allows in the recipient's local time
//     (to be met with the campaign's send window, see window.Week) and the
//     frequency caps that concern the number. A US number's state is its
//     area code's (rules/nanp.csv, looked up by array index); a number whose
//     area code names no state gets the federal rule.
//   - [Rules.CheckBody]: the rules a message's text must meet (opt-out
//     words, GSM-7 only), as [Violation] values naming the rule.
//   - [Rules.Template]: India's DLT template, matched per message.
//
// The package never sends and never reads a state: plan narrows its windows
// and fails bodies with what it returns, apply holds to the same windows,
// and the project's ledger enforces the caps across campaigns.
//
// It is not legal advice: which rules bind a sender depends on facts
// smsform does not know (consent, the sender's relationship with the
// recipient, where the recipient really is).
package compliance

import (
	"slices"
	"time"

	"github.com/smsform/smsform/internal/window"
)

// Kind is what a campaign is, which decides the rules that concern it.
type Kind string

const (
	// Marketing is a campaign that promotes or sells: the stricter rules,
	// and a campaign's kind when it says none.
	Marketing Kind = "marketing"
	// Transactional is a message a recipient's own dealings call for (a
	// code, a receipt, a delivery notice): no marketing rule concerns it.
	Transactional Kind = "transactional"
)

// Kinds lists the kinds in the order documentation gives them.
func Kinds() []Kind { return []Kind{Marketing, Transactional} }

// Check is what a rule checks.
type Check string

const (
	CheckHours  Check = "hours"   // the hours a recipient may be messaged, in local time
	CheckCap    Check = "cap"     // how many messages a number may get in a sliding window
	CheckOptOut Check = "opt_out" // the body carries opt-out words
	CheckDLT    Check = "dlt"     // the body matches a registered template
	CheckGSM7   Check = "gsm7"    // the body is GSM-7
)

// Rule is one row of a rule set. A rule is never changed once loaded.
type Rule struct {
	ID    string // unique across every rule set: "us-fl-hours"
	Set   string // the rule set's name: "us"
	Check Check
	// Kinds are the kinds of campaign the rule concerns; every kind when
	// empty.
	Kinds []Kind
	// Says is the rule in a line, as a reviewer reads it.
	Says string
	// Source names the statute, published rule or guide the rule comes
	// from; URL links to it where there is a link.
	Source string
	URL    string
	// Effective is the day the rule took effect (midnight UTC).
	Effective time.Time
	// Note says where the reading is uncertain or narrower than the law.
	Note string
	// Fix is what to do when the rule fails.
	Fix string

	// State is the US state (postal code) an hours or cap rule concerns;
	// "" for every recipient of the rule set.
	State string
	// Hours are the open hours of CheckHours, in the recipient's local time.
	Hours window.Week
	// Max messages per Per: CheckCap.
	Max int
	Per time.Duration
	// Words are CheckOptOut's opt-out words, one of which the body carries
	// as an instruction (see CheckBody). They are the rule file's: the law's
	// or the carriers' words, which a campaign cannot replace.
	Words []string
	// Extra are the words a campaign's (or its project's) opt_out_words
	// add to Words: a body may carry one of them instead (a campaign in
	// another language), but opt_out_words never take the rule's own away,
	// or a campaign could pass the rule with words no carrier honours.
	Extra []string
	// MaxVariable is the longest a DLT variable may be, in characters.
	MaxVariable int
}

// Concerns reports whether the rule concerns campaigns of kind k.
func (r *Rule) Concerns(k Kind) bool { return len(r.Kinds) == 0 || slices.Contains(r.Kinds, k) }

// Date is the day the rule took effect, written YYYY-MM-DD.
func (r *Rule) Date() string { return r.Effective.Format(time.DateOnly) }

// Set is one rule set: a file of rules/.
type Set struct {
	Name  string // "us", the file's name
	Title string // "United States"
	Rules []*Rule
	// CallingCode is the country calling code of the numbers the set's
	// per-recipient rules (hours, caps) concern; 0 for none. Regions
	// narrows +1 to the countries named (by rules/nanp.csv).
	CallingCode int
	Regions     []string
}
