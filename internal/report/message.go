package report

import (
	"fmt"
	"io"

	"github.com/smsform/smsform/internal/sms"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan"
)

// WriteMessage writes the one message batch b sends to phone, exactly as
// it goes: its encoding and segments, the body, and what forces UCS-2. The
// number, and any form of it the body prints, are masked unless
// o.ShowNumbers, like every output's (the encoding and the segments are
// those of the body as it goes).
func WriteMessage(w io.Writer, phone string, b plan.Batch, o Output) error {
	a := sms.Analyze(b.Body)
	unit, units := "septet", "septets"
	if a.Encoding == sms.UCS2 {
		unit, units = "UTF-16 unit", "UTF-16 units"
	}
	fmt.Fprintf(w, "Recipient %s, batch %s: %s, %s, %s\n\n%s\n",
		o.number(phone), b.ID, a.Encoding, words.N(a.Segments, "segment", "segments"), words.N(a.Units, unit, units), visibleLines(o.text(b.Body, phone)))
	if len(a.Forcing) > 0 {
		fmt.Fprintf(w, "\nUCS-2 because of %q: in GSM-7 it would be %s.\n",
			string(a.Forcing), words.N(a.SegmentsIfGSM7, "segment", "segments"))
	}
	return nil
}
