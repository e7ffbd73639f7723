package binpack_test

import (
	"fmt"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

// Two 32-core nodes; queue A runs a job on node-1. Queue B's job goes to the
// unused node-2 even though node-1 has room, and less of it, so the queues
// do not interfere (per-queue bin-packing). Then a gang of B that does not
// fit is rolled back as a whole.
func Example() {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	cores := func(n int64) flotilla.Resources { return flotilla.Resources{n * 1000, n * 4 << 30} }
	db, err := binpack.New(binpack.Options{
		Schema: schema,
		Levels: []int32{20000, 30000}, // armada-preemptible, armada-default
		Queues: 2,
	}, []*flotilla.Node{
		{Name: "node-1", Total: cores(32)},
		{Name: "node-2", Total: cores(32)},
	})
	if err != nil {
		panic(err)
	}
	const queueA, queueB, preemptible = 0, 1, 0
	db.Bind(0, queueA, preemptible, cores(8)) // a running job
	db.Forget()

	q := &binpack.Query{Requests: cores(4), Level: preemptible, Queue: queueB, OnlyNode: -1}
	n, _ := db.Select(q)
	fmt.Println("job of B on", db.Node(n).Name)

	// A gang of three 20-core jobs: all or nothing.
	m := db.Mark()
	q.Requests = cores(20)
	for range 3 {
		n, ok := db.Select(q)
		if !ok {
			fmt.Println(db.Explain(q).String(schema))
			db.Rollback(m)
			break
		}
		db.Bind(n, queueB, preemptible, q.Requests)
		fmt.Println("gang member on", db.Node(n).Name)
	}
	cpu, _ := schema.Index("cpu")
	fmt.Println("free cores:", db.Allocatable(0, preemptible)[cpu]/1000, db.Allocatable(1, preemptible)[cpu]/1000)
	// Output:
	// job of B on node-2
	// gang member on node-2
	// gang member on node-1
	// 0/2 nodes fit: 2 short of cpu by at least 8
	// free cores: 24 32
}
