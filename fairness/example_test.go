package fairness_test

import (
	"fmt"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

// The worked example of seeds/armada-priority.md: a cluster of 10 cpu, 20Gi
// of memory and 5 GPUs has a GPU factor of 0.5 and a memory factor of 2, so a
// queue using 5 cpu, 2Gi and 1 GPU has usage 5 + 2/2 + 1/0.5 = 8.
func ExampleNewAsset() {
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	const gi = 1 << 30 // bytes in one Gi
	total := flotilla.Resources{10_000, 20 * gi, 5}
	used := flotilla.Resources{5_000, 2 * gi, 1}

	m, err := fairness.NewAsset(schema, total, map[string]float64{"cpu": 1, "memory": 1, "nvidia.com/gpu": 1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("usage %g cpu, share %.4f of the cluster\n", m.Usage(used), m.Share(used))

	// The seed's default weights (nil): memory costs nothing.
	m, _ = fairness.NewAsset(schema, total, nil)
	fmt.Printf("default weights: usage %g cpu, share %.2f\n", m.Usage(used), m.Share(used))

	_, err = fairness.NewAsset(schema, total, map[string]float64{"cpu": 1, "tpu": -1})
	fmt.Println(err)
	// Output:
	// usage 8 cpu, share 0.2667 of the cluster
	// default weights: usage 7 cpu, share 0.35
	// weights.tpu "-1": must not be negative
}

// Under dominant-resource fairness a vector costs its largest fraction of any
// one resource.
func ExampleNewDRF() {
	const gi = 1 << 30
	m := fairness.NewDRF(flotilla.Resources{10_000, 20 * gi, 5}) // cpu, memory, gpu
	fmt.Println(m.Share(flotilla.Resources{5_000, 2 * gi, 1}))   // cpu: 5/10
	fmt.Println(m.Share(flotilla.Resources{1_000, 10 * gi, 0}))  // memory: 10/20
	fmt.Println(m.Share(flotilla.Resources{1_000, 1 * gi, 4}))   // gpu: 4/5
	// Output:
	// 0.5
	// 0.5
	// 0.8
}

// Three queues with priority factors 1, 2 and 10 have weights 1, 1/2 and
// 1/10; a fourth is inactive and takes no share.
func ExampleFairShares() {
	weights := []float64{1, 0.5, 0.1, 1}
	active := []bool{true, true, true, false}
	out := make([]float64, len(weights))
	fairness.FairShares(weights, active, out)
	fmt.Printf("%.4f\n", out)
	// Output:
	// [0.6250 0.3125 0.0625 0.0000]
}

// A queue that wants only 10% of the cluster leaves the rest to the two
// queues that want more.
func ExampleAdjustedFairShares() {
	weights := []float64{1, 1, 1}
	active := []bool{true, true, true}
	demand := []float64{0.1, 0.6, 0.6}
	out := make([]float64, len(weights))
	fairness.AdjustedFairShares(weights, active, demand, out)
	fmt.Printf("%.2f\n", out)
	// Output:
	// [0.10 0.45 0.45]
}

// Progressive filling on an empty 8-core cluster shared by two queues of
// equal weight: a's jobs take 1 core, b's take 2. After each placement the
// scheduler updates the queue it served; the queue that would hold the
// smaller fraction of its fair share after its next job goes next (ties by
// name), until the cluster is full.
func ExampleSelector() {
	names := []string{"a", "b"}
	jobShare := []float64{1.0 / 8, 2.0 / 8}
	held := []float64{0, 0}
	fair := []float64{0.5, 0.5}

	sel := fairness.NewSelector(false)
	for q := range names {
		sel.Push(fairness.NewCandidate(q, names[q], 0, held[q], jobShare[q], fair[q], fair[q]))
	}
	free := 1.0
	for sel.Len() > 0 {
		c, _ := sel.Peek()
		q := c.Queue
		if jobShare[q] > free+1e-12 {
			sel.Remove(q) // its next job does not fit
			continue
		}
		free -= jobShare[q]
		held[q] += jobShare[q]
		fmt.Printf("%s→%.3f ", names[q], held[q])
		sel.Update(q, fairness.NewCandidate(q, names[q], 0, held[q], jobShare[q], fair[q], fair[q]))
	}
	fmt.Println()
	// Output:
	// a→0.125 a→0.250 b→0.250 a→0.375 a→0.500 b→0.500
}

// With Armada's prefer-large ordering, queues within their budget that hold
// the same amount (here: nothing, on an empty cluster) take the larger gang
// first; plain progressive filling takes the smaller step first.
func ExampleCompare() {
	large := fairness.NewCandidate(0, "large", 0, 0, 0.5, 0.5, 0.5)    // a 16-core gang on 32 cores
	small := fairness.NewCandidate(1, "small", 0, 0, 1.0/32, 0.5, 0.5) // a 1-core job
	first := func(preferLarge bool) string {
		if fairness.Compare(large, small, preferLarge) < 0 {
			return large.Name
		}
		return small.Name
	}
	fmt.Println("plain:", first(false))
	fmt.Println("prefer large:", first(true))
	// Output:
	// plain: small
	// prefer large: large
}

// The worked example of QUEUE-TREE.md §11, round 1: a research group
// (guarantee 16 bundles, limit 24) with vision and nlp, a prod group with
// serving (limit 12), and adhoc, on a cluster of 32 bundles (1 GPU, 8 cpu,
// 64Gi each) under DRF. Shares print in bundles.
func ExampleTreeShares_Compute() {
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	bundles := func(n int64) flotilla.Resources { return flotilla.Resources{8000 * n, 64 << 30 * n, n} }
	tree, err := fairness.NewTree(schema, fairness.TreeSpec{
		Groups: []fairness.NodeSpec{
			{Name: "research", Guaranteed: bundles(16), Limit: bundles(24)},
			{Name: "prod", Guaranteed: bundles(8)},
		},
		Queues: []fairness.NodeSpec{
			{Name: "vision", Parent: "research", Guaranteed: bundles(8)},
			{Name: "nlp", Parent: "research", Guaranteed: bundles(4), PriorityFactor: 0.5},
			{Name: "serving", Parent: "prod", Guaranteed: bundles(8), Limit: bundles(12)},
			{Name: "adhoc"},
		},
	})
	if err != nil {
		panic(err)
	}
	model := fairness.NewDRF(bundles(32))
	var s fairness.TreeShares
	s.Compute(tree, &model, fairness.TreeInput{
		Demand: []flotilla.Resources{bundles(6), bundles(20), bundles(10), bundles(20)},
		Active: []bool{true, true, true, true},
	})
	for v := range tree.NumNodes() {
		fmt.Printf("%-8s A %5.2f  F %5.2f\n", tree.Name(v), 32*s.AdjustedFairShare[v], 32*s.FairShare[v])
	}

	_, err = fairness.NewTree(schema, fairness.TreeSpec{Queues: []fairness.NodeSpec{{Name: "a", Parent: "nope"}}})
	fmt.Println(err)
	// Output:
	// research A 19.00  F 18.67
	// prod     A 10.00  F 10.67
	// vision   A  6.00  F 10.22
	// nlp      A 13.00  F  8.44
	// serving  A 10.00  F 10.67
	// adhoc    A  3.00  F  2.67
	// queues[0].parent "nope": names nothing known: no group has this name
}

// A group of three children, each offering its next unit: the child that
// would hold the smallest fraction goes first; serving it raises its
// fraction, and the bracket replays its path. Equal fractions go by name.
func ExampleBracket() {
	b := fairness.NewBracket(3, false)
	for slot, f := range []float64{0.5, 0.25, 0.75} {
		b.Update(slot, &fairness.Candidate{Name: fmt.Sprint("child", slot), Fraction: f})
	}
	for range 4 {
		slot, _ := b.First()
		c := b.Candidate(slot)
		fmt.Printf("%s at %.2f\n", c.Name, c.Fraction)
		c.Fraction += 0.5 // served: its next unit would leave it holding more
		b.Update(slot, &c)
	}
	b.Remove(1)
	slot, _ := b.First()
	fmt.Println("without child1:", b.Candidate(slot).Name)
	// Output:
	// child1 at 0.25
	// child0 at 0.50
	// child1 at 0.75
	// child2 at 0.75
	// without child1: child0
}
