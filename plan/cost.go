package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/internal/words"
)

// Cost is what a plan costs, from the campaign's price table. Amounts are
// exact decimals in Currency (JSON: decimal strings).
type Cost struct {
	Currency string `json:"currency"`
	// Total is the cost of what is to send: for each country and price
	// row, recipients × segments per message × price per segment.
	Total decimal.Decimal `json:"total"`
	// AlreadySpent is the cost of what the state records as sent, for the
	// recipients still in the campaign. The state keeps a hash of each
	// body sent, not the body: a body that hashes as today's is priced
	// exactly; one that changed since is priced as today's body
	// (AlreadySpentEstimated counts those).
	AlreadySpent          decimal.Decimal `json:"already_spent"`
	AlreadySpentEstimated int             `json:"already_spent_estimated"`
	ByCountry             []CountryCost   `json:"by_country"`
	// Unpriced lists, by country, the recipients to send that no row of
	// the table prices: they are not in Total, which is then too low.
	Unpriced []CountryCount `json:"unpriced"`
}

// CountryCost is what is to send to one country and what it costs.
type CountryCost struct {
	Country    string          `json:"country"`
	Recipients int             `json:"recipients"`
	Segments   int             `json:"segments"`
	Cost       decimal.Decimal `json:"cost"`
}

// CountryCount is what is to send to one country. Country is the ISO 3166
// code, or "001" for non-geographical numbers (+800…).
type CountryCount struct {
	Country    string `json:"country"`
	Recipients int    `json:"recipients"`
	Segments   int    `json:"segments"`
}

// SegmentCount is how many messages to send have one encoding and number of
// segments.
type SegmentCount struct {
	Encoding           sms.Encoding `json:"encoding"`
	SegmentsPerMessage int          `json:"segments_per_message"`
	Messages           int          `json:"messages"`
	Segments           int          `json:"segments"`
}

const (
	flagUCS2  uint8 = 1 << iota // the body is sent as UCS-2
	flagEmpty                   // the body prints an empty variable
)

func (m bodyMeta) encoding() sms.Encoding {
	if m.flags&flagUCS2 != 0 {
		return sms.UCS2
	}
	return sms.GSM7
}

// metaOf analyses a body.
func metaOf(body string) bodyMeta {
	a := sms.Analyze(body)
	m := bodyMeta{chars: clamp16(utf8.RuneCountInString(body)), segs: clamp16(a.Segments), gsm: clamp16(a.SegmentsIfGSM7)}
	if a.Encoding == sms.UCS2 {
		m.flags |= flagUCS2
	}
	return m
}

func clamp16(n int) uint16 { return uint16(min(n, 0xffff)) }

// packRegion packs a region code ("GB", or "001" for non-geographical
// numbers) in two bytes; 0 is unknown.
func packRegion(r string) uint16 {
	switch {
	case len(r) == 2:
		return uint16(r[0])<<8 | uint16(r[1])
	case r == "001":
		return 1
	}
	return 0
}

func unpackRegion(v uint16) string {
	switch v {
	case 0:
		return "??"
	case 1:
		return "001"
	}
	return string([]byte{byte(v >> 8), byte(v)})
}

// costKey is what pricing needs of a recipient: every recipient of one key
// costs the same. A plan aggregates by key rather than keep a price per
// recipient.
type costKey struct {
	region, row, segs uint16
	ucs2              bool
}

func costKeyOf(p place, m bodyMeta) costKey {
	return costKey{region: p.region, row: p.row, segs: m.segs, ucs2: m.flags&flagUCS2 != 0}
}

// tally counts recipients by costKey.
type tally map[costKey]int

// price sums a tally: by country, unpriced, and the total. prices may be nil.
func (t tally) price(prices *campaign.Prices) (countries []CountryCount, byCountry []CountryCost, unpriced []CountryCount, total decimal.Decimal) {
	all := map[string]*CountryCount{}
	priced := map[string]*CountryCost{}
	none := map[string]*CountryCount{}
	for k, n := range t {
		country := unpackRegion(k.region)
		segs := n * int(k.segs)
		addCount(all, country, n, segs)
		if prices == nil {
			continue
		}
		if k.row == 0 {
			addCount(none, country, n, segs)
			continue
		}
		cost := prices.Rows[k.row-1].Price.Mul(decimal.NewFromInt(int64(segs)))
		pc := priced[country]
		if pc == nil {
			pc = &CountryCost{Country: country}
			priced[country] = pc
		}
		pc.Recipients += n
		pc.Segments += segs
		pc.Cost = pc.Cost.Add(cost)
		total = total.Add(cost)
	}
	countries = sortedCounts(all)
	unpriced = sortedCounts(none)
	byCountry = make([]CountryCost, 0, len(priced))
	for _, c := range priced {
		byCountry = append(byCountry, *c)
	}
	// The dearest first: that is where a reviewer looks.
	slices.SortFunc(byCountry, func(a, b CountryCost) int {
		if c := b.Cost.Cmp(a.Cost); c != 0 {
			return c
		}
		return strings.Compare(a.Country, b.Country)
	})
	return countries, byCountry, unpriced, total
}

