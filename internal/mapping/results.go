package mapping

import (
	"fmt"

	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/words"
)

// Outcome is what an element of an answer says of its recipient.
type Outcome uint8

const (
	// Unrecognised: a status that no list of the mapping names, or no
	// usable status at all. The recipient is in doubt.
	Unrecognised Outcome = iota
	// Sent: the provider took it.
	Sent
	// Failed: the provider refused it for good.
	Failed
	// Retry: the provider did not act on it (throttled): sent again later.
	Retry
	// InDoubt: the provider may have it (a duplicate), or the mapping
	// says so of a whole list.
	InDoubt
)

var outcomeNames = [...]string{Unrecognised: "unrecognised", Sent: "sent", Failed: "failed", Retry: "retry", InDoubt: "in_doubt"}

func (o Outcome) String() string { return outcomeNames[o] }

// ParseOutcome reads an outcome as a configuration writes it: sent,
// failed, retry or in_doubt.
func ParseOutcome(s string) (Outcome, bool) {
	for o, name := range outcomeNames {
		if name == s && Outcome(o) != Unrecognised {
			return Outcome(o), true
		}
	}
	return 0, false
}

// List is one list of an answer and how to read its elements.
type List struct {
	List   rawjson.Pointer // the list in the answer
	Number rawjson.Pointer // in each element: the recipient's number; "" is the element itself
	// Status, in each element, is looked up in the lists below. Nil when
	// Outcome is set: every element of the list has that outcome.
	Status  *rawjson.Pointer
	Outcome Outcome
	ID      *rawjson.Pointer // in each element: the provider's id for the message; nil: none
	Reason  *rawjson.Pointer // in each element: the provider's words; nil: none
	// Statuses by meaning.
	Sent, Retry, Duplicate, Failed []Value
	// Optional: an answer without this list (or with null there) has it
	// empty, rather than being unreadable.
	Optional bool
	// Where the list is declared ("smsform.yaml:12"), for messages.
	Where string
}

// OutcomeOf is what status v means under l.
func (l *List) OutcomeOf(v Value) Outcome {
	switch {
	case l.Status == nil:
		return l.Outcome
	case v.IsZero():
		return Unrecognised
	case contains(l.Sent, v):
		return Sent
	case contains(l.Failed, v):
		return Failed
	case contains(l.Retry, v):
		return Retry
	case contains(l.Duplicate, v):
		return InDoubt
	}
	return Unrecognised
}

func contains(vs []Value, v Value) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// Results is how a provider's answer to a send lists its recipients: one
// list or several, what a recipient no list names means, and where the
// answer gives an id to the whole request.
type Results struct {
	Lists []List
	// Others is the outcome of a recipient no list names: InDoubt, or Sent
	// for providers that list only refusals. Sent holds only for an answer
	// read whole ([Answer.Complete]); otherwise they are in doubt.
	Others  Outcome
	BatchID *rawjson.Pointer
}

// Element is one element of an answer's list, as the provider wrote it
// and what the mapping makes of it.
type Element struct {
	List int // its list, an index of Results.Lists
	// Number is the recipient as the provider echoed it (maybe without +,
	// with 00, national); "" only in the answer to a request of one
	// recipient, where an element that names none can only be about it
	// (Vonage's refusals name no number).
	Number  string
	Outcome Outcome
	// Status is the element's status as written (a string unquoted, a
	// number or boolean as text); with no usable status, NoStatus says what
	// was there instead ("absent", "null", "an object").
	Status, NoStatus string
	ID               string // the provider's id for this message; "" when none
	Reason           string // the provider's words; never read for an accepted element
}

// Answer is what an answer says of its recipients.
type Answer struct {
	Elements []Element
	BatchID  string
	// Problem says why the answer cannot be read as the mapping says (a
	// list missing or not a list): then nothing in it settles anyone.
	Problem string
	// Complete: every list was found (or optional and absent) and read to
	// its end, and every element read names a number (any element, in the
	// answer to one recipient), so a recipient none names is named by none.
	// An element without a number may be about any recipient of the
	// request: it leaves the answer not complete.
	Complete bool
}

// Cleaner makes a provider's text fit to keep: ids and statuses (short,
// printable) and words (secrets scrubbed).
type Cleaner interface {
	ID(s string) string
	Words(s string) string
}

// slack is how many elements past one per recipient a list may hold (a
// provider may list a recipient once per part of a long message): the
// rest is not read, so that a huge answer costs no more than a bounded
// one.
const slack = 16

// MaxElements is the most elements of one list read for a send to n
// recipients.
func MaxElements(n int) int { return 2*n + slack }

