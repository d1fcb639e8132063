// Package plan computes what applying a campaign would send: [Compute] turns a
// loaded campaign and what the state already records into batches of
// rendered messages (internal/report shows them as a table, as markdown for
// a pull request, or as JSON). A plan is also saved to a file ([Save]) so
// that exactly what was reviewed is what gets sent.
//
// Compute never contacts the API and never changes the state.
package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/internal/window"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/state"
)

// FormatVersion is the version of every JSON document this package writes.
// Adding a field keeps it; renaming or removing one is a new major version.
const FormatVersion = "1"

// Plan is what applying a campaign would do.
type Plan struct {
	Campaign string     `json:"campaign"`
	Sender   string     `json:"sender"`
	Summary  Summary    `json:"summary"`
	Batches  []Batch    `json:"batches"`
	Invalid  []Invalid  `json:"invalid"`
	Warnings []string   `json:"warnings"`
	InDoubt  []Held     `json:"in_doubt"` // recorded in doubt: never sent again without `state resolve`
	Failed   []Held     `json:"failed"`   // recorded as failed for good
	Removed  []string   `json:"removed"`  // recorded in state but no longer in the campaign
	State    StateStamp `json:"state"`
	// BodyChanged counts recipients already sent a body other than the one
	// the campaign renders now; they are not sent again.
	BodyChanged int `json:"body_changed"`
	// BatchSize is the most recipients a batch carries: the campaign's
	// batch_size, or provider.max_recipients when that is smaller.
	BatchSize int `json:"batch_size,omitempty"`
	// Window is when the campaign may send, carried in saved plans so that
	// apply checks it at send time.
	Window window.Spec `json:"window,omitzero"`
	// Stream, when set, holds the batches instead of Batches: a plan applied
	// from its file reads them from there (see [Open]), so that ten million
	// recipients are never in memory at once. Walk them with EachBatch.
	Stream BatchStream `json:"-"`
	// cut holds the batches of a plan Compute made, as its groups: a batch
	// is made when asked for, so that a plan of ten million bodies does not
	// hold ten million Batch values besides them.
	cut *batchTable
	// Schedule is when the batches may go, as seen at one moment; set by
	// [Plan.ScheduleAt] for output, never saved.
	Schedule *Schedule `json:"-"`
	// What the state says of the campaign's running, for output; set by
	// Compute from a state that tells ([Controls]), never saved: the pause
	// (nil: not paused) and the last test send (nil: none).
	Paused   *state.Pause    `json:"-"`
	LastTest *state.TestSend `json:"-"`
	// Estimate is how long sending takes and when the last batch goes
	// (the latter set by [Plan.ScheduleAt]); never saved.
	Estimate *Estimate `json:"-"`
	// Refusal is why apply will refuse the plan as the states stand (nil:
	// it will not, as far as the states tell): set by the command that
	// knows the states, shown before anything else; never saved.
	Refusal *Refusal `json:"-"`
	// Compliance is what the rule sets the campaign declares said of it;
	// nil when it declares none.
	Compliance *Compliance `json:"compliance,omitempty"`

	// What a reviewer reads: the body as written, a few rendered messages
	// chosen to be informative, what goes where and in how many segments.
	Template     string         `json:"template"`
	Samples      []Sample       `json:"samples"`
	Countries    []CountryCount `json:"countries"`    // what is to send, by country
	Distribution []SegmentCount `json:"distribution"` // what is to send, by encoding and segments
	// Cost is nil when the campaign has no price table.
	Cost *Cost `json:"cost,omitempty"`
	// Undelivered is what was spent on the messages the provider reported
	// undelivered (Options.Undelivered); nil when none were given. Never
	// saved.
	Undelivered *Spent `json:"-"`
	// Delivery is what the provider reported so far of the campaign's
	// messages, set by the command that read it from the state; nil when
	// the state holds no report of the campaign. Never saved.
	Delivery *state.DeliverySummary `json:"-"`
	// Budget is nil when the campaign sets none.
	Budget         *BudgetCheck   `json:"budget,omitempty"`
	EmptyVariables EmptyVariables `json:"empty_variables"`
	// DuplicateRows locates the first duplicates: the row dropped and the
	// row that was kept. Summary.Duplicates counts them all.
	DuplicateRows []Duplicate `json:"duplicate_rows"`
}

