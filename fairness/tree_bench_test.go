package fairness_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

// benchTree is 10 × 10 × 10 groups with 10 queues each: 1,110 groups and
// 10,000 queues in 4 levels on the 1,000-node cluster of benchTotal, every
// queue active with a random demand; a tenth of the nodes have guarantees,
// a twentieth limits, a fiftieth lending limits.
func benchTree(b *testing.B) (*fairness.Tree, fairness.TreeInput) {
	rng := rand.New(rand.NewPCG(1, 2))
	var spec fairness.TreeSpec
	small := flotilla.Resources{cores(4), gi(16), cores(0.5)} // cpu, memory, gpu in benchTotal's order
	node := func(name, parent string, leaf bool) {
		s := fairness.NodeSpec{Name: name, Parent: parent, PriorityFactor: []float64{0, 0.5, 2}[rng.IntN(3)]}
		if leaf && rng.IntN(10) == 0 {
			s.Guaranteed = small.Clone()
			if rng.IntN(5) == 0 {
				s.LendingLimit = flotilla.Resources{0, fairness.Absent, fairness.Absent}
			}
		}
		if rng.IntN(20) == 0 {
			s.Limit = flotilla.Resources{cores(float64(500 + rng.IntN(5000))), fairness.Absent, fairness.Absent}
		}
		if leaf {
			spec.Queues = append(spec.Queues, s)
		} else {
			spec.Groups = append(spec.Groups, s)
		}
	}
	for i := range 10 {
		a := "a" + strconv.Itoa(i)
		node(a, "", false)
		for j := range 10 {
			bb := a + "b" + strconv.Itoa(j)
			node(bb, a, false)
			for k := range 10 {
				c := bb + "c" + strconv.Itoa(k)
				node(c, bb, false)
				for l := range 10 {
					node(c+"q"+strconv.Itoa(l), c, true)
				}
			}
		}
	}
	tree, err := fairness.NewTree(seedSchema, spec)
	if err != nil {
		b.Fatal(err)
	}
	n := tree.NumQueues()
	in := fairness.TreeInput{Demand: make([]flotilla.Resources, n), Active: make([]bool, n), Usage: make([]float64, n)}
	for q := range n {
		in.Active[q] = true
		in.Demand[q] = flotilla.Resources{cores(float64(rng.IntN(64))), gi(rng.Int64N(256)), cores(float64(rng.IntN(8)))}
		in.Usage[q] = rng.Float64() / float64(n)
	}
	return tree, in
}

// BenchmarkTreeShares: fair shares of a 10,000-queue, 4-level tree (the
// goal of the queue-tree issue: under 5 ms per cycle).
func BenchmarkTreeShares(b *testing.B) {
	tree, in := benchTree(b)
	m := fairness.NewDRF(benchTotal)
	for _, bc := range []struct {
		name  string
		usage []float64
	}{{"usage off", nil}, {"usage on", in.Usage}} {
		b.Run(bc.name, func(b *testing.B) {
			in.Usage = bc.usage
			var s fairness.TreeShares
			s.Compute(tree, &m, in)
			b.ReportAllocs()
			for b.Loop() {
				s.Compute(tree, &m, in)
			}
			sinkFloat += s.AdjustedFairShare[0]
		})
	}
}
