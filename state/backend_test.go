package state

import (
	"path/filepath"
	"testing"

	"github.com/smsform/smsform/internal/pgtest"
)

// pg is the PostgreSQL server of this test binary, started when a test
// first needs it (see TestMain).
var pg = pgtest.New(pgtest.Options{})

// backend is one place a state can live. Every test run through
// eachBackend is the shared suite: what a State promises, whatever holds it.
type backend struct {
	name string
	loc  func(t *testing.T) string // a new, empty location
}

var backends = []backend{
	{"file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "spring.smsstate") }},
	{"postgres", func(t *testing.T) string { return pg.Database(t) }},
}

func eachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}