// EmptyVariables counts the recipients whose message prints an empty
// variable ("Hi , …") and names the first rows.
type EmptyVariables struct {
	Recipients int      `json:"recipients"`
	Rows       []string `json:"rows"` // "lists/customers.csv:12: name"
}

// Duplicate is a row dropped because its number came earlier.
type Duplicate struct {
	Row   string `json:"row"`            // "lists/customers.csv:40"
	Kept  string `json:"kept,omitempty"` // the row that is sent; "" when that one was excluded
	Phone string `json:"phone"`
	// Differs says the row dropped has other variables than the row kept,
	// which its message would show: a reviewer must see which one is sent.
	Differs bool `json:"differs,omitempty"`
}

// Summary counts a plan. Recipients = ToSend + AlreadySent + InDoubt +
// Failed + Excluded + OptedOut + NoTimezone: every distinct valid number of
// the campaign lands in exactly one of those.
type Summary struct {
	Recipients  int `json:"recipients"`
	ToSend      int `json:"to_send"`
	AlreadySent int `json:"already_sent"`
	InDoubt     int `json:"in_doubt"`
	Failed      int `json:"failed"`
	Invalid     int `json:"invalid"`
	Excluded    int `json:"excluded"`
	Duplicates  int `json:"duplicates"`
	Batches     int `json:"batches"`
	Segments    int `json:"segments"`
	// NoTimezone counts recipients held back because the campaign has a
	// send window, their number's time zone is not known and the campaign
	// names no fallback_timezone. They count in Recipients, not in ToSend.
	NoTimezone int `json:"no_timezone,omitempty"`
	// OptedOut counts recipients the project's opt-outs hold back (see
	// [Ledger]); the state's records of the campaign come first: one
	// already sent is counted as such.
	OptedOut int `json:"opted_out,omitempty"`
	// HeldByCap counts recipients to send (of ToSend: they stay in the
	// batches) whom the frequency cap holds back at the moment the plan
	// was made; the last of them may be sent at HeldByCapUntil.
	HeldByCap      int       `json:"held_by_cap,omitempty"`
	HeldByCapUntil time.Time `json:"held_by_cap_until,omitzero"`
}

// BatchStream reads a plan's batches in order from where they are kept, as
// often as asked.
type BatchStream interface {
	Each(fn func(i int, b Batch) error) error
}

// EachBatch calls fn with each batch in order, from wherever the plan keeps
// them: Batches, the groups Compute made, or the Stream of a plan file.
func (p *Plan) EachBatch(fn func(i int, b Batch) error) error {
	switch {
	case p.Stream != nil:
		return p.Stream.Each(fn)
	case p.cut != nil:
		return p.cut.each(fn)
	}
	for i := range p.Batches {
		if err := fn(i, p.Batches[i]); err != nil {
			return err
		}
	}
	return nil
}

// NumBatches is how many batches the plan sends.
func (p *Plan) NumBatches() int {
	switch {
	case p.Stream != nil:
		return p.Summary.Batches
	case p.cut != nil:
		return p.cut.n
	}
	return len(p.Batches)
}

// AllBatches returns every batch in one slice, made now: for tests and
// small plans. A large plan is better walked with EachBatch.
func (p *Plan) AllBatches() []Batch {
	var all []Batch
	p.EachBatch(func(_ int, b Batch) error {
		all = append(all, b)
		return nil
	})
	return all
}

// Batch returns batch i of a plan that is not a Stream; the error is one of
// reading its body back from where Compute spooled it.
func (p *Plan) Batch(i int) (Batch, error) {
	if p.cut != nil {
		return p.cut.at(i)
	}
	return p.Batches[i], nil
}

// BatchedRecipients counts the recipients in the batches. A stream is not
// read for it: [Open] checked that its summary counts them.
func (p *Plan) BatchedRecipients() int {
	if p.Stream != nil || p.cut != nil {
		return p.Summary.ToSend
	}
	n := 0
	for _, b := range p.Batches {
		n += len(b.Recipients)
	}
	return n
}