// Read reads doc, a send's answer (valid JSON) to n recipients.
func (r *Results) Read(doc []byte, n int, clean Cleaner) Answer {
	a := Answer{Complete: true, Elements: make([]Element, 0, n+slack)}
	if r.BatchID != nil {
		if v, err := r.BatchID.Lookup(doc); err == nil {
			a.BatchID = clean.ID(rawjson.Text(v))
		}
	}
	rd := reader{clean: clean, statuses: map[string]Value{}}
	for i := range r.Lists {
		l := &r.Lists[i]
		// The list is read as it is found (a key written twice: its last
		// value is read last), not found first and then read again.
		mark := len(a.Elements)
		var found []byte // the value, up to the start of a list
		whole := true    // the list read to its end, each element naming a number
		err := l.List.Visit(doc, func(v []byte) int {
			a.Elements = a.Elements[:mark]
			if v[0] != '[' {
				end := rawjson.SkipValue(v, 0)
				found = v[:end]
				return end
			}
			found = v[:1]
			var end int
			end, whole = rd.list(&a, i, l, v, n)
			return end
		})
		absent := err != nil || string(found) == "null"
		switch {
		case absent && l.Optional:
			a.Elements = a.Elements[:mark]
			continue
		case err != nil:
			a.Problem = "the answer has no list of recipients at " + l.List.String() + ": " + err.Error()
		case found[0] != '[':
			a.Problem = fmt.Sprintf("the answer holds %s at %s, not a list of recipients", rawjson.Kind(found), l.List.String())
		}
		if a.Problem != "" {
			a.Elements, a.Complete = nil, false
			return a
		}
		if !whole {
			a.Complete = false
		}
	}
	return a
}

// reader reads the elements of an answer's lists.
type reader struct {
	clean Cleaner
	// statuses: a status's value and cleaned text by its JSON text, since
	// they repeat (a thousand PENDING).
	statuses map[string]Value
	texts    map[string]string
}

// list appends the elements of the list at the start of list (JSON text
// of an array, and what follows it in the answer) that name a number (any
// element, in the answer to one recipient), up to MaxElements(n); it
// returns the index just past the list, and whether it read the list to
// its end with every element naming a number (see [Answer.Complete]).
func (rd *reader) list(a *Answer, at int, l *List, list []byte, n int) (int, bool) {
	limit := MaxElements(n)
	// The picker's slots: the number first, then each pointer the list
	// has (-1: none).
	ptrs := []rawjson.Pointer{l.Number}
	slot := func(p *rawjson.Pointer) int {
		if p == nil {
			return -1
		}
		ptrs = append(ptrs, *p)
		return len(ptrs) - 1
	}
	status, id, reason := slot(l.Status), slot(l.ID), slot(l.Reason)
	pk := rawjson.NewPicker(ptrs...)
	found := make([][]byte, len(ptrs))
	named := true // every element read names a number
	i := rawjson.SkipSpace(list, 1)
	for read := 0; i < len(list) && list[i] != ']'; read++ {
		if read == limit {
			return rawjson.SkipValue(list, 0), false
		}
		i = pk.Pick(list, i, found)
		if i < len(list) && list[i] == ',' {
			i = rawjson.SkipSpace(list, i+1)
		}
		num := rawjson.Text(found[0])
		if num == "" && n != 1 {
			// Names nobody: it may be about any recipient of the request,
			// so those the answer does not name are not named by none.
			named = false
			continue
		}
		e := Element{List: at, Number: words.Clip(num, 40)}
		if l.Status == nil {
			e.Outcome = l.Outcome
		} else {
			var v Value
			v, e.Status, e.NoStatus = rd.status(found[status])
			e.Outcome = l.OutcomeOf(v)
		}
		if id >= 0 {
			e.ID = rd.clean.ID(rawjson.Text(found[id]))
		}
		// The words of an accepted recipient are not kept: reading them
		// would only cost time on the common path.
		if reason >= 0 && e.Outcome != Sent {
			e.Reason = rd.clean.Words(rawjson.Text(found[reason]))
		}
		a.Elements = append(a.Elements, e)
	}
	return i + 1, named // past the ]
}

// status is the value of a status's JSON text raw, its cleaned text, and
// what stood there when it is no usable status.
func (rd *reader) status(raw []byte) (Value, string, string) {
	// Looked up before it is read: reading it is most of the cost of an
	// element whose status repeats.
	if t, ok := rd.texts[string(raw)]; ok {
		return rd.statuses[string(raw)], t, ""
	}
	v, kind := ValueOfJSON(raw)
	if kind != "" {
		return v, "", kind
	}
	t := words.Clip(rd.clean.ID(v.written(raw)), 64)
	if len(rd.statuses) < 64 {
		if rd.texts == nil {
			rd.texts = map[string]string{}
		}
		rd.statuses[string(raw)], rd.texts[string(raw)] = v, t
	}
	return v, t, ""
}

// written is the status as the provider wrote it: a string unquoted, a
// number or boolean as its text.
func (v Value) written(raw []byte) string {
	if raw[0] == '"' {
		return rawjson.Text(raw)
	}
	return string(raw)
}
