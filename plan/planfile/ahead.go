package planfile

import (
	"io"
	"sync"
)

// aheadSize is how much a plan file is decompressed ahead of its parsing,
// per chunk; aheadChunks chunks are in flight at most.
const (
	aheadSize   = 256 << 10
	aheadChunks = 3
)

// aheadReader decompresses on a goroutine of its own, a few chunks ahead of
// whoever reads it: reading a plan is two tasks (inflating, then parsing
// and checking), and a machine has more than one core. Close stops the
// goroutine and waits for it.
type aheadReader struct {
	chunks chan chunk
	free   chan []byte
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	cur  []byte // what is left of the chunk being read
	held []byte // that chunk, to give back
	err  error  // the error that ended the chunks
}

type chunk struct {
	b   []byte
	err error
}

func readAhead(r io.Reader) *aheadReader {
	a := &aheadReader{chunks: make(chan chunk, aheadChunks), free: make(chan []byte, aheadChunks+1), done: make(chan struct{})}
	for range aheadChunks {
		a.free <- make([]byte, aheadSize)
	}
	a.wg.Go(func() {
		for {
			var buf []byte
			select {
			case buf = <-a.free:
			case <-a.done:
				return
			}
			n, err := fill(r, buf)
			select {
			case a.chunks <- chunk{buf[:n], err}:
			case <-a.done:
				return
			}
			if err != nil {
				return
			}
		}
	})
	return a
}

// fill reads into buf until it is full or r fails (io.EOF included).
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (a *aheadReader) Read(p []byte) (int, error) {
	for len(a.cur) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		if a.held != nil {
			a.free <- a.held[:aheadSize]
			a.held = nil
		}
		c := <-a.chunks
		a.held, a.cur, a.err = c.b, c.b, c.err
	}
	n := copy(p, a.cur)
	a.cur = a.cur[n:]
	return n, nil
}

// Close stops the reading ahead and waits for it to end.
func (a *aheadReader) Close() {
	a.once.Do(func() { close(a.done) })
	a.wg.Wait()
}
