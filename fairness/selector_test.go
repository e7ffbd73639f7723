package fairness_test

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/fairness"
)

func names(cs []fairness.Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func drain(s *fairness.Selector) []fairness.Candidate {
	var out []fairness.Candidate
	for {
		c, ok := s.Pop()
		if !ok {
			return out
		}
		out = append(out, c)
	}
}

func TestSelectorOrder(t *testing.T) {
	// Two queues of equal weight on an empty 32-core cluster: fair share 0.5,
	// adjusted 0.5 each. A's next gang is 16 cores, B's is 1 core.
	emptyA := fairness.NewCandidate(0, "A", 0, 0, 0.5, 0.5, 0.5)
	emptyB := fairness.NewCandidate(1, "B", 0, 0, 1.0/32, 0.5, 0.5)
	tests := []struct {
		name        string
		preferLarge bool
		cands       []fairness.Candidate
		want        []string
	}{
		{
			"smallest fraction of fair share first, ties by name",
			false,
			[]fairness.Candidate{{Queue: 0, Name: "a", Fraction: 0.5}, {Queue: 1, Name: "c", Fraction: 0.25}, {Queue: 2, Name: "b", Fraction: 0.25}},
			[]string{"b", "c", "a"},
		},
		{
			"higher priority class before any fairness",
			false,
			[]fairness.Candidate{{Queue: 0, Name: "a", Fraction: 0.1, ClassPriority: 20000}, {Queue: 1, Name: "b", Fraction: 5, ClassPriority: 30000}},
			[]string{"b", "a"},
		},
		{
			"same name: queue index decides",
			false,
			[]fairness.Candidate{{Queue: 7, Name: "x", Fraction: 1}, {Queue: 3, Name: "x", Fraction: 1}},
			[]string{"x", "x"},
		},
		{
			"plain: the small gang goes first on an empty cluster",
			false,
			[]fairness.Candidate{emptyA, emptyB},
			[]string{"B", "A"},
		},
		{
			// Armada's "should scheduled largest job first - prioritiseLargerJobs enabled".
			"prefer-large: the large gang goes first on an empty cluster",
			true,
			[]fairness.Candidate{emptyA, emptyB},
			[]string{"A", "B"},
		},
		{
			"prefer-large: within budget, less held now goes first whatever the gang",
			true,
			[]fairness.Candidate{
				{Queue: 0, Name: "a", Current: 0.4, Fraction: 0.5, Budget: 1, Size: 0.05},
				{Queue: 1, Name: "b", Current: 0.2, Fraction: 0.9, Budget: 1, Size: 0.35},
			},
			[]string{"b", "a"},
		},
		{
			"plain: the same two by fraction after the gang",
			false,
			[]fairness.Candidate{
				{Queue: 0, Name: "a", Current: 0.4, Fraction: 0.5, Budget: 1, Size: 0.05},
				{Queue: 1, Name: "b", Current: 0.2, Fraction: 0.9, Budget: 1, Size: 0.35},
			},
			[]string{"a", "b"},
		},
		{
			"prefer-large: within budget before over budget, even at a larger fraction",
			true,
			[]fairness.Candidate{
				{Queue: 0, Name: "a", Current: 0.1, Fraction: 0.3, Budget: 0.2},
				{Queue: 1, Name: "b", Current: 1.2, Fraction: 1.5, Budget: 2},
			},
			[]string{"b", "a"},
		},
		{
			"prefer-large: both over budget, smaller fraction first",
			true,
			[]fairness.Candidate{
				{Queue: 0, Name: "a", Current: 0.9, Fraction: 1.3, Budget: 1, Size: 9},
				{Queue: 1, Name: "b", Current: 1.0, Fraction: 1.1, Budget: 1, Size: 1},
			},
			[]string{"b", "a"},
		},
		{
			"prefer-large: exactly at budget counts as within",
			true,
			[]fairness.Candidate{
				{Queue: 0, Name: "a", Fraction: 1.0001, Budget: 1},
				{Queue: 1, Name: "b", Current: 0.5, Fraction: 1, Budget: 1},
			},
			[]string{"b", "a"},
		},
		{
			"prefer-large: priority class still first",
			true,
			[]fairness.Candidate{
				{Queue: 0, Name: "a", Fraction: 0.5, Budget: 1, Size: 9, ClassPriority: 1},
				{Queue: 1, Name: "b", Fraction: 5, Budget: 1, ClassPriority: 2},
			},
			[]string{"b", "a"},
		},
		{
			"no fair share goes last",
			false,
			[]fairness.Candidate{fairness.NewCandidate(0, "a", 0, 0, 0.1, 0, 0), fairness.NewCandidate(1, "b", 0, 0.9, 0.1, 0.1, 0.1)},
			[]string{"b", "a"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, perm := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
				s := fairness.NewSelector(tc.preferLarge)
				for _, i := range perm {
					if i < len(tc.cands) {
						s.Push(tc.cands[i])
					}
				}
				assert.Equal(t, tc.want, names(drain(s)))
			}
		})
	}
}

