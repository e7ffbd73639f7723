package memory

import (
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// TestChunkedHoldsWhatASliceWouldAndNeverMovesAValuePastTheFirstBlock: a
// chunked sequence reads back as the slice of the same appends, and a
// value past the first block (which grows as a slice does) stays at its
// address whatever is appended after it: a long log is never copied
// whole.
func TestChunkedHoldsWhatASliceWouldAndNeverMovesAValuePastTheFirstBlock(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(20261122)
	params.MinSuccessfulTests = 30
	props := gopter.NewProperties(params)
	props.Property("chunked = slice", prop.ForAll(func(n int) bool {
		var c chunked[int]
		var naive []int
		var addrs []*int
		for i := range n {
			c.append(i * 7)
			naive = append(naive, i*7)
			addrs = append(addrs, c.at(i))
		}
		if c.len() != len(naive) {
			return false
		}
		for i, v := range naive {
			if *c.at(i) != v || (i >= chunkLen && c.at(i) != addrs[i]) {
				return false
			}
		}
		return true
	}, gen.IntRange(0, 3*chunkLen+5)))
	props.TestingRun(t)
}
