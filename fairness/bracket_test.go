package fairness_test

import (
	"testing"

	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/fairness"
)

// A Bracket chooses as a sorted list would: its first slot is the
// Compare-least candidate after any sequence of updates and removals.
func TestBracketProperties(t *testing.T) {
	props := properties(t)
	props.Property("First is the Compare-least candidate under random Update/Remove", prop.ForAll(
		func(ops []op, preferLarge bool, slots int) bool {
			b, ref := fairness.NewBracket(slots, preferLarge), model{}
			for _, o := range ops {
				s := o.Cand.Queue % slots
				c := o.Cand
				c.Queue = s
				switch o.Kind {
				case 0, 1, 2:
					b.Update(s, &c)
					ref[s] = c
				case 3:
					_, had := ref[s]
					if b.Remove(s) != had {
						return false
					}
					delete(ref, s)
				}
				want := ref.sorted(preferLarge)
				got, ok := b.First()
				if ok != (len(want) > 0) || ok && (got != want[0].Queue || b.Candidate(got) != want[0]) {
					return false
				}
				if b.Len() != len(ref) {
					return false
				}
				for q := range slots {
					if _, in := ref[q]; b.Contains(q) != in {
						return false
					}
				}
			}
			return true
		},
		genOps(), gen.Bool(), gen.IntRange(1, 21),
	))
	props.TestingRun(t)
}

func TestBracketEdges(t *testing.T) {
	empty := fairness.NewBracket(0, false)
	_, ok := empty.First()
	assert.False(t, ok, "a bracket of no slots has no first")
	assert.False(t, empty.Contains(0))
	assert.False(t, empty.Remove(0))

	one := fairness.NewBracket(1, false)
	one.Update(0, &fairness.Candidate{Name: "a", Queue: 7})
	first, ok := one.First()
	require.True(t, ok)
	assert.Equal(t, 0, first)
	assert.Equal(t, 0, one.Candidate(0).Queue, "the slot, not the caller's Queue")
	assert.True(t, one.Remove(0))
	_, ok = one.First()
	assert.False(t, ok)
	assert.Equal(t, 0, one.Len())

	// The best sinks: the replay must carry the new winner to the final.
	b := fairness.NewBracket(5, false)
	for s, f := range []float64{0.5, 0.1, 0.3, 0.2, 0.4} {
		b.Update(s, &fairness.Candidate{Name: "q", Fraction: f})
	}
	for _, want := range []int{1, 3, 2, 4, 0} {
		got, _ := b.First()
		require.Equal(t, want, got)
		b.Update(got, &fairness.Candidate{Name: "q", Fraction: 1 + float64(got)})
	}
	assert.Panics(t, func() { b.Update(5, &fairness.Candidate{}) }, "slot out of range")
}

func TestBracketDoesNotAllocate(t *testing.T) {
	b := fairness.NewBracket(20, false)
	c := fairness.Candidate{Name: "q"}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		c.Fraction = float64(i%13) / 10
		b.Update(i%20, &c)
		if i%7 == 0 {
			b.Remove(i % 20)
		}
		b.First()
	})
	assert.Zero(t, allocs)
}