func TestNewCandidate(t *testing.T) {
	c := fairness.NewCandidate(3, "q", 20000, 0.2, 0.1, 0.25, 0.5)
	assert.Equal(t, 3, c.Queue)
	assert.Equal(t, "q", c.Name)
	assert.Equal(t, int32(20000), c.ClassPriority)
	assert.InDelta(t, 1.2, c.Fraction, 1e-15)
	assert.InDelta(t, 0.8, c.Current, 1e-15)
	assert.InDelta(t, 2.0, c.Budget, 1e-15)
	assert.InDelta(t, 0.025, c.Size, 1e-15)

	none := fairness.NewCandidate(0, "z", 0, 0, 0.1, 0, 0)
	assert.True(t, math.IsInf(none.Fraction, 1))
	assert.True(t, math.IsInf(none.Current, 1))
	assert.Zero(t, none.Budget)
}

func TestSelectorOperations(t *testing.T) {
	s := fairness.NewSelector(false)
	_, ok := s.Peek()
	assert.False(t, ok)
	_, ok = s.Pop()
	assert.False(t, ok)
	assert.False(t, s.Remove(0))
	assert.False(t, s.Contains(-1))

	s.Push(fairness.Candidate{Queue: 5, Name: "e", Fraction: 0.5})
	s.Push(fairness.Candidate{Queue: 2, Name: "b", Fraction: 0.7})
	s.Push(fairness.Candidate{Queue: 0, Name: "a", Fraction: 0.9})
	assert.Equal(t, 3, s.Len())
	assert.True(t, s.Contains(2))
	assert.False(t, s.Contains(1))
	assert.False(t, s.Contains(99))

	c, ok := s.Peek()
	require.True(t, ok)
	assert.Equal(t, "e", c.Name)
	assert.Equal(t, 3, s.Len(), "Peek leaves the candidate in place")

	// The scheduler placed e's gang: e's next gang takes it past the others.
	s.Update(5, fairness.Candidate{Name: "e", Fraction: 1.5})
	c, _ = s.Peek()
	assert.Equal(t, "b", c.Name)

	// Update sets Queue; Push of a present queue replaces its candidate.
	s.Push(fairness.Candidate{Queue: 0, Name: "a", Fraction: 0.1})
	assert.Equal(t, 3, s.Len())
	c, _ = s.Peek()
	assert.Equal(t, fairness.Candidate{Queue: 0, Name: "a", Fraction: 0.1}, c)

	assert.True(t, s.Remove(2))
	assert.False(t, s.Contains(2))
	assert.Equal(t, []string{"a", "e"}, names(drain(s)))
	assert.Zero(t, s.Len())

	// Update of an absent queue adds it.
	s.Update(1, fairness.Candidate{Queue: 42, Name: "x"})
	c, _ = s.Pop()
	assert.Equal(t, 1, c.Queue)
}

