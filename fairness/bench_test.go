package fairness_test

import (
	"strconv"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

var sinkFloat float64

// 1,000 × 32-core nodes (DESIGN.md §5), 3 resources.
var benchTotal = flotilla.Resources{32_000_000, gi(128_000), 8_000_000}

var benchGang = flotilla.Resources{cores(3), gi(12), cores(1)}

func BenchmarkShareDRF(b *testing.B) {
	m := fairness.NewDRF(benchTotal)
	b.ReportAllocs()
	for b.Loop() {
		sinkFloat += m.Share(benchGang)
	}
}

func BenchmarkShareAsset(b *testing.B) {
	m, err := fairness.NewAsset(seedSchema, benchTotal, allOnes())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkFloat += m.Share(benchGang)
	}
}

func newBenchSelector(preferLarge bool, n int) *fairness.Selector {
	s := fairness.NewSelector(preferLarge)
	for q := range n {
		held := float64(q%17) / 1000
		s.Push(fairness.NewCandidate(q, "queue-"+strconv.Itoa(q), 0, held, 0.001, 0.01, 0.01))
	}
	return s
}

// benchmarkSelector runs the scheduler's loop: take the best queue, account
// its gang, Update it with its next gang. Each iteration is one Pop and one
// Update (which re-inserts the popped queue).
func benchmarkSelector(b *testing.B, preferLarge bool) {
	s := newBenchSelector(preferLarge, 100)
	b.ReportAllocs()
	for b.Loop() {
		c, _ := s.Pop()
		c.Current = c.Fraction
		c.Fraction += 0.1
		s.Update(c.Queue, c)
	}
}

func BenchmarkSelectorUpdatePop100(b *testing.B) { benchmarkSelector(b, false) }

func BenchmarkSelectorUpdatePop100PreferLarge(b *testing.B) { benchmarkSelector(b, true) }

// BenchmarkSelectorPeekUpdate100 is the in-place variant: Peek the best
// queue and Update it without popping (one sift instead of two).
func BenchmarkSelectorPeekUpdate100(b *testing.B) {
	s := newBenchSelector(false, 100)
	b.ReportAllocs()
	for b.Loop() {
		c, _ := s.Peek()
		c.Fraction += 0.1
		s.Update(c.Queue, c)
	}
}

func benchQueues(n int) (w []float64, a []bool, d []float64) {
	w, a, d = make([]float64, n), make([]bool, n), make([]float64, n)
	for i := range n {
		w[i] = 1 / float64(1+i%5)
		a[i] = i%10 != 9
		d[i] = float64(i%23) / 400 // many small demands: three water-filling rounds
	}
	return w, a, d
}

func BenchmarkAdjustedFairShares100(b *testing.B) {
	w, a, d := benchQueues(100)
	out := make([]float64, 100)
	b.ReportAllocs()
	for b.Loop() {
		fairness.AdjustedFairShares(w, a, d, out)
	}
}

func BenchmarkFairShares100(b *testing.B) {
	w, a, _ := benchQueues(100)
	out := make([]float64, 100)
	b.ReportAllocs()
	for b.Loop() {
		fairness.FairShares(w, a, out)
	}
}
