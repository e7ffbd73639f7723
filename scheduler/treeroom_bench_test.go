package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// treeRoomWorld is the bad case of urgency within a limit: nodes × 32
// cores, all full with one-core preemptible jobs of 100 queues under one
// group whose limit is the cluster's cores, and urgent one-core jobs (the
// default class) spread over the queues, each refused by the group's limit
// and each making its room by taking one preemptible job.
func treeRoomWorld(tb testing.TB, nodes, urgent int) (*scheduler.Scheduler, *scheduler.Snapshot) {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	cfg := scheduler.DefaultConfig(schema)
	cfg.ProtectedFractionOfFairShare = 100 // urgency only
	store, err := queue.New(schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	require.NoError(tb, err)
	snap := &scheduler.Snapshot{Queued: store}
	lim, err := schema.ParsePartial("limit", map[string]string{"cpu": fmt.Sprint(32 * nodes)})
	require.NoError(tb, err)
	snap.Groups = []*flotilla.QueueGroup{{Name: "g", Limit: lim}}
	const queues = 100
	for q := range queues {
		snap.Queues = append(snap.Queues, &flotilla.Queue{Name: fmt.Sprintf("q%03d", q), Parent: "g"})
	}
	one := schema.MustParse(map[string]string{"cpu": "1", "memory": "1Gi"})
	for n := range nodes {
		name := fmt.Sprintf("node-%04d", n)
		snap.Nodes = append(snap.Nodes, &flotilla.Node{Name: name, Total: schema.MustParse(map[string]string{"cpu": "32", "memory": "128Gi"})})
		for k := range 32 {
			i := n*32 + k
			snap.Running = append(snap.Running, scheduler.Running{Node: name, Start: t0, Job: &flotilla.Job{
				ID: fmt.Sprintf("run-%06d", i), Queue: fmt.Sprintf("q%03d", i%queues), PriorityClass: flotilla.ArmadaPreemptible,
				SubmitTime: t0, Requests: one}})
		}
	}
	for i := range urgent {
		require.NoError(tb, store.Add(&flotilla.Job{ID: fmt.Sprintf("urgent-%06d", i), Queue: fmt.Sprintf("q%03d", i%queues),
			PriorityClass: flotilla.ArmadaDefault, SubmitTime: t0, Requests: one}))
	}
	s, err := scheduler.New(cfg)
	require.NoError(tb, err)
	return s, snap
}

// BenchmarkTreeUrgencyWithinALimit: every urgent job is refused by the
// group's limit and preempts one running job to make its room.
func BenchmarkTreeUrgencyWithinALimit(b *testing.B) {
	for _, sz := range []struct{ nodes, urgent int }{{125, 500}, {250, 1000}, {500, 2000}} {
		b.Run(fmt.Sprintf("running=%d/urgent=%d", 32*sz.nodes, sz.urgent), func(b *testing.B) {
			s, snap := treeRoomWorld(b, sz.nodes, sz.urgent)
			res := runCycles(b, s, snap, t0)
			if len(res.Scheduled) != sz.urgent || len(res.Preempted) != sz.urgent {
				b.Fatalf("scheduled %d, preempted %d, want %d", len(res.Scheduled), len(res.Preempted), sz.urgent)
			}
		})
	}
}
