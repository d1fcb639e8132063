package report

import (
	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/plan"
	"github.com/smsform/smsform/state"
)

// Masking is on the path every output takes: writers read a plan's
// people (its batches, samples, invalid numbers, held recipients,
// duplicates, removed numbers) through a [shown], and a state's records
// through [Output.recipient], never from the plan or the state, so that no
// writer can forget a number. What is masked: each recipient's number
// (e164.Mask), every form of it a body or a reason prints (e164.MaskIn,
// with the batch's, the sample's or the record's own number: a body is
// always shown with its batch), any long run of digits in a provider's
// words that name no known recipient (e164.MaskAny), and invalid values
// down to what tells them apart (e164.MaskInvalid).

// shown is a plan as output shows it: its numbers masked unless
// Output.ShowNumbers.
type shown struct {
	p *plan.Plan
	o Output
}

// show is p as o shows it.
func (o Output) show(p *plan.Plan) shown { return shown{p: p, o: o} }

// number is a valid phone number as output shows it.
func (o Output) number(phone string) string {
	if o.ShowNumbers {
		return phone
	}
	return o.masker.Mask(phone)
}

// text is text that may print one of numbers (a body, a reason), as
// output shows it.
func (o Output) text(text string, numbers ...string) string {
	if o.ShowNumbers {
		return text
	}
	return e164.MaskIn(text, numbers...)
}

// reason is a provider's reason for a recipient's outcome: it may echo
// that number, or others.
func (o Output) reason(reason string, phone string) string {
	if o.ShowNumbers || reason == "" {
		return reason
	}
	return e164.MaskAny(e164.MaskIn(reason, phone))
}

// batch is b as output shows it: recipients, and their numbers in its body.
func (o Output) batch(b plan.Batch) plan.Batch {
	if o.ShowNumbers {
		return b
	}
	nums := make([]string, len(b.Recipients))
	for j, r := range b.Recipients {
		nums[j] = o.masker.Mask(r)
	}
	b.Body = e164.MaskIn(b.Body, b.Recipients...)
	b.Recipients = nums
	return b
}

// eachBatch walks the plan's batches as output shows them.
func (s shown) eachBatch(fn func(i int, b plan.Batch) error) error {
	return s.p.EachBatch(func(i int, b plan.Batch) error { return fn(i, s.o.batch(b)) })
}

// batch is batch i as output shows it (see [plan.Plan.Batch]).
func (s shown) batch(i int) (plan.Batch, error) {
	b, err := s.p.Batch(i)
	return s.o.batch(b), err
}

// samples are the plan's samples: the number, and its forms in the body.
func (s shown) samples() []plan.Sample {
	out := make([]plan.Sample, 0, len(s.p.Samples))
	for _, x := range s.p.Samples {
		x.Body = s.o.text(x.Body, x.Phone)
		x.Phone = s.o.number(x.Phone)
		x.Why = append([]string{}, x.Why...)
		out = append(out, x)
	}
	return out
}

// invalid are the values that are not valid numbers: nobody's number as
// written, shown enough to be told apart.
func (s shown) invalid() []plan.Invalid {
	out := make([]plan.Invalid, 0, len(s.p.Invalid))
	for _, inv := range s.p.Invalid {
		if !s.o.ShowNumbers {
			inv.Value = s.o.masker.Invalid(inv.Value)
		}
		out = append(out, inv)
	}
	return out
}

// held are recipients the state holds back, and the provider's reasons.
func (s shown) held(h []plan.Held) []plan.Held {
	out := make([]plan.Held, len(h))
	for i, x := range h {
		x.Reason = s.o.reason(x.Reason, x.Phone)
		x.Phone = s.o.number(x.Phone)
		out[i] = x
	}
	return out
}

func (s shown) duplicates() []plan.Duplicate {
	out := make([]plan.Duplicate, 0, len(s.p.DuplicateRows))
	for _, d := range s.p.DuplicateRows {
		d.Phone = s.o.number(d.Phone)
		out = append(out, d)
	}
	return out
}

func (s shown) removed() []string {
	out := make([]string, 0, len(s.p.Removed))
	for _, r := range s.p.Removed {
		out = append(out, s.o.number(r))
	}
	return out
}

// recipient is a state's record as output shows it.
func (o Output) recipient(r state.Recipient) state.Recipient {
	r.Reason = o.reason(r.Reason, r.Phone)
	r.Phone = o.number(r.Phone)
	return r
}