// addCount adds n recipients and segs segments to country's count in m.
func addCount(m map[string]*CountryCount, country string, n, segs int) {
	c := m[country]
	if c == nil {
		c = &CountryCount{Country: country}
		m[country] = c
	}
	c.Recipients += n
	c.Segments += segs
}

func sortedCounts(m map[string]*CountryCount) []CountryCount {
	out := make([]CountryCount, 0, len(m))
	for _, c := range m {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b CountryCount) int {
		if c := cmp.Compare(b.Recipients, a.Recipients); c != 0 {
			return c
		}
		return strings.Compare(a.Country, b.Country)
	})
	return out
}

// distribution counts messages by encoding and segments per message.
func (t tally) distribution() []SegmentCount {
	type enc struct {
		ucs2 bool
		segs uint16
	}
	m := map[enc]int{}
	for k, n := range t {
		m[enc{k.ucs2, k.segs}] += n
	}
	out := make([]SegmentCount, 0, len(m))
	for e, n := range m {
		sc := SegmentCount{Encoding: sms.GSM7, SegmentsPerMessage: int(e.segs), Messages: n, Segments: n * int(e.segs)}
		if e.ucs2 {
			sc.Encoding = sms.UCS2
		}
		out = append(out, sc)
	}
	slices.SortFunc(out, func(a, b SegmentCount) int {
		if c := strings.Compare(string(a.Encoding), string(b.Encoding)); c != 0 {
			return c
		}
		return cmp.Compare(a.SegmentsPerMessage, b.SegmentsPerMessage)
	})
	return out
}

// Spent is what was spent on some of the messages already sent, by
// country, priced as Cost.AlreadySpent is (today's body for one that
// changed since).
type Spent struct {
	Currency  string          `json:"currency,omitempty"` // "" without a price table
	Total     decimal.Decimal `json:"total"`
	ByCountry []CountryCost   `json:"by_country"`
	// Unpriced lists, by country, the messages no row of the table prices
	// (all of them without a price table): they are not in Total.
	Unpriced []CountryCount `json:"unpriced"`
}

// undelivered prices a tally of messages reported undelivered.
func (t tally) undelivered(prices *campaign.Prices) *Spent {
	countries, byCountry, unpriced, total := t.price(prices)
	s := &Spent{Total: total, ByCountry: byCountry, Unpriced: unpriced}
	if prices == nil {
		s.ByCountry, s.Unpriced = []CountryCost{}, countries
		return s
	}
	s.Currency = prices.Currency
	return s
}

// spent is the cost of a tally of what was sent.
func (t tally) spent(prices *campaign.Prices) decimal.Decimal {
	var total decimal.Decimal
	for k, n := range t {
		if k.row != 0 {
			total = total.Add(prices.Rows[k.row-1].Price.Mul(decimal.NewFromInt(int64(n) * int64(k.segs))))
		}
	}
	return total
}

// BudgetCheck is a plan held against the campaign's budget.
type BudgetCheck struct {
	MaxTotal              *decimal.Decimal `json:"max_total,omitempty"`
	MaxSegmentsPerMessage int              `json:"max_segments_per_message,omitempty"`
	MaxRecipients         int              `json:"max_recipients,omitempty"`
	// Exceeded says, one line each, what breaks the budget and by how
	// much; empty when the plan is within it.
	Exceeded []string `json:"exceeded"`
}

// BudgetError is a plan that breaks its campaign's budget.
type BudgetError struct{ Exceeded []string }

func (e *BudgetError) Error() string {
	return "over budget: " + strings.Join(e.Exceeded, "; ")
}