func TestSelectorReset(t *testing.T) {
	s := fairness.NewSelector(true)
	for q := range 10 {
		s.Push(fairness.Candidate{Queue: q, Fraction: float64(q)})
	}
	s.Reset()
	assert.Zero(t, s.Len())
	for q := range 10 {
		assert.False(t, s.Contains(q))
	}
	s.Push(fairness.Candidate{Queue: 4, Name: "again"})
	c, ok := s.Pop()
	require.True(t, ok)
	assert.Equal(t, "again", c.Name)
}

func TestSelectorNegativeQueuePanics(t *testing.T) {
	s := fairness.NewSelector(false)
	assert.Panics(t, func() { s.Push(fairness.Candidate{Queue: -1}) })
}

func TestSelectorDoesNotAllocate(t *testing.T) {
	for _, preferLarge := range []bool{false, true} {
		s := fairness.NewSelector(preferLarge)
		for q := range 100 {
			s.Push(fairness.NewCandidate(q, "queue", 0, float64(q%10)/100, 0.01, 0.01, 0.02))
		}
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			i++
			c, _ := s.Pop()
			c.Current = c.Fraction
			c.Fraction += float64(i%7) / 100
			s.Update(c.Queue, c)
			top, _ := s.Peek()
			top.Fraction += 0.001
			s.Update(top.Queue, top)
			if i%10 == 0 {
				s.Remove(i % 100)
				s.Push(fairness.Candidate{Queue: i % 100, Name: "back"})
			}
		})
		assert.Zero(t, allocs, "preferLarge=%v", preferLarge)
	}
}

// armadaLess transcribes Armada's QueueCandidateGangIteratorPQ.Less (with
// priority-class priority considered) into Candidate terms: Armada's
// proposedQueueCost, currentQueueCost, queueBudget and itemSize are Fraction,
// Current, Budget and Size, each scaled by the same per-selection constant.
// The final Queue tie-break is ours (Armada's names are unique).
func armadaLess(a, b fairness.Candidate, prioritiseLargerJobs bool) bool {
	if a.ClassPriority != b.ClassPriority {
		return a.ClassPriority > b.ClassPriority
	}
	if prioritiseLargerJobs {
		if a.Fraction <= a.Budget && b.Fraction <= b.Budget {
			if a.Current == b.Current && a.Size != b.Size {
				return a.Size > b.Size
			}
			if a.Current != b.Current {
				return a.Current < b.Current
			}
		} else if a.Fraction > a.Budget && b.Fraction > b.Budget {
			if a.Fraction != b.Fraction {
				return a.Fraction < b.Fraction
			}
		} else if a.Fraction <= a.Budget {
			return true
		} else if b.Fraction <= b.Budget {
			return false
		}
	} else if a.Fraction != b.Fraction {
		return a.Fraction < b.Fraction
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Queue < b.Queue
}

// genCandidate draws candidates from small discrete sets so that every
// field ties often and every prefer-large branch is exercised.
func genCandidate() gopter.Gen {
	quarter := gen.IntRange(0, 8).Map(func(i int) float64 { return float64(i) / 4 })
	return gen.Struct(reflect.TypeOf(fairness.Candidate{}), map[string]gopter.Gen{
		"Queue":         gen.IntRange(0, 19),
		"ClassPriority": gen.Int32Range(0, 2),
		"Fraction":      quarter,
		"Current":       quarter,
		"Budget":        quarter,
		"Size":          quarter,
		"Name":          gen.OneConstOf("a", "b", "c"),
	})
}

func TestCompareProperties(t *testing.T) {
	props := properties(t)
	props.Property("Compare agrees with Armada's Less", prop.ForAll(
		func(a, b fairness.Candidate, preferLarge bool) bool {
			if a == b {
				return fairness.Compare(a, b, preferLarge) == 0
			}
			return (fairness.Compare(a, b, preferLarge) < 0) == armadaLess(a, b, preferLarge)
		},
		genCandidate(), genCandidate(), gen.Bool(),
	))
	props.Property("Compare is antisymmetric and transitive", prop.ForAll(
		func(a, b, c fairness.Candidate, preferLarge bool) bool {
			ab, bc, ac := fairness.Compare(a, b, preferLarge), fairness.Compare(b, c, preferLarge), fairness.Compare(a, c, preferLarge)
			if ab != -fairness.Compare(b, a, preferLarge) {
				return false
			}
			if ab <= 0 && bc <= 0 && ac > 0 {
				return false
			}
			return !(ab == 0 && a != b)
		},
		genCandidate(), genCandidate(), genCandidate(), gen.Bool(),
	))
	props.TestingRun(t)
}

// op is one generated step against a Selector.
type op struct {
	Kind int // 0, 1: Update; 2: Push; 3: Remove; 4: Pop; 5: Peek
	Cand fairness.Candidate
}

func genOps() gopter.Gen {
	return gen.SliceOf(gen.Struct(reflect.TypeOf(op{}), map[string]gopter.Gen{
		"Kind": gen.IntRange(0, 5),
		"Cand": genCandidate(),
	}))
}

// model is the reference: the present candidates, sorted with Compare
// whenever the first is asked for.
type model map[int]fairness.Candidate

func (m model) sorted(preferLarge bool) []fairness.Candidate {
	out := make([]fairness.Candidate, 0, len(m))
	for _, c := range m {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b fairness.Candidate) int { return fairness.Compare(a, b, preferLarge) })
	return out
}

