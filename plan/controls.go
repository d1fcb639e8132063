package plan

import (
	"context"
	"time"

	"github.com/smsform/smsform/state"
)

// Controls is what a state tells of a campaign's running besides its
// recipients: whether it is paused, its last test send, and how fast its
// provider answered the last apply. *state.State has it; a [Recorded]
// without it plans as if none of these were known.
type Controls interface {
	Paused() *state.Pause
	LastTestSend(ctx context.Context) (*state.TestSend, error)
	Latency() time.Duration
}

// readControls sets what the plan shows of the campaign's running: the
// pause, the last test send, and the estimate of its sending time.
func (b *builder) readControls(ctx context.Context, rec Recorded) error {
	var measured time.Duration
	if c, ok := rec.(Controls); ok {
		b.p.Paused = c.Paused()
		last, err := c.LastTestSend(ctx)
		if err != nil {
			return err
		}
		b.p.LastTest, measured = last, c.Latency()
	}
	b.p.Estimate = estimate(b.p.NumBatches(), b.c.Rate.PerSecond(), b.c.Concurrency, b.c.Provider.ExpectedLatency, measured)
	return nil
}
