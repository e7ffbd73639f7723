package armada_test

import (
	"fmt"

	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/armada"
)

// ExampleParseWorkload reads a WorkloadSpec: the unnamed template gets
// Armada's id <queue>-<index>; every problem is named at its YAML path,
// all at once.
func ExampleParseWorkload() {
	w, err := armada.ParseWorkload([]byte(`
randomSeed: 7
queues:
  - name: A
    weight: 1
    jobTemplates:
      - number: 3
        jobSet: s1
        requirements:
          resourceRequirements:
            requests: {cpu: 1, memory: 1Gi}
        runtimeDistribution: {minimum: 1m}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	t := w.Workload.JobTemplates[0]
	fmt.Println(t.ID, t.Queue, t.JobSet, t.Count, t.Requests["cpu"], t.Runtime.Minimum)

	_, err = armada.ParseWorkload([]byte("queues:\n  - name: A\n    weight: 1\n    jobTemplates:\n      - number: many\n"))
	fmt.Println(err)
	// Output:
	// A-0 A s1 3 1 1m0s
	// queues[0].jobTemplates[0].number "many": is malformed: want a whole number
	// queues[0].jobTemplates[0].requirements.resourceRequirements.requests "": is required: at least one resource
}
