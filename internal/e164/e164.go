// Package e164 turns phone numbers as people write them into E.164, with
// exactly the verdicts of github.com/nyaruka/phonenumbers, and masks them for
// output that is meant to be shared.
package e164

// Number is a valid phone number.
type Number struct {
	E164 string // "+447700900123"
	// FixedLineOnly is true when the number can only be a fixed line (it
	// cannot receive SMS on most networks); FIXED_LINE_OR_MOBILE is false.
	FixedLineOnly bool
}

// InvalidError says why a number was refused, in words for a person:
// "too short", "unknown country code", "not a valid number", ...
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return e.Reason }

// Normalizer parses numbers for one default region ("" means every number
// must be written in E.164 with a leading +). It is safe for concurrent use.
type Normalizer struct{ region string }

// NewNormalizer returns a Normalizer for region (an ISO 3166 code or "").
func NewNormalizer(region string) *Normalizer { return &Normalizer{region: region} }

// Normalize parses raw and returns the number, or an *InvalidError.
func (n *Normalizer) Normalize(raw string) (Number, error) { panic("todo") }

// Mask hides the middle of an E.164 number for shared output:
// "+447700900123" -> "+44 77•• •••123".
func Mask(e164 string) string { panic("todo") }

// ValidRegion reports whether region is a region code phonenumbers knows.
func ValidRegion(region string) bool { panic("todo") }
