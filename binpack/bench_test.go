package binpack_test

import (
	"fmt"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

var schemaCM = flotilla.MustResourceSchema("cpu", "memory")

func benchNodes(n int) []*flotilla.Node {
	nodes := make([]*flotilla.Node, n)
	for i := range nodes {
		nodes[i] = &flotilla.Node{
			Name:   fmt.Sprintf("node-%05d", i),
			Labels: map[string]string{"zone": fmt.Sprint("zone-", i%3)},
			Total:  flotilla.Resources{32 * core, 256 * gi},
		}
	}
	return nodes
}

func BenchmarkNew10kNodes(b *testing.B) {
	nodes := benchNodes(10_000)
	opts := binpack.Options{Schema: schemaCM, Levels: twoLevels, Queues: 10}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := binpack.New(opts, nodes); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSelectBind places one-core jobs from 10 queues in turn until the
// cluster is full, then rolls back and starts again; one op is one job
// (Select + Bind). Jobs are non-preemptible (top level), so every Bind
// re-indexes both levels.
func BenchmarkSelectBind(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			db, err := binpack.New(binpack.Options{Schema: schemaCM, Levels: twoLevels, Queues: 10}, benchNodes(n))
			if err != nil {
				b.Fatal(err)
			}
			req := flotilla.Resources{core, 8 * gi}
			q := &binpack.Query{Requests: req, Level: 1, OnlyNode: -1}
			start := db.Mark()
			placed := 0
			b.ReportAllocs()
			for b.Loop() {
				node, ok := db.Select(q)
				if !ok {
					if placed != n*32 {
						b.Fatalf("placed %d, want %d", placed, n*32)
					}
					b.StopTimer()
					db.Rollback(start)
					placed = 0
					b.StartTimer()
					continue
				}
				db.Bind(node, q.Queue, q.Level, req)
				placed++
				q.Queue = (q.Queue + 1) % 10
			}
		})
	}
}

// BenchmarkSelectNoFit is the cost of a job that fits nowhere in a full
// 1,000-node cluster shared by 10 queues (before Explain, which is slower).
func BenchmarkSelectNoFit(b *testing.B) {
	db, err := binpack.New(binpack.Options{Schema: schemaCM, Levels: twoLevels, Queues: 10}, benchNodes(1000))
	if err != nil {
		b.Fatal(err)
	}
	req := flotilla.Resources{core, 8 * gi}
	for i := 0; ; i++ {
		n, ok := db.Select(&binpack.Query{Requests: req, Level: 1, Queue: i % 10, OnlyNode: -1})
		if !ok {
			break
		}
		db.Bind(n, i%10, 1, req)
	}
	q := &binpack.Query{Requests: req, Level: 1, Queue: 3, OnlyNode: -1}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := db.Select(q); ok {
			b.Fatal("fits")
		}
	}
}

// BenchmarkExplain10kNodes explains a job that fits no node of 10,000: a
// third pass its node selector, and those are short of cpu. Explain runs
// once per failing scheduling key.
func BenchmarkExplain10kNodes(b *testing.B) {
	nodes := benchNodes(10_000)
	db, err := binpack.New(binpack.Options{Schema: schemaCM, Levels: twoLevels, Queues: 10}, nodes)
	if err != nil {
		b.Fatal(err)
	}
	for i := range nodes {
		db.Bind(i, i%10, 1, flotilla.Resources{8 * core, 0})
	}
	db.Forget()
	q := &binpack.Query{Requests: flotilla.Resources{30 * core, gi}, Level: 1, OnlyNode: -1,
		Constraint: db.Constraints(map[string]string{"zone": "zone-1"}, nil)}
	b.ReportAllocs()
	for b.Loop() {
		if r := db.Explain(q); r.Kind != binpack.Insufficient {
			b.Fatal(r.Kind)
		}
	}
}
