package plan

// column is a slice that grows by blocks: appending never copies what it
// holds, so that a column of ten million values never exists twice while it
// grows. Its values hold no pointers, and the collector does not read them.
type column[T any] struct {
	blocks [][]T
	n      int
}

const (
	blockBits = 16
	blockLen  = 1 << blockBits
)

func (c *column[T]) len() int { return c.n }

func (c *column[T]) append(v T) {
	if c.n&(blockLen-1) == 0 && c.n>>blockBits == len(c.blocks) {
		c.blocks = append(c.blocks, make([]T, blockLen))
	}
	c.blocks[c.n>>blockBits][c.n&(blockLen-1)] = v
	c.n++
}

// extend lengthens the column by n values, a block at a time, for the
// caller to write through ptr (they are zero unless the column was
// truncated): cheaper than n appends.
func (c *column[T]) extend(n int) {
	for n > 0 {
		if c.n&(blockLen-1) == 0 && c.n>>blockBits == len(c.blocks) {
			c.blocks = append(c.blocks, make([]T, blockLen))
		}
		k := min(n, blockLen-c.n&(blockLen-1)) // room in the last block
		c.n += k
		n -= k
	}
}

func (c *column[T]) at(i int) T { return c.blocks[i>>blockBits][i&(blockLen-1)] }

func (c *column[T]) ptr(i int) *T { return &c.blocks[i>>blockBits][i&(blockLen-1)] }

// truncate keeps the first n values and gives back the blocks past them.
func (c *column[T]) truncate(n int) {
	keep := (n + blockLen - 1) >> blockBits
	clear(c.blocks[keep:])
	c.blocks = c.blocks[:keep]
	c.n = n
}
