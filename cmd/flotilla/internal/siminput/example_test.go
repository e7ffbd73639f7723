package siminput_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/siminput"
)

// ExampleRead reads an Armada ClusterSpec and a sim workload; a bad seed
// is a *BadFile naming the flag.
func ExampleRead() {
	dir, err := os.MkdirTemp("", "siminput")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			panic(err)
		}
		return p
	}
	files := siminput.Files{
		Cluster: write("clusters.yaml", "clusters: [{name: c1, pool: p, nodeTemplates: [{number: 2, totalResources: {resources: {cpu: 4}}}]}]\n"),
		Workload: write("workload.json", `{"queues": [{"name": "A"}], "jobTemplates": [{"id": "a", "queue": "A", "count": 3,
			"requests": {"cpu": "1"}, "runtime": {"minimum": "1m"}}]}`),
	}
	cfg, _, err := siminput.Read(files)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Clusters.Clusters[0].Name, *cfg.Clusters.Clusters[0].Nodes[0].Count, cfg.Workload.JobTemplates[0].Count)

	files.Seed = "-1"
	_, _, err = siminput.Read(files)
	var bad *siminput.BadFile
	fmt.Println(errors.As(err, &bad), bad.Path, bad.What, bad.Err)
	// Output:
	// c1 2 3
	// true -seed seed seed "-1": is malformed: want a non-negative integer
}
