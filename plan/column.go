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

func (c *column[T]) at(i int) T { return c.blocks[i>>blockBits][i&(blockLen-1)] }

func (c *column[T]) ptr(i int) *T { return &c.blocks[i>>blockBits][i&(blockLen-1)] }

// truncate keeps the first n values and gives back the blocks past them.
func (c *column[T]) truncate(n int) {
	keep := (n + blockLen - 1) >> blockBits
	clear(c.blocks[keep:])
	c.blocks = c.blocks[:keep]
	c.n = n
}
