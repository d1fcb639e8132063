// Package sms knows the rules of the short message itself: which encoding a
// body needs (GSM-7 or UCS-2), how many segments it costs, and which sender
// names an operator accepts.
package sms

// Encoding is the character set a message is sent in.
type Encoding string

const (
	GSM7 Encoding = "GSM-7"
	UCS2 Encoding = "UCS-2"
)

// Analysis describes what a body costs to send.
type Analysis struct {
	Encoding Encoding
	// Units is the length in the encoding's units: septets for GSM-7
	// (extension-table characters count twice), UTF-16 code units for UCS-2.
	Units int
	// Segments is how many SMS parts the body is sent as (160/153 septets for
	// GSM-7, 70/67 code units for UCS-2).
	Segments int
	// Forcing lists, in order of first appearance and without repeats, the
	// characters that are not in GSM-7 and so force UCS-2. Empty for GSM-7.
	Forcing []rune
	// SegmentsIfGSM7 is what the body would cost if the forcing characters
	// were replaced by GSM-7 ones (one septet each); equal to Segments for GSM-7.
	SegmentsIfGSM7 int
}

// Analyze returns the encoding and segment count of body.
func Analyze(body string) Analysis { panic("todo") }

// CheckSender reports why s is not an acceptable sender, or nil: an
// alphanumeric sender is 1-11 letters, digits and spaces with at least one
// letter; otherwise it must be an E.164 number or a 3-8 digit short code.
func CheckSender(s string) error { panic("todo") }
