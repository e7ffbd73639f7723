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
// and each making its room by taking one preemptible job. With capped, as
// many urgent jobs of a queue under g at its own limit with
// non-preemptible jobs, every one of them read (ReportEveryUnscheduled):
// its searches fail, after taking every job in g's reach, whenever a
// placement has dropped a victim since the last (the vain memo lapses).
func treeRoomWorld(tb testing.TB, nodes, urgent int, capped bool) (*scheduler.Scheduler, *scheduler.Snapshot) {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	cfg := scheduler.DefaultConfig(schema)
	cfg.ProtectedFractionOfFairShare = 100 // urgency only
	cfg.ReportEveryUnscheduled = capped
	store, err := queue.New(schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	require.NoError(tb, err)
	snap := &scheduler.Snapshot{Queued: store}
	cores := 32 * nodes
	if capped {
		cores += 4
	}
	lim, err := schema.ParsePartial("limit", map[string]string{"cpu": fmt.Sprint(cores)})
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
	if capped {
		// Queue "capped" under g, at its limit of 4 cores with
		// non-preemptible jobs: its urgent jobs are refused by its own
		// limit, which no job in reach can free, though g's every job is
		// in reach of g's limit.
		capLim, err := schema.ParsePartial("limit", map[string]string{"cpu": "4"})
		require.NoError(tb, err)
		snap.Queues = append(snap.Queues, &flotilla.Queue{Name: "capped", Parent: "g", Limit: capLim})
		snap.Nodes = append(snap.Nodes, &flotilla.Node{Name: "node-capped", Total: schema.MustParse(map[string]string{"cpu": "32", "memory": "128Gi"})})
		for k := range 4 {
			snap.Running = append(snap.Running, scheduler.Running{Node: "node-capped", Start: t0, Job: &flotilla.Job{
				ID: fmt.Sprintf("capped-run-%d", k), Queue: "capped", PriorityClass: flotilla.ArmadaDefault, SubmitTime: t0, Requests: one}})
		}
		for i := range urgent {
			require.NoError(tb, store.Add(&flotilla.Job{ID: fmt.Sprintf("capped-%06d", i), Queue: "capped",
				PriorityClass: flotilla.ArmadaDefault, SubmitTime: t0, Requests: one}))
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
// group's limit and preempts one running job to make its room (and, with
// capped, as many refused urgent jobs search in vain).
func BenchmarkTreeUrgencyWithinALimit(b *testing.B) {
	for _, sz := range []struct {
		nodes, urgent int
		capped        bool
	}{{125, 500, false}, {250, 1000, false}, {500, 2000, false}, {125, 500, true}, {250, 1000, true}, {500, 2000, true}} {
		b.Run(fmt.Sprintf("running=%d/urgent=%d/capped=%v", 32*sz.nodes, sz.urgent, sz.capped), func(b *testing.B) {
			s, snap := treeRoomWorld(b, sz.nodes, sz.urgent, sz.capped)
			res := runCycles(b, s, snap, t0)
			if len(res.Scheduled) != sz.urgent || len(res.Preempted) != sz.urgent {
				b.Fatalf("scheduled %d, preempted %d, want %d", len(res.Scheduled), len(res.Preempted), sz.urgent)
			}
		})
	}
}