func TestSelectorProperties(t *testing.T) {
	props := properties(t)
	props.Property("pops in Compare order under random Update/Push/Remove/Pop", prop.ForAll(
		func(ops []op, preferLarge bool) bool {
			s, ref := fairness.NewSelector(preferLarge), model{}
			for _, o := range ops {
				q := o.Cand.Queue
				switch o.Kind {
				case 0, 1:
					s.Update(q, o.Cand)
					ref[q] = o.Cand
				case 2:
					s.Push(o.Cand)
					ref[q] = o.Cand
				case 3:
					_, had := ref[q]
					if s.Remove(q) != had {
						return false
					}
					delete(ref, q)
				case 4, 5:
					want := ref.sorted(preferLarge)
					var got fairness.Candidate
					var ok bool
					if o.Kind == 4 {
						got, ok = s.Pop()
					} else {
						got, ok = s.Peek()
						if q, first := s.First(); first != ok || ok && q != got.Queue {
							return false
						}
					}
					if ok != (len(want) > 0) || ok && got != want[0] {
						return false
					}
					if ok && o.Kind == 4 {
						delete(ref, got.Queue)
					}
				}
				if s.Len() != len(ref) {
					return false
				}
			}
			return slices.Equal(drain(s), ref.sorted(preferLarge))
		},
		genOps(), gen.Bool(),
	))
	props.TestingRun(t)
}

// A check that the sorted reference is not trivially agreeing: on the
// classic case the two orderings really differ.
func TestPreferLargeChangesOrder(t *testing.T) {
	cands := []fairness.Candidate{
		fairness.NewCandidate(0, "A", 0, 0, 0.5, 0.5, 0.5),
		fairness.NewCandidate(1, "B", 0, 0, 1.0/32, 0.5, 0.5),
	}
	order := func(preferLarge bool) string {
		c := slices.Clone(cands)
		slices.SortFunc(c, func(a, b fairness.Candidate) int { return fairness.Compare(a, b, preferLarge) })
		return strings.Join(names(c), "")
	}
	assert.Equal(t, "BA", order(false))
	assert.Equal(t, "AB", order(true))
	assert.Equal(t, 0, cmp.Compare(fairness.Compare(cands[0], cands[0], true), 0))
}
