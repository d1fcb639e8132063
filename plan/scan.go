package plan

import (
	"context"
	"runtime"
	"sync"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/compliance"
	"github.com/smsform/smsform/internal/e164"
)

// item is one recipient on its way through scan.
type item struct {
	entry     campaign.Row
	num       e164.Number
	err       error  // the number is invalid
	body      string // rendered, for a personalised body
	sum       bodySum
	meta      bodyMeta
	renderErr error
	empty     []string // the variables the body prints blank
	place     place
	// violations are the rules the rendered body breaks (see checker).
	violations []*compliance.Violation
}

// chunkSize is how many entries travel together through scan: enough that
// handing chunks between goroutines costs little.
const chunkSize = 2048

type chunk struct {
	items []item
	done  chan struct{}
}

// scan reads src, runs process on chunks of entries on all cores, and hands the
// results to deliver one at a time in file order, so that the plan is the
// same whatever the scheduling. Delivered chunks are cleared and reused.
func scan(ctx context.Context, src campaign.Source, process func([]item), deliver func(*item) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *chunk, workers*2)
	ordered := make(chan *chunk, workers*4)
	free := make(chan *chunk, workers*6+2)

	var readErr error
	go func() {
		defer close(ordered)
		defer close(jobs)
		newChunk := func() *chunk {
			select {
			case ch := <-free:
				return ch
			default:
				return &chunk{items: make([]item, 0, chunkSize), done: make(chan struct{})}
			}
		}
		cur := newChunk()
		// A chunk goes to the workers before it joins the ordered queue, so
		// every chunk the consumer waits on is sure to be processed.
		flush := func() error {
			select {
			case jobs <- cur:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case ordered <- cur:
			case <-ctx.Done():
				return ctx.Err()
			}
			cur = newChunk()
			return nil
		}
		readErr = src.ReadRows(ctx, func(e campaign.Row) error {
			cur.items = append(cur.items, item{entry: e})
			if len(cur.items) == chunkSize {
				return flush()
			}
			return nil
		})
		if readErr == nil && len(cur.items) > 0 {
			readErr = flush()
		}
	}()

	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ch := range jobs {
				process(ch.items)
				close(ch.done)
			}
		})
	}

	var err error
	for ch := range ordered {
		<-ch.done
		for i := 0; err == nil && i < len(ch.items); i++ {
			if err = deliver(&ch.items[i]); err != nil {
				cancel()
			}
		}
		clear(ch.items)
		ch.items, ch.done = ch.items[:0], make(chan struct{})
		select {
		case free <- ch:
		default:
		}
	}
	wg.Wait()
	if err != nil {
		return err
	}
	return readErr
}
