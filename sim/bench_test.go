package sim_test

import (
	"context"
	"os"
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

// BenchmarkSimulateDay simulates issue 13's speed goal: 24 virtual hours
// of 200,000 jobs from six queues of different weights (mixed sizes of
// 0.5 to 16 cores, some memory-bound, gangs of 8, a burst of 30,000 at
// 6h, runtimes of minutes to hours, two priority classes so that
// armada-default jobs preempt armada-preemptible ones) on 1,000 nodes of
// 32 cores in four clusters (testdata/day-1000x32.*). It reports the
// wall seconds per run and the virtual seconds per wall second; the goal
// is at most 60 wall seconds per run on a 2-core machine.
func BenchmarkSimulateDay(b *testing.B) {
	cfg := dayConfig(b)
	ctx := context.Background()
	b.ReportAllocs()
	var virtual float64
	runs := 0
	for b.Loop() {
		out, err := sim.Run(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		virtual += out.End
		runs++
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(runs), "wall-s/run")
	b.ReportMetric(virtual/b.Elapsed().Seconds(), "virtual-s/s")
}

// dayConfig reads testdata/day-1000x32.*.
func dayConfig(tb testing.TB) sim.Config {
	tb.Helper()
	data, err := os.ReadFile("testdata/day-1000x32.workload.json")
	require.NoError(tb, err)
	w, err := sim.ParseWorkload(data)
	require.NoError(tb, err)
	data, err = os.ReadFile("testdata/day-1000x32.clusters.json")
	require.NoError(tb, err)
	c, err := sim.ParseClusters(data)
	require.NoError(tb, err)
	return sim.Config{Workload: w, Clusters: c}
}
