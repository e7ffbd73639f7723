package simreport_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/simreport"
	"github.com/flotilla-sched/flotilla/sim"
)

// ExampleWrite simulates two queues on one node and writes the report
// beside sim's own tables.
func ExampleWrite() {
	clusters, err := sim.ParseClusters([]byte(`{"clusters": [{"name": "c1", "nodes": [{"name": "n", "resources": {"cpu": "4"}}]}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	workload, err := sim.ParseWorkload([]byte(`{"seed": 1, "queues": [{"name": "A"}, {"name": "B"}],
		"jobTemplates": [{"id": "a", "queue": "A", "count": 4, "requests": {"cpu": "2"}, "runtime": {"minimum": "60s"}},
		                 {"id": "b", "queue": "B", "count": 4, "requests": {"cpu": "2"}, "runtime": {"minimum": "60s"}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := sim.Config{Clusters: clusters, Workload: workload}
	out, err := sim.Run(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "simreport")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := simreport.Write(dir, cfg, out); err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range append(simreport.PlotNames(), "index") {
		ext := ".svg"
		if name == "index" {
			ext = ".html"
		}
		_, err := os.Stat(filepath.Join(dir, name+ext))
		fmt.Println(name+ext, err == nil)
	}
	// Output:
	// share.svg true
	// utilisation.svg true
	// delay.svg true
	// preemptions.svg true
	// index.html true
}
