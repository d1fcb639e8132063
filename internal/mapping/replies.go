package mapping

import (
	"fmt"
	"strings"
	"time"

	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/words"
)

// Replies is how the replies a provider forwards (what recipients sent
// back) are read. Every pointer but List is inside one reply.
type Replies struct {
	// List is the list of replies in a body; nil: the body is one reply.
	List   *rawjson.Pointer
	Number rawjson.Pointer // who replied
	// ID is the provider's own id of the reply (Twilio's MessageSid): the
	// same reply posted again is told by it from a new one of the same
	// words; nil: none.
	ID *rawjson.Pointer
	// DefaultRegion is the country of a number written without its
	// country code ("" when the provider always writes it).
	DefaultRegion string
	Text          rawjson.Pointer
	At            *rawjson.Pointer // nil: none
	Where         string           // where the mapping is declared, for messages
}

// Reply is one reply as the mapping read it.
type Reply struct {
	ID     string // the provider's id of the reply; "" when it gives none
	Number string // as the provider wrote it
	// Text is what the recipient wrote, cut to MaxReplyText bytes. It is
	// handed on whole so that the receiver can tell a stop word from a
	// sentence; what of it is kept is the receiver's decision.
	Text string
	At   time.Time // zero when the reply does not say
}

// MaxReplyText is the most of a reply's text read: ten SMS segments, far
// past any stop word.
const MaxReplyText = 1600

// Read reads the replies of doc, a body as [Doc] gives it. A reply without
// a number or a text, or with a time that is not one, makes the whole body
// unreadable.
func (r *Replies) Read(doc []byte, clean Cleaner) ([]Reply, error) {
	ptrs := []rawjson.Pointer{r.Number, r.Text}
	slot := func(p *rawjson.Pointer) int {
		if p == nil {
			return -1
		}
		ptrs = append(ptrs, *p)
		return len(ptrs) - 1
	}
	at, id := slot(r.At), slot(r.ID)
	pk := rawjson.NewPicker(ptrs...)
	found := make([][]byte, len(ptrs))
	var out []Reply
	err := eachElement(doc, r.List, func(n int, el []byte) error {
		pk.Pick(el, 0, found)
		rep := Reply{Number: words.Clip(strings.TrimSpace(rawjson.Text(found[0])), 40)}
		switch {
		case rep.Number == "":
			return fmt.Errorf("%s: no number at %s", which(r.List, n), r.Number)
		case found[1] == nil || found[1][0] != '"':
			return fmt.Errorf("%s: no text at %s", which(r.List, n), r.Text)
		}
		rep.Text = words.Clip(rawjson.Text(found[1]), MaxReplyText)
		if at >= 0 {
			var err error
			if rep.At, err = readTime(found[at], r.At); err != nil {
				return fmt.Errorf("%s: %w", which(r.List, n), err)
			}
		}
		if id >= 0 {
			rep.ID = words.Clip(clean.ID(strings.TrimSpace(rawjson.Text(found[id]))), 128)
		}
		out = append(out, rep)
		return nil
	})
	return out, err
}
