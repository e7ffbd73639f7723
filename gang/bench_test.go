package gang_test

import (
	"fmt"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/gang"
	"github.com/flotilla-sched/flotilla/queue"
)

// benchNodes are n 32-core, 128 GiB nodes in one cluster; racks > 0 labels
// them with that many values of "rack".
func benchNodes(n, racks int) []*flotilla.Node {
	nodes := make([]*flotilla.Node, n)
	for i := range nodes {
		nodes[i] = &flotilla.Node{Name: fmt.Sprintf("node-%05d", i), Total: cores(32)}
		if racks > 0 {
			nodes[i].Labels = map[string]string{"rack": fmt.Sprintf("rack-%02d", i%racks)}
		}
	}
	return nodes
}

// benchGangs are n complete gangs of 8 four-core members of queue A, each
// with the given uniformity label.
func benchGangs(b *testing.B, n int, label string) []*gang.Gang {
	store, err := queue.New(schemaCM, flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	if err != nil {
		b.Fatal(err)
	}
	var acc gang.Accumulator
	var out []*gang.Gang
	for g := range n {
		for m := range 8 {
			e, err := store.NewEntry(&flotilla.Job{ID: fmt.Sprintf("g%d-%d", g, m), Queue: "A", Requests: cores(4),
				Gang: flotilla.Gang{ID: fmt.Sprint("g", g), Cardinality: 8, NodeUniformityLabel: label}})
			if err != nil {
				b.Fatal(err)
			}
			gg, complete, err := acc.Add(e)
			if err != nil {
				b.Fatal(err)
			}
			if complete {
				out = append(out, gg)
			}
		}
	}
	return out
}

// BenchmarkPlace places gangs of 8 × 4-core members into 1,000 × 32-core
// nodes (racks: with a uniformity label of that many values) until the
// cluster is full (1,000 gangs), then rolls back and starts again. One op
// is one gang; ns/member is the time per member.
func BenchmarkPlace(b *testing.B) {
	for _, racks := range []int{0, 10} {
		b.Run(fmt.Sprintf("racks=%d", racks), func(b *testing.B) {
			db, err := binpack.New(binpack.Options{Schema: schemaCM, Levels: twoLevels, Queues: 10}, benchNodes(1000, racks))
			if err != nil {
				b.Fatal(err)
			}
			label := ""
			if racks > 0 {
				label = "rack"
			}
			gangs := benchGangs(b, 1000, label)
			levels := levelsOf(8, top)
			var p gang.Placer
			start := db.Mark()
			placed := 0
			b.ReportAllocs()
			for b.Loop() {
				g := gangs[placed]
				res, err := p.Place(db, g, placed%10, levels)
				if err != nil || !res.Placed {
					b.Fatalf("gang %d: %v %v", placed, err, res.Why.String(schemaCM))
				}
				placed++
				if placed == len(gangs) {
					b.StopTimer()
					db.Rollback(start)
					placed = 0
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*8), "ns/member")
		})
	}
}

// BenchmarkPlaceNoFit is a gang of 8 that does not fit a full 1,000-node
// cluster: eight members tried, none bound, and the explanation.
func BenchmarkPlaceNoFit(b *testing.B) {
	db, err := binpack.New(binpack.Options{Schema: schemaCM, Levels: twoLevels, Queues: 10}, benchNodes(1000, 0))
	if err != nil {
		b.Fatal(err)
	}
	gangs := benchGangs(b, 1001, "")
	levels := levelsOf(8, top)
	var p gang.Placer
	for i, g := range gangs[:1000] {
		if res, err := p.Place(db, g, i%10, levels); err != nil || !res.Placed {
			b.Fatal(err)
		}
	}
	db.Forget()
	last := gangs[1000]
	b.ReportAllocs()
	for b.Loop() {
		if res, err := p.Place(db, last, 3, levels); err != nil || res.Placed {
			b.Fatal("placed")
		}
	}
}

// BenchmarkAccumulate is one cycle's stream of 1,000 gangs of 8 members:
// Add each, then Reset. One op is one member.
func BenchmarkAccumulate(b *testing.B) {
	store, err := queue.New(schemaCM, flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	if err != nil {
		b.Fatal(err)
	}
	var entries []*queue.Entry
	for m := range 8 {
		for g := range 1000 {
			e, err := store.NewEntry(&flotilla.Job{ID: fmt.Sprintf("g%d-%d", g, m), Queue: "A", Requests: cores(4),
				Gang: flotilla.Gang{ID: fmt.Sprint("g", g), Cardinality: 8}})
			if err != nil {
				b.Fatal(err)
			}
			entries = append(entries, e)
		}
	}
	var acc gang.Accumulator
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := acc.Add(entries[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(entries) {
			acc.Reset()
			i = 0
		}
	}
}
