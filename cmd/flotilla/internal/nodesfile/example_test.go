package nodesfile_test

import (
	"fmt"

	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/nodesfile"
)

// A template with a count is expanded into that many nodes, named
// <name>-<i>, each with the template's resources.
func ExampleParse() {
	nodes, err := nodesfile.Parse([]byte(`[{"name": "node", "count": 2, "resources": {"cpu": "8", "memory": "32Gi"}}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range nodes {
		fmt.Println(n.Name, n.Resources["cpu"], n.Resources["memory"])
	}
	_, err = nodesfile.Parse([]byte(`[{"name": "node", "resources": {"cpu": "-1"}}]`))
	fmt.Println(err != nil)
	// Output:
	// node-0 8 32Gi
	// node-1 8 32Gi
	// true
}
