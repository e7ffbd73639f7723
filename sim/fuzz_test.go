package sim_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/sim"
)

// FuzzParseWorkload: any input gives a workload that validates, every
// queue's usage seed in [0,1], or only *flotilla.FieldError problems;
// never a panic.
func FuzzParseWorkload(f *testing.F) {
	for _, name := range []string{"small.workload.json", "steady.workload.json", "small-tree.workload.json", "tree-day.workload.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"queues": [{"name": "A"}], "jobTemplates": [{"id": "a", "queue": "A", "count": 2, "requests": {"cpu": "1"}, "gang": {"cardinality": 2}, "arrival": {"after": ["a"]}, "repeat": {"numTimes": 1, "period": "1m"}}]}`))
	f.Add([]byte(`{"queues": [], "jobTemplates": null}`))
	f.Add([]byte(`{"queues": [{"name": "A"}], "jobTemplates": [{"id": "a", "queue": "A", "count": 2, "requests": {"cpu": "1"}, "pools": ["a", "a", "b c", ""], "gang": {"cardinality": 2, "nodeUniformityLabel": "z", "topology": {"name": "n", "preferred": "rack"}}}]}`))
	f.Add([]byte(`{"usageHalfLife": "-1h", "usageWeight": -1, "groups": [{"name": "g", "parent": "h", "weight": 0, "guaranteed": {"cpu": "8", "": "1"}, "limit": {"cpu": "4"}}, {"name": "h", "parent": "g", "lendingLimit": {"gpu": "x"}}],
		"queues": [{"name": "g", "parent": "A"}, {"name": "A", "parent": "g", "weight": 1e300, "guaranteed": {"memory": "9Gi"}}], "jobTemplates": [{"id": "a", "queue": "g", "count": 1, "requests": {"cpu": "1"}}]}`))
	f.Add([]byte(`{"usageHalfLife": "1h", "groups": [{"name": "g", "guaranteed": {"cpu": "1"}}], "queues": [{"name": "A", "parent": "g", "guaranteed": {"cpu": "2"}}, {"name": "B", "parent": "g", "limit": {"cpu": "1"}, "lendingLimit": {"cpu": "0"}}],
		"jobTemplates": [{"id": "a", "queue": "A", "count": 1, "requests": {"cpu": "1"}}]}`))
	f.Add([]byte(`{"usageHalfLife": "1h", "usageWeight": 1, "queues": [{"name": "light"}, {"name": "heavy", "usage": 1}, {"name": "some", "usage": 0.25}],
		"jobTemplates": [{"id": "a", "queue": "heavy", "count": 1, "requests": {"cpu": "1"}}]}`))
	f.Add([]byte(`{"groups": [{"name": "g", "usage": 0.5}], "queues": [{"name": "A", "parent": "g", "usage": 1.5}, {"name": "B", "usage": -0.25},
		{"name": "C", "usage": 1e999}, {"name": "D", "usage": "all"}, {"name": "E", "usage": null}, {"name": "F", "usage": 5e-324}],
		"jobTemplates": [{"id": "a", "queue": "A", "count": 1, "requests": {"cpu": "1"}}]}`))
	f.Add([]byte(`[1, 2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := sim.ParseWorkload(data)
		if err == nil {
			if verr := w.Validate(); verr != nil {
				t.Fatalf("parsed workload does not validate: %v", verr)
			}
			for i, q := range w.Queues {
				if !(q.Usage >= 0 && q.Usage <= 1) {
					t.Fatalf("accepted queues[%d].usage %v outside [0,1]", i, q.Usage)
				}
			}
			return
		}
		for _, e := range flotilla.Problems(err) {
			var fe *flotilla.FieldError
			if !errors.As(e, &fe) {
				t.Fatalf("problem %v is not a *flotilla.FieldError", e)
			}
		}
	})
}

// FuzzParseClusters: any input gives a cluster file that validates, at
// most MaxNodes nodes in all, or only *flotilla.FieldError problems; never
// a panic.
func FuzzParseClusters(f *testing.F) {
	for _, name := range []string{"small.clusters.json", "steady.clusters.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"clusters": [{"name": "c", "nodes": [{"name": "n", "count": 100001, "resources": {"cpu": "1"}}]}]}`))
	f.Add([]byte(`{"clusters": [{"name": "c", "nodes": [{"name": "n", "resources": {"cpu": "1x"}, "taints": [{"key": "", "effect": "Maybe"}]}]}, {"name": "c"}]}`))
	f.Add([]byte(`{"clusters": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := sim.ParseClusters(data)
		if err != nil {
			for _, e := range flotilla.Problems(err) {
				var fe *flotilla.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("problem %v is not a *flotilla.FieldError", e)
				}
			}
			return
		}
		if verr := c.Validate(); verr != nil {
			t.Fatalf("parsed clusters do not validate: %v", verr)
		}
		total := 0
		for _, cl := range c.Clusters {
			for _, n := range cl.Nodes {
				if n.Count == nil {
					total++
				} else {
					total += *n.Count
				}
			}
		}
		if len(c.Clusters) == 0 || total > sim.MaxNodes {
			t.Fatalf("accepted %d clusters with %d nodes", len(c.Clusters), total)
		}
	})
}
