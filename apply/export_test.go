package apply

import "github.com/smsform/smsform/plan"

// Backoff exposes backoff to the external tests.
var Backoff = backoff

// CompareBatches exposes compareBatches to the external tests.
func CompareBatches(saved, derived func(func(int, plan.Batch) error) error) error {
	return compareBatches(saved, derived)
}

// Unattempted exposes unattempted to the external tests.
var Unattempted = unattempted

// RunJournal is the journal a command's run uses around j (start.go), for
// the external tests to run as the command does.
func RunJournal(j Journal) Journal { return &runJournal{j: j} }
