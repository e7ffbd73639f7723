package memory

import (
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// TestARecordKeepsItsHandleAndAddressWhateverIsAddedAfterIt: a record
// store gives out handles 0, 1, 2, … (a record's position), each new
// record zero, and a record stays at its address, first block included,
// while records are added after it (Commit holds *jobRec across adds).
func TestARecordKeepsItsHandleAndAddressWhateverIsAddedAfterIt(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(20261127)
	params.MinSuccessfulTests = 30
	props := gopter.NewProperties(params)
	props.Property("handles are positions; records never move", prop.ForAll(func(n int) bool {
		var s recStore
		var addrs []*jobRec
		for i := range n {
			h, r := s.add()
			if h != uint32(i) || s.len() != i+1 || r != s.at(h) || *r != (jobRec{}) {
				return false
			}
			r.attempts = int32(i)
			addrs = append(addrs, r)
		}
		for i, a := range addrs {
			if s.at(uint32(i)) != a || a.attempts != int32(i) {
				return false
			}
		}
		return true
	}, gen.IntRange(0, 3*recBlockLen+5)))
	props.TestingRun(t)
}
