package report

import (
	"strings"

	"github.com/smsform/smsform/plan"
)

// masked is the sample as output shows it: its number masked, also where
// the body prints it ({{ .phone }}).
func (o Output) sample(s plan.Sample) plan.Sample {
	if o.ShowNumbers {
		return s
	}
	masked := o.number(s.Phone)
	s.Body = strings.ReplaceAll(s.Body, s.Phone, masked)
	s.Phone = masked
	s.Why = append([]string{}, s.Why...)
	return s
}
