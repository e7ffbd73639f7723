package gang_test

import (
	"fmt"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/gang"
	"github.com/flotilla-sched/flotilla/queue"
)

// Members arrive interleaved with other jobs; a gang is handed out only
// when its last member arrives. Its class for queue ordering is its lowest
// member's.
func ExampleAccumulator() {
	store, _ := queue.New(flotilla.MustResourceSchema("cpu"), flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	job := func(id, gangID, class string) *queue.Entry {
		e, _ := store.NewEntry(&flotilla.Job{ID: id, Queue: "A", PriorityClass: class, Requests: flotilla.Resources{1000},
			Gang: flotilla.Gang{ID: gangID, Cardinality: 3}})
		return e
	}
	var acc gang.Accumulator
	for _, e := range []*queue.Entry{
		job("t-0", "train", ""),
		job("t-1", "train", flotilla.ArmadaPreemptible),
		job("e-0", "eval", ""),
		job("t-2", "train", ""),
	} {
		g, complete, err := acc.Add(e)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: gang %s has %d of %d, complete %v\n", e.Job.ID, g.ID, len(g.Members), g.Cardinality, complete)
		if complete {
			fmt.Println("schedule", g.ID, "requesting", flotilla.FormatQuantity(g.Requests[0]), "cpu at class priority", g.ClassPriority)
		}
	}
	for _, g := range acc.Pending() {
		fmt.Println("waiting:", g.ID)
	}
	acc.Reset()
	// Output:
	// t-0: gang train has 1 of 3, complete false
	// t-1: gang train has 2 of 3, complete false
	// e-0: gang eval has 1 of 3, complete false
	// t-2: gang train has 3 of 3, complete true
	// schedule train requesting 3 cpu at class priority 20000
	// waiting: eval
}

// Three racks of two 32-core nodes; racks v1 and v3 each run a one-core job
// per node. Four 16-core members with the node-uniformity label "rack" fit
// only in v2. A fifth member would not fit in any rack: nothing is placed,
// and the explanation names the member and the resource.
func ExamplePlacer_Place() {
	schema := flotilla.MustResourceSchema("cpu")
	cpu := func(n int64) flotilla.Resources { return flotilla.Resources{n * 1000} }
	var nodes []*flotilla.Node
	for _, rack := range []string{"v1", "v2", "v3"} {
		for _, n := range []string{"a", "b"} {
			nodes = append(nodes, &flotilla.Node{Name: rack + n, Total: cpu(32), Labels: map[string]string{"rack": rack}})
		}
	}
	db, _ := binpack.New(binpack.Options{Schema: schema, Levels: []int32{20000, 30000}, Queues: 2}, nodes)
	for _, n := range []int{0, 1, 4, 5} {
		db.Bind(n, 1, 1, cpu(1))
	}
	db.Forget()

	store, _ := queue.New(flotilla.MustResourceSchema("cpu"), flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	var acc gang.Accumulator
	var placer gang.Placer
	for _, size := range []int{4, 5} {
		var g *gang.Gang
		for i := range size {
			e, _ := store.NewEntry(&flotilla.Job{ID: fmt.Sprintf("g%d-%d", size, i), Queue: "A", Requests: cpu(16),
				Gang: flotilla.Gang{ID: fmt.Sprint("g", size), Cardinality: size, NodeUniformityLabel: "rack"}})
			g, _, _ = acc.Add(e)
		}
		levels := []int{1, 1, 1, 1, 1} // non-preemptible: bound at the top level
		res, err := placer.Place(db, g, 0, levels[:size])
		if err != nil {
			panic(err)
		}
		if !res.Placed {
			fmt.Println(res.Why.String(schema))
			continue
		}
		for i, n := range res.Nodes {
			fmt.Println(g.Members[i].Job.ID, "on", db.Node(n).Name)
		}
		db.Forget() // commit
	}
	// Output:
	// g4-0 on v2a
	// g4-1 on v2a
	// g4-2 on v2b
	// g4-3 on v2b
	// gang "g5": member 2 (job "g5-2") does not fit in the default cluster on rack=v1 after 2 of 5 members were placed: 0/2 nodes fit: 2 short of cpu by at least 1
}

func ExampleValidateSubmission() {
	used := func(id string) bool { return id == "old" }
	var jobs []*flotilla.Job
	for i, queue := range []string{"A", "A", "B"} {
		jobs = append(jobs, &flotilla.Job{ID: fmt.Sprint("j", i), Queue: queue, Gang: flotilla.Gang{ID: "old", Cardinality: 2}})
	}
	fmt.Println(gang.ValidateSubmission(jobs, used))
	// Output:
	// gang "old".queue "B": disagrees with another field: job "j2" is in queue "B", job "j0" in "A"
	// gang "old".cardinality "2": disagrees with another field: the request holds 3 members
	// gang "old".id "old": is a duplicate: already used by earlier jobs; gang ids must never be reused
}

func ExampleEvictionClosure() {
	running := []*flotilla.Job{
		{ID: "a-0", Gang: flotilla.Gang{ID: "a", Cardinality: 2}},
		{ID: "solo"},
		{ID: "a-1", Gang: flotilla.Gang{ID: "a", Cardinality: 2}},
	}
	evicted := []bool{true, false, false} // preemption picked a-0
	added, _ := gang.EvictionClosure(running, evicted)
	fmt.Println(added, evicted)
	// Output:
	// 1 [true false true]
}

// A gang that requires one rack of the topology (block, rack): of the
// racks whose free room holds it, the one left with the least free room.
func ExamplePlacer_SetTopologies() {
	schema := flotilla.MustResourceSchema("cpu")
	var nodes []*flotilla.Node
	for _, n := range []struct {
		name, block, rack string
		cores             int64
	}{{"a", "b1", "r1", 8}, {"b", "b1", "r1", 8}, {"c", "b1", "r2", 4}, {"d", "b1", "r2", 8}, {"e", "b2", "r1", 16}} {
		nodes = append(nodes, &flotilla.Node{Name: n.name, Total: flotilla.Resources{n.cores * 1000},
			Labels: map[string]string{"block": n.block, "rack": n.rack}})
	}
	db, _ := binpack.New(binpack.Options{Schema: schema, Levels: []int32{0}, Queues: 1}, nodes)
	store, _ := queue.New(schema, []flotilla.PriorityClass{{Name: "p"}}, "p")
	var acc gang.Accumulator
	var g *gang.Gang
	for i := range 3 {
		e, _ := store.NewEntry(&flotilla.Job{ID: fmt.Sprint("m", i), Queue: "A", Requests: flotilla.Resources{4000},
			Gang: flotilla.Gang{ID: "train", Cardinality: 3, Topology: flotilla.GangTopology{Required: "rack"}}})
		g, _, _ = acc.Add(e)
	}
	var p gang.Placer
	p.SetTopologies([]flotilla.Topology{{Name: "default", Levels: []string{"block", "rack"}}})
	res, err := p.Place(db, g, 0, []int{0, 0, 0})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("placed in", gang.LevelName(res.Level), res.Path)
	for i, n := range res.Nodes {
		fmt.Println(g.Members[i].Job.ID, "on", db.Node(n).Name)
	}
	// Output:
	// placed in rack b1/r2
	// m0 on c
	// m1 on d
	// m2 on d
}
