package state

import (
	"fmt"

	"github.com/smsform/smsform/internal/rawjson"
)

// An attempt's recipients are kept as a JSON array of strings, so that the
// sqlite3 shell (json_each) and PostgreSQL (jsonb) can expand them; they
// are written with rawjson.AppendStrings and read with eachPhone.

// eachPhone calls fn with every phone of the JSON array a.
func eachPhone(a string, fn func(phone string)) error {
	if err := rawjson.EachString(a, fn); err != nil {
		return fmt.Errorf("phones of an attempt: %w", err)
	}
	return nil
}

// attemptStatus is what an attempt in state st makes of its recipients, if
// it is their latest: forgotten and resolved_unsent leave no record.
func attemptStatus(st string) Status {
	switch AttemptState(st) {
	case AttemptSent, AttemptResolvedSent:
		return Sent
	case AttemptFailed:
		return Failed
	case AttemptIntent, AttemptInDoubt:
		return InDoubt
	case AttemptSuppressed:
		return Suppressed
	}
	return Unsent
}
