package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/smsform/smsform/internal/e164"
)

// Cap is a frequency cap: at most Max messages to one number in any window
// of Per, across every campaign of the project. Marketing counts only the
// marketing messages the state records (a law's cap, such as Florida's);
// otherwise every message counts.
type Cap struct {
	Max       int
	Per       time.Duration
	Marketing bool
}

func (c Cap) String() string {
	s := fmt.Sprintf("%d per %s", c.Max, c.Per)
	if c.Marketing {
		s += " (marketing)"
	}
	return s
}

// Caps is what a campaign's sends are held to: caps for every number, and
// those a number's own rules add (nil: none), whether the campaign's
// messages are marketing.
type Caps struct {
	All       []Cap
	PerNumber func(phone string) []Cap
	// PerNumberLongest is the longest window PerNumber may give: how far
	// back a plan reads the index for them.
	PerNumberLongest time.Duration
	Marketing        bool
}

// of is the caps that hold the number phone.
func (c *Caps) of(phone string) []Cap {
	if c.PerNumber == nil {
		return c.All
	}
	more := c.PerNumber(phone)
	if len(more) == 0 {
		return c.All
	}
	return append(slices.Clone(c.All), more...)
}

// Any reports whether any cap may hold someone.
func (c *Caps) Any() bool { return c != nil && (len(c.All) > 0 || c.PerNumber != nil) }

// longest is the longest window of the caps that hold any of phones.
func (c *Caps) longest(phones []string) time.Duration {
	var d time.Duration
	for _, x := range c.All {
		d = max(d, x.Per)
	}
	if c.PerNumber != nil {
		for _, p := range phones {
			for _, x := range c.PerNumber(p) {
				d = max(d, x.Per)
			}
		}
	}
	return d
}

// send is one send of a number's recent ones.
type send struct {
	at        int64
	marketing bool
}

// capSecond is the second the cap index records a send made at t: the
// next whole second when t falls between two, so that a recorded send is
// never older than the real one and the window never lets a number go
// early (a window's start is rounded down: a send at its edge counts a
// second longer, never a second shorter).
func capSecond(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// sendableAt is when a number whose recent sends are es may be messaged
// again under caps, as of now: now when every cap lets it go.
func sendableAt(caps []Cap, es []send, now time.Time) time.Time {
	at := now
	in := make([]int64, 0, 8) // on the stack for up to 8: a plan asks this of every recent number
	for _, c := range caps {
		from := now.Add(-c.Per).Unix()
		in = in[:0]
		for _, e := range es {
			if e.at > from && (e.marketing || !c.Marketing) {
				in = append(in, e.at)
			}
		}
		if len(in) < c.Max {
			continue
		}
		slices.Sort(in)
		// The window must lose len(in)-c.Max+1 sends: the last of those
		// goes out of it Per after it was made.
		if until := time.Unix(in[len(in)-c.Max], 0).Add(c.Per).UTC(); until.After(at) {
			at = until
		}
	}
	return at
}

// CapHolds is, for every number the caps hold back at now, when it may be
// messaged again: what a plan reports as held back. It reads the sends of
// the longest window any of the caps may have, in the order of the index
// on (at, phone, marketing) that answers it alone (a day's window of a
// month's ledger is a thirtieth of it), and puts each number's together
// here.
func (v *View) CapHolds(ctx context.Context, c *Caps, now time.Time) (*e164.Map[time.Time], error) {
	m := e164.NewMap[time.Time](0)
	if v.db == nil || !c.Any() {
		return m, nil
	}
	per := c.PerNumberLongest
	for _, x := range c.All {
		per = max(per, x.Per)
	}
	sends, err := v.recentSends(ctx, now.Add(-per).Unix())
	if err != nil {
		return nil, err
	}
	hold := func(phone string, es []send) (time.Time, bool) {
		at := sendableAt(c.of(phone), es, now)
		return at, at.After(now)
	}
	for k, es := range sends.byNumber() {
		phone := ""
		if c.PerNumber != nil {
			phone = k.String() // only a number's own caps need it written out
		}
		if at, held := hold(phone, es); held {
			p, _ := m.RefPacked(k)
			*p = at
		}
	}
	for phone, es := range sends.other {
		if at, held := hold(phone, es); held {
			p, _ := m.Ref(phone)
			*p = at
		}
	}
	return m, nil
}

// recentSends are the cap index's sends after a time, as read.
type recentSends struct {
	packed []packedSend
	other  map[string][]send // numbers that do not pack (a state written by hand)
}

type packedSend struct {
	phone e164.Packed
	send
}

// recentSends reads the sends after the unix time from.
func (v *View) recentSends(ctx context.Context, from int64) (*recentSends, error) {
	rows, err := v.db.QueryContext(ctx, v.q[qSendsSince], from)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", v.shown, err)
	}
	defer rows.Close()
	r := &recentSends{}
	var phone sql.RawBytes
	var s send
	for rows.Next() {
		if err := rows.Scan(&phone, &s.at, &s.marketing); err != nil {
			return nil, fmt.Errorf("read state %s: %w", v.shown, err)
		}
		if k, ok := e164.Pack(string(phone)); ok {
			r.packed = append(r.packed, packedSend{k, s})
			continue
		}
		if r.other == nil {
			r.other = map[string][]send{}
		}
		r.other[string(phone)] = append(r.other[string(phone)], s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", v.shown, err)
	}
	return r, nil
}

// byNumber yields each number that packs with its sends (the others are
// in other).
func (r *recentSends) byNumber() iter.Seq2[e164.Packed, []send] {
	return func(yield func(e164.Packed, []send) bool) {
		slices.SortFunc(r.packed, func(a, b packedSend) int { return cmp.Compare(a.phone, b.phone) })
		es := make([]send, 0, 8)
		for i := 0; i < len(r.packed); {
			k := r.packed[i].phone
			es = es[:0]
			for ; i < len(r.packed) && r.packed[i].phone == k; i++ {
				es = append(es, r.packed[i].send)
			}
			if !yield(k, es) {
				return
			}
		}
	}
}
