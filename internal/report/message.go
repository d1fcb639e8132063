package report

import (
	"fmt"
	"io"

	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// WriteMessage writes the one message batch b sends to phone, exactly as
// it goes: its encoding and segments, the body, and what forces UCS-2.
func WriteMessage(w io.Writer, phone string, b plan.Batch) error {
	a := sms.Analyze(b.Body)
	units := "septets"
	if a.Encoding == sms.UCS2 {
		units = "UTF-16 units"
	}
	fmt.Fprintf(w, "Recipient %s, batch %s: %s, %d %s, %d %s\n\n%s\n",
		phone, b.ID, a.Encoding, a.Segments, words.Plural(a.Segments, "segment", "segments"), a.Units, units, b.Body)
	if len(a.Forcing) > 0 {
		fmt.Fprintf(w, "\nUCS-2 because of %q: in GSM-7 it would be %d %s.\n",
			string(a.Forcing), a.SegmentsIfGSM7, words.Plural(a.SegmentsIfGSM7, "segment", "segments"))
	}
	return nil
}