// Batch is one request to the bulk SMS endpoint.
type Batch struct {
	ID         string       `json:"id"`
	Body       string       `json:"body"`
	Encoding   sms.Encoding `json:"encoding"`
	Segments   int          `json:"segments_per_message"`
	Recipients []string     `json:"recipients"` // E.164
	// Zones are the recipients' time zones (IANA names, sorted), the same
	// for each of them; none when neither the campaign's send window nor
	// a rule's hours concern them.
	Zones []string `json:"zones,omitempty"`
	// Hours are the hours rules allow the recipients in their local time
	// (window.Week's words: "mon-sat 09:00-21:00, sun 12:00-21:00"), met
	// with the campaign's send window when the batch goes; "" for none.
	Hours string `json:"hours,omitempty"`
}

// Invalid is a number that was skipped (or, with strict, failed the plan).
type Invalid struct {
	Source string `json:"source"` // "lists/customers.csv:12"
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// Held is a recipient the state holds back.
type Held struct {
	Phone   string `json:"phone"`
	BatchID string `json:"batch"`
	Reason  string `json:"reason,omitempty"`
}

// StateStamp identifies the state a plan was computed against.
type StateStamp struct {
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
	// Location is where the state is (a path, or a URL without its
	// password); FirstSend says that nothing was there, or a state that
	// records nothing yet (serial 0: made by an apply that failed before
	// sending): nobody is treated as already messaged, which a reviewer
	// must see.
	Location  string `json:"location,omitempty"`
	FirstSend bool   `json:"first_send"`
	// OptOutSeq is the number of the project's opt-out log whose opt-outs
	// the plan subtracted (0: none recorded): a saved plan is made again
	// with these, and numbers opted out since are skipped as it is sent.
	OptOutSeq int64 `json:"opt_out_seq,omitempty"`
	// EarlierState are the signs of an earlier state the plan saw where it
	// was made (a [RefusedEarlierState] refusal): a saved plan carries them,
	// so that apply, from whatever folder, refuses it unless told
	// --new-state, not only from one where the same signs show.
	EarlierState []string `json:"earlier_state,omitempty"`
}

// FirstSendNotice is what a plan says when there is no state to plan
// against, so that a lost state is seen before it means a resend.
func (s StateStamp) FirstSendNotice(campaign string) string {
	if !s.FirstSend {
		return ""
	}
	where := "no record of this campaign at " + s.Location
	if s.Lineage != "" {
		where = "the state at " + s.Location + " records nothing yet"
	}
	return fmt.Sprintf("%s: this is the first send of campaign %s; nobody will be treated as already messaged", where, campaign)
}

// Refusal is why apply will refuse a plan, said before any count: a plan
// that apply refuses must never read as a first send.
type Refusal struct {
	Kind   RefusalKind `json:"kind"`
	Reason string      `json:"reason"` // what apply would find, in a sentence
	Fix    string      `json:"fix"`    // the command (or step) that settles it
	// Signs are what a RefusedEarlierState refusal saw of the earlier
	// state, each in a sentence.
	Signs []string `json:"-"`
}

// RefusalKind names why apply refuses a plan, as JSON carries it.
type RefusalKind string

// The kinds of [Refusal], most fundamental first: a command that finds
// several shows the first.
const (
	// RefusedSplitLedger: another state records the campaign, or holds
	// the project's ledger, and was not migrated to the state in use.
	RefusedSplitLedger RefusalKind = "split_ledger"
	// RefusedUnchecked: a state that may record the campaign could not be
	// read; apply refuses unless told the campaign was never sent from it.
	RefusedUnchecked RefusalKind = "state_unchecked"
	// RefusedEarlierState: no record of the campaign, but signs that the
	// state once held one (see state.EarlierStateError).
	RefusedEarlierState RefusalKind = "earlier_state"
	// RefusedPaused: the campaign is paused.
	RefusedPaused RefusalKind = "paused"
)

// Recorded is what the plan needs of the state: *state.State satisfies it.
type Recorded interface {
	Path() string // where the state is, as it may be shown
	Lineage() string
	Serial() int64
	EachRecipient(ctx context.Context, fn func(state.Recipient) error) error
}

// StrictError fails a strict campaign that lists invalid numbers.
type StrictError struct{ Invalid []Invalid }

func (e *StrictError) Error() string {
	first := e.Invalid[0]
	return fmt.Sprintf("%s in a strict campaign; first: %s: %q: %s",
		words.N(len(e.Invalid), "invalid number", "invalid numbers"), first.Source, e164.MaskInvalid(first.Value), first.Reason)
}

// TotalSegments is the number of segments the batch costs.
func (b Batch) TotalSegments() int { return b.Segments * len(b.Recipients) }

// batchTable is a plan's batches as Compute left them: the groups of
// recipients by body, cut into batches of at most size. A batch, its id
// included, is made when asked for.
type batchTable struct {
	g      *groups
	bodies *bodyStore
	size   int
	zones  []*window.Zones // per group, with a send window
	hours  []string        // per group, with rules that set hours
	first  []int32         // per group: the number of its first batch
	n      int

	mu     sync.Mutex // over reader, which at shares
	reader *spoolReader
}

// newBatchTable cuts g into batches of at most size.
func newBatchTable(g *groups, bodies *bodyStore, size int) *batchTable {
	t := &batchTable{g: g, bodies: bodies, size: size, first: make([]int32, g.len())}
	for i := range g.len() {
		t.first[i] = int32(t.n)
		start, end := g.members(i)
		t.n += (end - start + size - 1) / size
	}
	return t
}

// batchHash is the first 8 bytes of the SHA-256 of a body and each of its
// phones after a zero byte: a batch's id, the same for the same inputs.
// scratch is reused between calls.
func batchHash(scratch *[]byte, body string, phones []string) [8]byte {
	buf := append((*scratch)[:0], body...)
	for _, p := range phones {
		buf = append(append(buf, 0), p...)
	}
	*scratch = buf
	sum := sha256.Sum256(buf)
	return [8]byte(sum[:8])
}

// BatchID is the id of the batch that sends body to phones, as Compute
// derives it: saved plans are checked against it.
func BatchID(body string, phones []string) string {
	var scratch []byte
	return batchID(batchHash(&scratch, body, phones))
}

// batchID is the id of the batch whose hash is h: "b-" and h in hex.
func batchID(h [8]byte) string {
	return string(hex.AppendEncode([]byte("b-"), h[:]))
}

// make returns chunk k of group gi, reading its body with r.
func (t *batchTable) make(r *spoolReader, scratch *[]byte, gi, k int) (Batch, error) {
	start, end := t.g.members(gi)
	start += k * t.size
	end = min(end, start+t.size)
	id := t.g.bodies[gi]
	body, err := r.at(int(id))
	if err != nil {
		return Batch{}, err
	}
	m := t.bodies.meta.at(int(id))
	phones := make([]string, end-start)
	for j := range phones {
		phones[j] = t.g.phones.at(start + j).String()
	}
	b := Batch{ID: batchID(batchHash(scratch, body, phones)), Body: body, Encoding: m.encoding(), Segments: int(m.segs),
		Recipients: phones}
	if t.zones != nil {
		b.Zones = t.zones[gi].Names()
	}
	if t.hours != nil {
		b.Hours = t.hours[gi]
	}
	return b, nil
}

func (t *batchTable) at(i int) (Batch, error) {
	gi := sort.Search(len(t.first), func(g int) bool { return int(t.first[g]) > i }) - 1
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reader == nil {
		t.reader = t.bodies.spool.reader()
	}
	var scratch []byte
	return t.make(t.reader, &scratch, gi, i-int(t.first[gi]))
}

func (t *batchTable) each(fn func(int, Batch) error) error {
	r := t.bodies.spool.reader()
	var scratch []byte
	i := 0
	for gi := range t.g.len() {
		start, end := t.g.members(gi)
		for k := 0; k*t.size < end-start; k++ {
			b, err := t.make(r, &scratch, gi, k)
			if err != nil {
				return err
			}
			if err := fn(i, b); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

func sortHeld(h []Held) {
	sort.Slice(h, func(i, j int) bool { return h[i].Phone < h[j].Phone })
}
