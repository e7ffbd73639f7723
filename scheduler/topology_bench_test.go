package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// topologyBench is issue 26's benchmark: 10,000 nodes (8 GPUs, 64 cores,
// 512Gi) in 40 blocks × 25 racks of 10, 10 queues, 500 gangs of 8–64
// one-GPU members (18,028 jobs), each asking for gt (the zero value: the
// same cycle without topology). With host, nodes also carry a hostname
// label and the topology a third level. One op is one cold cycle.
func topologyBench(b *testing.B, gt flotilla.GangTopology, host bool) {
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	cfg := scheduler.DefaultConfig(schema)
	levels := []string{tBlock, tRack}
	if host {
		levels = append(levels, "kubernetes.io/hostname")
	}
	cfg.Topologies = []flotilla.Topology{{Name: "default", Levels: levels}}
	s, err := scheduler.New(cfg)
	require.NoError(b, err)
	snap := &scheduler.Snapshot{}
	total := schema.MustParse(map[string]string{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"})
	for blk := range 40 {
		for rack := range 25 {
			for i := range 10 {
				name := fmt.Sprintf("n-%02d-%02d-%d", blk, rack, i)
				labels := map[string]string{tBlock: fmt.Sprintf("b%02d", blk), tRack: fmt.Sprintf("r%02d", rack)}
				if host {
					labels["kubernetes.io/hostname"] = name
				}
				snap.Nodes = append(snap.Nodes, &flotilla.Node{Name: name, Total: total, Labels: labels})
			}
		}
	}
	for q := range 10 {
		snap.Queues = append(snap.Queues, &flotilla.Queue{Name: fmt.Sprintf("q%d", q)})
	}
	store, err := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	require.NoError(b, err)
	req := schema.MustParse(map[string]string{"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"})
	jobs := 0
	for g := range 500 {
		card := 8 + (g*37)%57
		q := snap.Queues[g%10].Name
		for m := range card {
			j := &flotilla.Job{ID: fmt.Sprintf("g%03d-%02d", g, m), Queue: q, JobSet: q, Requests: req,
				SubmitTime: t0.Add(timeStep(jobs)), Gang: flotilla.Gang{ID: fmt.Sprintf("g%03d", g), Cardinality: card, Topology: gt}}
			require.NoError(b, store.Add(j))
			jobs++
		}
	}
	snap.Queued = store
	res := runCycles(b, s, snap, t0)
	if len(res.Scheduled) != jobs {
		b.Fatalf("scheduled %d of %d", len(res.Scheduled), jobs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/500, "ns/gang")
}

func BenchmarkTopologyCycle(b *testing.B) {
	b.Run("none", func(b *testing.B) { topologyBench(b, flotilla.GangTopology{}, false) })
	b.Run("preferred-rack", func(b *testing.B) { topologyBench(b, flotilla.GangTopology{Preferred: tRack}, false) })
	b.Run("required-rack", func(b *testing.B) { topologyBench(b, flotilla.GangTopology{Required: tRack}, false) })
	b.Run("preferred-rack-with-hosts", func(b *testing.B) { topologyBench(b, flotilla.GangTopology{Preferred: tRack}, true) })
}
