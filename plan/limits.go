package plan

import (
	"errors"
	"fmt"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/words"
)

// What the provider takes (provider.max_recipients, max_body_length) is
// checked when the plan is made, so that no request breaks it.

// batchSize is how many recipients one batch carries: the campaign's
// batch_size, cut to the most the provider takes in one request. It notes
// the cut, since the reviewer reads more batches than batch_size says.
func (b *builder) batchSize() int {
	size := b.c.BatchSize
	if limit := b.c.Provider.MaxRecipients; limit > 0 && limit < size {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
			"batches of %s, not batch_size's %s: provider.max_recipients is %s",
			words.N(limit, "recipient", "recipients"), words.Count(size), words.Count(limit)))
		size = limit
	}
	return size
}

// tooLong gathers the recipients whose body is longer than
// provider.max_body_length: the first maxListed rows, and how many.
type tooLong struct {
	rows []error
	n    int
}

const tooLongHint = "shorten the body or what it prints, or raise provider.max_body_length if the provider takes more"

func tooLongWords(chars, limit int) string {
	return fmt.Sprintf("the message is %s characters long, more than provider.max_body_length (%s)", words.Count(chars), words.Count(limit))
}

// noteLong notes a recipient whose body is longer than limit.
func (b *builder) noteLong(it *item, limit int) {
	t := &b.tooLong
	t.n++
	if len(t.rows) < maxListed {
		e := &campaign.Error{File: campaign.Plain(it.entry.File), Line: it.entry.Line, Field: "body", Msg: tooLongWords(int(it.meta.chars), limit)}
		if len(t.rows) == 0 {
			e.Hint = tooLongHint // once is enough
		}
		t.rows = append(t.rows, e)
	}
}

// noteTooLong fails the plan with the first rows whose body is longer than
// the provider takes, and a count of the rest: such a request would be
// refused, or worse, cut.
func (b *builder) noteTooLong() error {
	t := &b.tooLong
	if t.n == 0 {
		return nil
	}
	errs := t.rows
	if n := t.n - len(t.rows); n > 0 {
		errs = append(errs, fmt.Errorf("and %s more %s longer than provider.max_body_length", words.Count(n), words.Plural(n, "message", "messages")))
	}
	return errors.Join(errs...)
}
