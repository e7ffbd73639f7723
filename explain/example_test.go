package explain_test

import (
	"context"
	"fmt"
	"os"

	"github.com/flotilla-sched/flotilla/explain"
	"github.com/flotilla-sched/flotilla/scenario"
)

// ExampleScenario explains why a job of a two-node scenario was not placed
// in its first round: the node its selector picks is too small, the other
// does not match the selector.
func ExampleScenario() {
	f, err := scenario.Parse([]byte(`{
  "nodes": [{"name": "small", "resources": {"cpu": "2"}, "labels": {"zone": "a"}},
            {"name": "big", "resources": {"cpu": "16"}, "labels": {"zone": "b"}}],
  "queues": [{"name": "A"}],
  "rounds": [{"submit": [{"id": "j", "queue": "A", "requests": {"cpu": "4"}, "nodeSelector": {"zone": "a"}}]}]
}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := f.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := explain.CheckArgs(b, 0, "j"); err != nil {
		fmt.Println(err)
		return
	}
	ex, err := explain.Scenario(context.Background(), b, 0, "j")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ex.State)
	if err := ex.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// unschedulable
	// job j, round 0: unschedulable
	//   summary      not scheduled: never-fits: 0/2 nodes fit: 1 node selector zone=a mismatched, 1 short of cpu by at least 2 even when empty
	//   queue        A, job set ""
	//   requests     cpu 4
	//   priority     class armada-default (priority 30000, not preemptible), job priority 0 (lower runs first within a class)
	//   place        1 of 1 queued in A when the round started; none ahead
	//   queue share  0.000 after the round (below its adjusted fair share) against fair share 1.000, adjusted fair share 0.222, demand 0.222; 0 running, 1 queued
	//   reason       never-fits
	//   nodes        2 searched, 0 fit
	//     1 node     excluded: node selector zone=a not matched
	//     1 node     too small: short of cpu by at least 2 even when empty
}