// CheckBudget holds p against b, the campaign's budget, and returns what it
// found (nil when the campaign sets no budget) and a *BudgetError when the
// plan breaks it. The bounds are the campaign's: cost and recipients count
// what the state records as sent as well as what is to send.
func CheckBudget(p *Plan, b campaign.Budget) (*BudgetCheck, error) {
	if b.MaxTotal == nil && b.MaxSegmentsPerMessage == 0 && b.MaxRecipients == 0 {
		return nil, nil
	}
	check := &BudgetCheck{MaxTotal: b.MaxTotal, MaxSegmentsPerMessage: b.MaxSegmentsPerMessage, MaxRecipients: b.MaxRecipients, Exceeded: []string{}}
	over := func(format string, args ...any) {
		check.Exceeded = append(check.Exceeded, fmt.Sprintf(format, args...))
	}
	if b.MaxTotal != nil {
		switch c := p.Cost; {
		case c == nil:
			over("the plan has no cost to hold against max_total (it was made without a price table)")
		case len(c.Unpriced) > 0:
			n, names := 0, make([]string, 0, len(c.Unpriced))
			for _, u := range c.Unpriced {
				n += u.Recipients
				names = append(names, u.Country)
			}
			over("%s in %s %s no price, so the cost cannot be held against max_total %s",
				words.N(n, "recipient", "recipients"), strings.Join(names, ", "), words.Plural(n, "has", "have"), words.Money(c.Currency, *b.MaxTotal))
		default:
			all := c.Total.Add(c.AlreadySpent)
			if all.GreaterThan(*b.MaxTotal) {
				m := words.NewAmounts(c.Currency, all, c.Total, c.AlreadySpent, *b.MaxTotal)
				spent := ""
				if c.AlreadySpent.IsPositive() {
					spent = fmt.Sprintf(" (%s to send + %s already spent)", m.Money(c.Total), m.Money(c.AlreadySpent))
				}
				over("cost %s%s exceeds max_total %s by %s", m.Money(all), spent, m.Money(*b.MaxTotal), m.Money(all.Sub(*b.MaxTotal)))
			}
		}
	}
	if m := b.MaxSegmentsPerMessage; m > 0 {
		n, most := 0, 0
		for _, d := range p.Distribution {
			if d.SegmentsPerMessage > m {
				n += d.Messages
				most = max(most, d.SegmentsPerMessage)
			}
		}
		if n > 0 {
			over("%s %s more than max_segments_per_message %s: up to %s, %s over",
				words.N(n, "message", "messages"), words.Plural(n, "needs", "need"), words.Count(m), words.Count(most), words.Count(most-m))
		}
	}
	if m := b.MaxRecipients; m > 0 {
		if n := p.Summary.ToSend + p.Summary.AlreadySent; n > m {
			over("%s recipients (to send + already sent) exceed max_recipients %s by %s", words.Count(n), words.Count(m), words.Count(n-m))
		}
	}
	if len(check.Exceeded) > 0 {
		return check, &BudgetError{Exceeded: check.Exceeded}
	}
	return check, nil
}

// price fills in what the plan shows of the recipients to send: by
// country, by encoding and segments, the cost, and the samples.
func (b *builder) price() error {
	p := b.p
	countries, byCountry, unpriced, total := b.toSend.price(b.c.Prices)
	p.Countries = countries
	p.Distribution = b.toSend.distribution()
	samples, err := b.sampler.samples(b.bodies.spool.reader())
	if err != nil {
		return err
	}
	p.Samples = samples
	if b.shared && len(p.Samples) > 0 {
		p.Samples = p.Samples[:1]
		p.Samples[0].Why = []string{"every recipient"}
	}
	if b.undelivered != nil {
		p.Undelivered = b.undelivered.undelivered(b.c.Prices)
	}
	prices := b.c.Prices
	if prices == nil {
		return nil
	}
	p.Cost = &Cost{
		Currency:              prices.Currency,
		Total:                 total,
		AlreadySpent:          b.spent.spent(prices),
		AlreadySpentEstimated: p.BodyChanged,
		ByCountry:             byCountry,
		Unpriced:              unpriced,
	}
	if len(unpriced) > 0 {
		n, names := 0, make([]string, 0, len(unpriced))
		for _, u := range unpriced {
			n += u.Recipients
			names = append(names, fmt.Sprintf("%s (%s)", u.Country, words.Count(u.Recipients)))
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"%s %s no price in %s: %s; the total leaves them out (add a row for each country)",
			words.Count(n), words.Plural(n, "recipient has", "recipients have"), prices.File, strings.Join(names, ", ")))
	}
	return nil
}

// ucs2Cost is what sending UCS-2 rather than GSM-7 costs more, from the
// recipients to send; ok is false when some of them have no price.
func (b *builder) ucs2Cost() (extra decimal.Decimal, ok bool) {
	ok = true
	for k, n := range b.ucs2Extra {
		if k == 0 {
			ok = false
			continue
		}
		extra = extra.Add(b.c.Prices.Rows[k-1].Price.Mul(decimal.NewFromInt(int64(n))))
	}
	return extra, ok
}
