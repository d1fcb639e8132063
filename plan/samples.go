package plan

import (
	"github.com/smsform/smsform/internal/e164"

	"github.com/smsform/smsform/internal/sms"
)

// Sample is one rendered message a reviewer should see, and why it was
// chosen: "longest", "shortest", "UCS-2", "most segments", "empty variable",
// or "every recipient" for a body that is the same for all.
type Sample struct {
	Why        []string     `json:"why"`
	Phone      string       `json:"phone"`
	Body       string       `json:"body"`
	Encoding   sms.Encoding `json:"encoding"`
	Segments   int          `json:"segments"`
	Characters int          `json:"characters"`
}

// candidate is a recipient a sampler holds on to.
type candidate struct {
	ok    bool
	phone e164.Packed
	body  int32 // its id in the bodyStore
	meta  bodyMeta
}

// sampler picks the informative messages among those to send as they go
// by, holding one candidate per reason: memory does not grow with the plan.
// Ties go to the first seen, so the samples follow the lists' order.
type sampler struct {
	longest, shortest, ucs2, most, empty candidate
}

func (s *sampler) consider(phone e164.Packed, body int32, m bodyMeta) {
	c := candidate{ok: true, phone: phone, body: body, meta: m}
	if !s.longest.ok || m.chars > s.longest.meta.chars {
		s.longest = c
	}
	if !s.shortest.ok || m.chars < s.shortest.meta.chars {
		s.shortest = c
	}
	// The UCS-2 one that costs the most, as a reviewer would want to see it.
	if m.flags&flagUCS2 != 0 && (!s.ucs2.ok || m.segs > s.ucs2.meta.segs) {
		s.ucs2 = c
	}
	if m.segs > 1 && (!s.most.ok || m.segs > s.most.meta.segs) {
		s.most = c
	}
	if m.flags&flagEmpty != 0 && !s.empty.ok {
		s.empty = c
	}
}

// samples lists the candidates, each recipient once with all its reasons,
// their bodies read from r.
func (s *sampler) samples(bodies *spoolReader) ([]Sample, error) {
	out := []Sample{}
	for _, r := range []struct {
		why string
		c   candidate
	}{
		{"longest", s.longest}, {"shortest", s.shortest}, {"UCS-2", s.ucs2},
		{"most segments", s.most}, {"empty variable", s.empty},
	} {
		if !r.c.ok {
			continue
		}
		found := false
		for i := range out {
			if out[i].Phone == r.c.phone.String() {
				out[i].Why = append(out[i].Why, r.why)
				found = true
			}
		}
		if !found {
			body, err := bodies.at(int(r.c.body))
			if err != nil {
				return nil, err
			}
			out = append(out, Sample{Why: []string{r.why}, Phone: r.c.phone.String(), Body: body,
				Encoding: r.c.meta.encoding(), Segments: int(r.c.meta.segs), Characters: int(r.c.meta.chars)})
		}
	}
	return out, nil
}
