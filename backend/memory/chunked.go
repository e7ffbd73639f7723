package memory

// chunkShift sets the block length of a chunked sequence: 1024 values
// (32 KiB of events), so that a job set wastes at most one partly filled
// block.
const (
	chunkShift = 10
	chunkLen   = 1 << chunkShift
)

// chunked is an append-only sequence kept in blocks of chunkLen values
// (the first block grows as a slice does, up to chunkLen): appending never
// copies more than one block, so a job set of millions of jobs grows its
// log and job list without copying them whole at each doubling, and
// without the garbage of the outgrown arrays.
type chunked[T any] struct {
	blocks [][]T
	n      int
}

// len is the number of values.
func (c *chunked[T]) len() int { return c.n }

// at returns the i-th value, 0 ≤ i < len.
func (c *chunked[T]) at(i int) *T { return &c.blocks[i>>chunkShift][i&(chunkLen-1)] }

// append adds v at the end.
func (c *chunked[T]) append(v T) {
	if len(c.blocks) == 0 || len(c.blocks[len(c.blocks)-1]) == chunkLen {
		var b []T
		if len(c.blocks) > 0 {
			b = make([]T, 0, chunkLen)
		}
		c.blocks = append(c.blocks, b)
	}
	last := &c.blocks[len(c.blocks)-1]
	*last = append(*last, v)
	c.n++
}
