package server

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/internal/fakeclock"
)

// seqReader is deterministic entropy: a seeded stream of bytes.
type seqReader struct{ rng *rand.Rand }

func (r seqReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.rng.Uint32())
	}
	return len(p), nil
}

func newSeqReader(seed uint64) seqReader { return seqReader{rand.New(rand.NewPCG(seed, 3))} }

func TestULIDsAre26CrockfordCharactersStrictlyIncreasingAndStartWithTheMilliseconds(t *testing.T) {
	clock := fakeclock.New(testNow)
	next := NewULIDs(clock, newSeqReader(1))
	prev := ""
	for i := range 50 {
		if i%7 == 0 {
			clock.Advance(time.Millisecond)
		}
		id := next()
		require.Len(t, id, 26)
		require.Equal(t, -1, strings.IndexFunc(id, func(r rune) bool { return !strings.ContainsRune(crockford, r) }), id)
		require.Greater(t, id, prev)
		prev = id
	}
	// The first ten characters are the milliseconds: a later millisecond
	// sorts after any id of an earlier one.
	a := next()
	clock.Advance(time.Millisecond)
	b := next()
	require.Less(t, a[:10], b[:10])
}

func TestULIDBatchIsTheIdsThatSuccessiveCallsGiveAtOneClockReading(t *testing.T) {
	clock := fakeclock.New(testNow)
	one, many := newULIDSource(clock, newSeqReader(9)), newULIDSource(clock, newSeqReader(9))
	for _, n := range []int{1, 5, 0, 1000, 3} {
		want := make([]string, n)
		for i := range want {
			want[i] = one.next()
		}
		got := many.batch(n)
		require.Len(t, got, n)
		for i := range got {
			require.Equal(t, want[i], got[i], "batch of %d, id %d", n, i)
		}
		clock.Advance(time.Millisecond)
	}
}
