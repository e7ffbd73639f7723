package preempt_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"

	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/preempt"
)

func TestEvictable(t *testing.T) {
	cases := []struct {
		share, fair, adjusted, protected float64
		want                             bool
	}{
		{0.6, 0.5, 0.5, 1, true},
		{0.5, 0.5, 0.5, 1, false},    // at fair share: protected
		{0.6, 0.5, 0.7, 1, false},    // adjusted share above fair share protects more
		{0.01, 0.5, 0.5, 0, true},    // protected 0: anything held is evictable
		{0, 0.5, 0.5, 0, false},      // holding nothing
		{0.9, 0.5, 0.5, 2, false},    // within 2 × fair share
		{0.75, 0.5, 0.5, 1.5, false}, // exactly at the protected share
		{0.76, 0.5, 0.5, 1.5, true},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, preempt.Evictable(c.share, c.fair, c.adjusted, c.protected), "%+v", c)
	}
}

func TestCompareOrder(t *testing.T) {
	t0 := time.Unix(0, 0)
	vs := []preempt.Victim{
		{Level: 2, QueueFraction: 9, Start: t0.Add(9), ID: "z"},
		{Level: 1, QueueFraction: 1, Start: t0, ID: "a"},
		{Level: 1, QueueFraction: 2, Start: t0, ID: "b"},
		{Level: 1, QueueFraction: 2, Start: t0.Add(1), ID: "c"},
		{Level: 1, QueueFraction: 2, Start: t0.Add(1), ID: "d"},
	}
	slices.SortFunc(vs, func(a, b preempt.Victim) int { return preempt.Compare(&a, &b) })
	var ids []string
	for _, v := range vs {
		ids = append(ids, v.ID)
	}
	// Lowest level; then the queue furthest above fair share; then latest
	// start; then greatest ID.
	assert.Equal(t, []string{"d", "c", "b", "a", "z"}, ids)
}

// room is a one-resource node: free capacity and candidate sizes.
type room struct {
	free, need int
	sizes      []int
}

func (r *room) fewest() []int {
	return preempt.Fewest(len(r.sizes), func() bool { return r.free >= r.need },
		func(i int) { r.free += r.sizes[i] }, func(i int) { r.free -= r.sizes[i] }, nil)
}

func TestFewestTakesAPrefixThenGivesBack(t *testing.T) {
	cases := []struct {
		name string
		r    room
		want []int
	}{
		{"already fits", room{free: 4, need: 4, sizes: []int{1, 2}}, []int{}},
		{"one is enough", room{free: 0, need: 2, sizes: []int{2, 8}}, []int{0}},
		{"a small one first is given back", room{free: 0, need: 8, sizes: []int{2, 8}}, []int{1}},
		{"both needed", room{free: 0, need: 9, sizes: []int{2, 8}}, []int{0, 1}},
		{"not enough even with all", room{free: 0, need: 20, sizes: []int{2, 8}}, []int{0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.r
			got := r.fewest()
			assert.Equal(t, c.want, append([]int{}, got...))
			want := c.r.free
			for _, i := range got {
				want += c.r.sizes[i]
			}
			assert.Equal(t, want, r.free, "take and give leave exactly the victims taken")
		})
	}
}

// Fewest is minimal among the candidates it took: giving back any single
// victim would leave too little room.
func TestPropertyFewestIsMinimalAndSufficient(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(42)
	params.MinSuccessfulTests = 500
	p := gopter.NewProperties(params)
	p.Property("sufficient when possible, and no victim is superfluous", prop.ForAll(func(sizes []int, need int) string {
		r := room{need: need, sizes: sizes}
		got := r.fewest()
		total := 0
		for _, s := range sizes {
			total += s
		}
		if total >= need && r.free < need {
			return fmt.Sprintf("room %d < need %d with %v taken of %v", r.free, need, got, sizes)
		}
		if total >= need {
			for _, i := range got {
				if r.free-sizes[i] >= need {
					return fmt.Sprintf("victim %d of %v is superfluous (need %d)", i, sizes, need)
				}
			}
		}
		return ""
	}, gen.SliceOfN(6, gen.IntRange(0, 8)), gen.IntRange(0, 30)))
	p.TestingRun(t)
}

func TestCompareReschedulingOrder(t *testing.T) {
	ev := func(prio int32, frac float64, queue string, pos int) preempt.Evicted {
		return preempt.Evicted{Candidate: fairness.Candidate{Queue: int(queue[0]), Name: queue, ClassPriority: prio, Fraction: frac}, Position: pos}
	}
	// Each case: a is rescheduled before b, by the named rule.
	cases := []struct {
		rule string
		a, b preempt.Evicted
	}{
		{"higher class first", ev(2, 9, "z", 9), ev(1, 0, "a", 0)},
		{"queue least far into its fair share after the job first", ev(1, 1.5, "z", 9), ev(1, 2, "a", 0)},
		{"smaller queue name on equal fractions", ev(1, 2, "a", 9), ev(1, 2, "b", 0)},
		{"earlier in the queue's evicted order", ev(1, 2, "a", 3), ev(1, 2, "a", 4)},
	}
	for _, c := range cases {
		assert.Negative(t, preempt.CompareRescheduling(&c.a, &c.b, false), c.rule)
		assert.Positive(t, preempt.CompareRescheduling(&c.b, &c.a, false), c.rule)
		assert.Zero(t, preempt.CompareRescheduling(&c.a, &c.a, false), c.rule)
	}
}
