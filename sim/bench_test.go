package sim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/sim"
)

// BenchmarkRun100Nodes10kJobs4h simulates four virtual hours of 10,000
// jobs from three queues, arriving at a rate and at once, on 100 nodes of
// 32 cores in two clusters, and reports virtual seconds per wall second.
func BenchmarkRun100Nodes10kJobs4h(b *testing.B) {
	w, err := sim.ParseWorkload([]byte(`{"seed": 1, "duration": "4h",
		"queues": [{"name": "A"}, {"name": "B", "weight": 2}, {"name": "C"}],
		"jobTemplates": [
			{"id": "a", "queue": "A", "count": 4000, "requests": {"cpu": "4", "memory": "8Gi"}, "runtime": {"minimum": "5m", "tailMean": "10m"}},
			{"id": "b", "queue": "B", "count": 4000, "requests": {"cpu": "2", "memory": "4Gi"}, "priorityClass": "armada-preemptible",
			 "arrival": {"at": "30m", "rate": 0.5}, "runtime": {"minimum": "2m", "tailMean": "10m"}},
			{"id": "c", "queue": "C", "count": 2000, "requests": {"cpu": "8", "memory": "16Gi"}, "gang": {"cardinality": 4},
			 "arrival": {"at": "1h"}, "runtime": {"minimum": "10m", "tailMean": "5m"}}]}`))
	require.NoError(b, err)
	c, err := sim.ParseClusters([]byte(`{"clusters": [
		{"name": "c1", "nodes": [{"name": "a", "count": 50, "resources": {"cpu": "32", "memory": "256Gi"}}]},
		{"name": "c2", "nodes": [{"name": "b", "count": 50, "resources": {"cpu": "32", "memory": "256Gi"}}]}]}`))
	require.NoError(b, err)
	ctx := context.Background()
	var virtual float64
	b.ResetTimer()
	for b.Loop() {
		out, err := sim.Run(ctx, sim.Config{Workload: w, Clusters: c})
		if err != nil {
			b.Fatal(err)
		}
		virtual += out.End
	}
	b.ReportMetric(virtual/b.Elapsed().Seconds(), "virtual-s/s")
}
