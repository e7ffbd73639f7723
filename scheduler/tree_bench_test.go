package scheduler_test

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/flotilla-sched/flotilla"
)

// benchTree shapes the queue tree's benchmark world (issue 20): 1,000 ×
// 32-core nodes, 1,000 leaf queues, 1,000,000 one-core jobs queued
// round-robin, of which 32,000 fit. With tree set the queues hang in three
// levels: 5 top groups of 10 groups of 20 queues (flat50: 50 groups of 20
// under the root), with guarantees on every group and queue and limits on
// the groups that do not bind (so every rule's check runs); without, the
// same queues are a flat list. interleaved deals the queues to the groups
// in turn; weighted gives queues and groups priority factors drawn from
// 0.5, 1, 2 and 4 by a fixed sequence, so that neither cycle visits the
// queues in a regular order.
type benchTree struct {
	tree, interleaved, weighted, flat50 bool
	lay                                 layout
}

func treeBench(b *testing.B, tree, interleaved bool, lay layout) {
	treeBenchWorld(b, benchTree{tree: tree, interleaved: interleaved, lay: lay})
}

func treeBenchWorld(b *testing.B, w benchTree) {
	if testing.Short() {
		b.Skip("large")
	}
	s, snap := benchWorldLaidOut(b, 1000, 1000, 1000000, w.lay)
	factors := []float64{0.5, 1, 2, 4}
	if w.weighted {
		for i, q := range snap.Queues {
			q.PriorityFactor = factors[(i*7+i/13)%4]
		}
	}
	if w.tree {
		schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
		quota := func(cpu int) flotilla.Resources {
			r, err := schema.ParsePartial("q", map[string]string{"cpu": fmt.Sprint(cpu), "memory": fmt.Sprintf("%dGi", 4*cpu)})
			if err != nil {
				b.Fatal(err)
			}
			return r
		}
		if !w.flat50 {
			for t := range 5 {
				snap.Groups = append(snap.Groups, &flotilla.QueueGroup{Name: fmt.Sprintf("top%d", t), Guaranteed: quota(2000), Limit: quota(12000)})
			}
		}
		for g := range 50 {
			parent := fmt.Sprintf("top%d", g/10)
			if w.flat50 {
				parent = ""
			}
			snap.Groups = append(snap.Groups, &flotilla.QueueGroup{Name: fmt.Sprintf("g%02d", g), Parent: parent,
				Guaranteed: quota(200), Limit: quota(1200)})
			if w.weighted {
				snap.Groups[len(snap.Groups)-1].PriorityFactor = factors[g%4]
			}
		}
		for i, q := range snap.Queues {
			q.Parent = fmt.Sprintf("g%02d", i/20)
			if w.interleaved {
				q.Parent = fmt.Sprintf("g%02d", (i%5)*10+(i/5)%10)
			}
			q.Guaranteed = quota(8)
		}
	}
	runtime.GC()
	cpu0 := processCPU()
	res := runCycles(b, s, snap, t0)
	b.ReportMetric(float64(processCPU()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
	if len(res.Scheduled) != 32000 {
		b.Fatalf("scheduled %d, want 32000", len(res.Scheduled))
	}
}

// BenchmarkTreeCycle1kLeaves: the cycle over the three-level tree, queues
// q000–q019 in group g00, q020–q039 in g01 and so on.
func BenchmarkTreeCycle1kLeaves(b *testing.B) { treeBench(b, true, false, inSubmitOrder) }

// BenchmarkTreeCycle1kLeavesInterleaved: the same tree with the queues
// dealt to the groups in turn (q000 to g00, q001 to g10, q002 to g20 …), so
// that the tournament visits the queues in the order their jobs were
// allocated, as the flat cycle does: the difference from
// BenchmarkTreeCycle1kLeaves is the memory's, not the algorithm's.
func BenchmarkTreeCycle1kLeavesInterleaved(b *testing.B) { treeBench(b, true, true, inSubmitOrder) }

// BenchmarkFlatCycle1kLeaves: the same queues and jobs as a flat list.
func BenchmarkFlatCycle1kLeaves(b *testing.B) { treeBench(b, false, false, inSubmitOrder) }

// BenchmarkTreeCycle1kLeavesBatched and BenchmarkFlatCycle1kLeavesBatched
// are the two with each queue's jobs together in memory, as batched
// submissions leave them: neither order then follows the allocation, and
// the difference is the algorithm's.
func BenchmarkTreeCycle1kLeavesBatched(b *testing.B) { treeBench(b, true, false, byQueue) }

// BenchmarkFlatCycle1kLeavesBatched: see BenchmarkTreeCycle1kLeavesBatched.
func BenchmarkFlatCycle1kLeavesBatched(b *testing.B) { treeBench(b, false, false, byQueue) }

// BenchmarkTreeCycle1kLeavesShuffled and BenchmarkFlatCycle1kLeavesShuffled
// are the two with the jobs in memory in an order neither cycle follows:
// with the jobs laid out in submission or queue order, the flat cycle's
// round robin over equal queues reads them at a constant stride, which the
// processor prefetches, and the tree's order does not.
func BenchmarkTreeCycle1kLeavesShuffled(b *testing.B) { treeBench(b, true, false, shuffled) }

// BenchmarkFlatCycle1kLeavesShuffled: see BenchmarkTreeCycle1kLeavesShuffled.
func BenchmarkFlatCycle1kLeavesShuffled(b *testing.B) { treeBench(b, false, false, shuffled) }

// processCPU is the process's user and system CPU time, in nanoseconds: a
// measure the machine's other tenants disturb less than wall time.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkTreeCycle1kLeavesWeighted and BenchmarkFlatCycle1kLeavesWeighted
// give the queues (and groups) unequal priority factors: the flat cycle then
// no longer visits the queues in a perfectly regular order either.
func BenchmarkTreeCycle1kLeavesWeighted(b *testing.B) {
	treeBenchWorld(b, benchTree{tree: true, weighted: true})
}

// BenchmarkFlatCycle1kLeavesWeighted: see BenchmarkTreeCycle1kLeavesWeighted.
func BenchmarkFlatCycle1kLeavesWeighted(b *testing.B) {
	treeBenchWorld(b, benchTree{weighted: true})
}

// BenchmarkTreeCycle1kLeaves50Groups: the same queues in 50 groups of 20
// under the root (two levels of groups fewer to climb than
// BenchmarkTreeCycle1kLeaves' three-level reading of the goal).
func BenchmarkTreeCycle1kLeaves50Groups(b *testing.B) {
	treeBenchWorld(b, benchTree{tree: true, flat50: true})
}
