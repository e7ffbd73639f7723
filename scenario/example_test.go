package scenario_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scenario"
)

func Example() {
	data := []byte(`{
	  "config": {"roundDuration": "30s"},
	  "nodes": [{"name": "node", "count": 2, "resources": {"memory": "64", "cpu": "8"}}],
	  "queues": [{"name": "A"}, {"name": "B", "priorityFactor": 2}],
	  "rounds": [
	    {"submit": [{"id": "a", "queue": "A", "count": 3, "requests": {"cpu": "2"}}]},
	    {"submit": [{"id": "b", "queue": "B", "priorityClass": "armada-preemptible", "requests": {"cpu": "500m"}}],
	     "cancel": ["a-2"]}
	  ]
	}`)
	f, err := scenario.Parse(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := f.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("resources:", b.Schema.Names())
	for _, n := range b.Nodes {
		fmt.Println("node", n.Name, b.Schema.String(n.Total))
	}
	for i, r := range b.Rounds {
		for _, j := range r.Submit {
			fmt.Printf("round %d at %v: %s in %s (%s) wants %s\n",
				i, r.Time.Sub(b.Start), j.ID, j.Queue, j.PriorityClass, b.Schema.String(j.Requests))
		}
		if len(r.Cancel) > 0 {
			fmt.Printf("round %d cancels %v\n", i, r.Cancel)
		}
	}
	// Output:
	// resources: [cpu memory]
	// node node-0 cpu=8 memory=64
	// node node-1 cpu=8 memory=64
	// round 0 at 0s: a-0 in A (armada-default) wants cpu=2
	// round 0 at 0s: a-1 in A (armada-default) wants cpu=2
	// round 0 at 0s: a-2 in A (armada-default) wants cpu=2
	// round 1 at 30s: b in B (armada-preemptible) wants cpu=500m
	// round 1 cancels [a-2]
}

func ExampleParse_errors() {
	data := []byte(`{
	  "nodes": [{"name": "node", "resources": {"cpu": "8"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "cuont": 3, "requests": {"cpu": "1"}}]}]
	}`)
	_, err := scenario.Parse(data)
	fmt.Println(err)

	data = []byte(`{
	  "nodes": [{"name": "node", "resources": {"cpu": "8"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "B", "priorityClass": "urgent", "requests": {"cpu": "-1"}}]}]
	}`)
	_, err = scenario.Parse(data)
	fmt.Println(err)
	var fe *flotilla.FieldError
	if errors.As(err, &fe) && errors.Is(err, flotilla.ErrUnknownName) {
		fmt.Println("first problem at", fe.Field)
	}
	// Output:
	// rounds[0].submit[0].cuont "cuont": names nothing known: unknown field; did you mean "count"?
	// rounds[0].submit[0].queue "B": names nothing known: no such queue; known: A
	// rounds[0].submit[0].priorityClass "urgent": names nothing known: no such priority class; known: armada-default, armada-preemptible
	// rounds[0].submit[0].requests.cpu "-1": must not be negative
	// first problem at rounds[0].submit[0].queue
}

// ExampleParse_treeErrors: a queue tree's problems are reported with the
// rest, each at the field that holds it.
func ExampleParse_treeErrors() {
	_, err := scenario.Parse([]byte(`{
	  "config": {"usageWeight": 2},
	  "nodes": [{"name": "node", "resources": {"cpu": "8"}}],
	  "groups": [{"name": "research", "guaranteed": {"cpu": "2"}, "limit": {"cpu": "4"}}],
	  "queues": [{"name": "nlp", "parent": "research", "guaranteed": {"cpu": "3"}, "usage": 1.5},
	             {"name": "vision", "parent": "reserch"}]
	}`))
	fmt.Println(err)
	// Output:
	// config.usageWeight "2": disagrees with another field: usage weight without usageHalfLife
	// queues[1].parent "reserch": names nothing known: no group has this name
	// queues[0].usage "1.5": is out of range: must be in [0,1]
	// groups[0].guaranteed.cpu "2": disagrees with another field: below its children's guarantees, 3
}

func ExampleExpect_Check() {
	exp, err := scenario.ParseExpect([]byte(`{"rounds": [{"scheduled": {"A": 2}, "runningAfter": {"A": 2}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out := &scenario.Output{Rounds: []scenario.RoundOutput{{
		Scheduled: []scenario.Placement{{Job: "a-0", Queue: "A", Node: "node-0"}},
		Queues:    []scenario.QueueReport{{Name: "A", Running: 1, Queued: 1}},
	}}}
	fmt.Println(exp.Check(out))
	// Output:
	// rounds[0].scheduled.A: want 2, got 1
	// rounds[0].runningAfter.A: want 2, got 1
}

func ExampleWriteTable() {
	out := &scenario.Output{Rounds: []scenario.RoundOutput{{
		Scheduled:     []scenario.Placement{{Job: "a-0", Queue: "A", Node: "node-0"}},
		Unschedulable: []scenario.Unschedulable{{Job: "a-1", Queue: "A", Reason: "no node has 16 cpu free"}},
		Queues: []scenario.QueueReport{
			{Name: "A", Running: 1, Queued: 1, Allocated: map[string]string{"cpu": "16"}, Share: 1, FairShare: 1, AdjustedFairShare: 1},
		},
	}}}
	if err := scenario.WriteTable(os.Stdout, out); err != nil {
		fmt.Println(err)
	}
	// Output:
	// round 0: 1 scheduled, 0 preempted, 1 unschedulable; 1 running, 1 queued at the end
	//   QUEUE  RUNNING  QUEUED  ALLOCATED  SHARE  FAIR SHARE  ADJUSTED FAIR SHARE
	//   A      1        1       cpu=16     1.000  1.000       1.000
	//   scheduled:     1 (A 1)
	//   preempted:     0
	//   unschedulable: 1 (A 1)
	//     1 × no node has 16 cpu free (e.g. a-1 of A)
}
