package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// benchWorld builds nodes × 32 cores / 256Gi, queues, and jobs one-core jobs
// spread round-robin over the queues, each with a distinct submit order.
func benchWorld(b *testing.B, nodes, queues, jobs int) (*scheduler.Scheduler, *scheduler.Snapshot) {
	return benchWorldLaidOut(b, nodes, queues, jobs, inSubmitOrder)
}

// layout is where a benchmark world's jobs lie in memory: the same jobs,
// ids and submit times in each.
type layout int

const (
	// inSubmitOrder: one job of each queue in turn, as they were submitted.
	inSubmitOrder layout = iota
	// byQueue: each queue's jobs together, as batched submissions leave them.
	byQueue
	// shuffled: in an order unrelated to queue or submission (a fixed
	// permutation), so that no visiting order reads memory at a regular
	// stride the processor's prefetcher could follow.
	shuffled
)

// benchWorldLaidOut is benchWorld with the jobs' memory laid out as lay says.
func benchWorldLaidOut(b *testing.B, nodes, queues, jobs int, lay layout) (*scheduler.Scheduler, *scheduler.Snapshot) {
	b.Helper()
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	cfg := scheduler.DefaultConfig(schema)
	s, err := scheduler.New(cfg)
	require.NoError(b, err)
	snap := &scheduler.Snapshot{}
	total := schema.MustParse(map[string]string{"cpu": "32", "memory": "256Gi"})
	for i := range nodes {
		snap.Nodes = append(snap.Nodes, &flotilla.Node{Name: fmt.Sprintf("node-%05d", i), Total: total,
			Labels: map[string]string{"zone": fmt.Sprintf("z%d", i%4)}})
	}
	for i := range queues {
		snap.Queues = append(snap.Queues, &flotilla.Queue{Name: fmt.Sprintf("q%03d", i)})
	}
	store, err := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	require.NoError(b, err)
	req := schema.MustParse(map[string]string{"cpu": "1", "memory": "4Gi"})
	// One allocation for all the jobs, sharing their requests and queue
	// names: 10,000,000 of them fit in memory.
	all := make([]flotilla.Job, jobs)
	perQueue := (jobs + queues - 1) / queues
	var perm []int
	if lay == shuffled {
		perm = rand.New(rand.NewPCG(1, 2)).Perm(jobs)
	}
	for i := range all {
		q := snap.Queues[i%queues].Name
		at := i
		switch lay {
		case byQueue:
			at = (i%queues)*perQueue + i/queues
		case shuffled:
			at = perm[i]
		}
		all[at] = flotilla.Job{ID: "j" + strconv.Itoa(10000000 + i)[1:], Queue: q, JobSet: q, Requests: req,
			SubmitTime: t0.Add(timeStep(i))}
		if err := store.Add(&all[at]); err != nil {
			b.Fatal(err)
		}
	}
	snap.Queued = store
	return s, snap
}

func timeStep(i int) time.Duration { return time.Duration(i) * time.Millisecond }

// benchNodes returns n nodes of 32 cores and 256Gi named node-0000….
func benchNodes(schema *flotilla.ResourceSchema, n int) []*flotilla.Node {
	total := schema.MustParse(map[string]string{"cpu": "32", "memory": "256Gi"})
	nodes := make([]*flotilla.Node, n)
	for i := range nodes {
		nodes[i] = &flotilla.Node{Name: fmt.Sprintf("node-%04d", i), Total: total}
	}
	return nodes
}

// runCycles times s.Schedule over snap at now, one cycle per op, and
// returns the last result.
func runCycles(b *testing.B, s *scheduler.Scheduler, snap *scheduler.Snapshot, now time.Time) *scheduler.Result {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var res *scheduler.Result
	for b.Loop() {
		var err error
		if res, err = s.Schedule(ctx, snap, now); err != nil {
			b.Fatal(err)
		}
	}
	return res
}

// BenchmarkColdCycle is issue 2's headline: 1,000 × 32-core nodes, 10
// queues, 32,000 one-core jobs, an empty cluster. One op is one cycle.
func BenchmarkColdCycle(b *testing.B) {
	s, snap := benchWorld(b, 1000, 10, 32000)
	res := runCycles(b, s, snap, t0)
	if len(res.Scheduled) != 32000 {
		b.Fatalf("scheduled %d, want 32000", len(res.Scheduled))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/32000, "ns/job")
}

// BenchmarkColdCycleAvoiding is ColdCycle's world with the nodes in two
// clusters of 500 and one job in ten avoiding the first (as if its lease
// had expired there): 3,200 jobs search outside c0 first, the last ones in
// vain once c1 is full.
func BenchmarkColdCycleAvoiding(b *testing.B) {
	s, snap := benchWorld(b, 1000, 10, 32000)
	for i, n := range snap.Nodes {
		n.Cluster = fmt.Sprintf("c%d", i%2)
	}
	store, err := queue.New(s.Config().Schema, s.Config().PriorityClasses, s.Config().DefaultPriorityClass)
	require.NoError(b, err)
	avoid := []string{"c0"}
	old := snap.Queued.(*queue.Store)
	for _, q := range snap.Queues {
		k := 0
		old.Ascend(q.Name, func(e *queue.Entry) bool {
			j := *e.Job
			if k%10 == 0 {
				j.AvoidClusters = avoid
			}
			k++
			require.NoError(b, store.Add(&j))
			return true
		})
	}
	snap.Queued = store
	res := runCycles(b, s, snap, t0)
	if len(res.Scheduled) != 32000 {
		b.Fatalf("scheduled %d, want 32000", len(res.Scheduled))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/32000, "ns/job")
}

// BenchmarkLargeCycle: 10,000 nodes, 100 queues, 1,000,000 queued jobs, of
// which 320,000 fit.
func BenchmarkLargeCycle(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	s, snap := benchWorld(b, 10000, 100, 1000000)
	res := runCycles(b, s, snap, t0)
	if len(res.Scheduled) != 320000 {
		b.Fatalf("scheduled %d, want 320000", len(res.Scheduled))
	}
}

// BenchmarkRebalance is issue 4's: 1,000 × 32-core nodes full of one
// queue's preemptible one-core jobs, then nine more equal queues arrive
// with backlogs. One op is the rebalancing cycle (evict, refill, diff).
func BenchmarkRebalance(b *testing.B) {
	s, snap := rebalanceWorld(b, 1000, 4000, false)
	res := runCycles(b, s, snap, t0.Add(time.Minute))
	if len(res.Scheduled) != 28800 || len(res.Preempted) != 28800 {
		b.Fatalf("scheduled %d, preempted %d, want 28800 each", len(res.Scheduled), len(res.Preempted))
	}
}

// rebalanceWorld is BenchmarkRebalance's world: nodes × 32-core nodes
// full of q00's preemptible one-core jobs and backlog such jobs queued in
// each of q01–q09. With tree set the queues hang in groups: g0 holds q00
// and q01, g12 holds g1 (q02–q05) and g2 (q06–q09).
func rebalanceWorld(tb testing.TB, nodes, backlog int, tree bool) (*scheduler.Scheduler, *scheduler.Snapshot) {
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	cfg := scheduler.DefaultConfig(schema)
	s, err := scheduler.New(cfg)
	require.NoError(tb, err)
	snap := &scheduler.Snapshot{}
	if tree {
		snap.Groups = []*flotilla.QueueGroup{{Name: "g0"}, {Name: "g12"}, {Name: "g1", Parent: "g12"}, {Name: "g2", Parent: "g12"}}
	}
	req := schema.MustParse(map[string]string{"cpu": "1", "memory": "4Gi"})
	snap.Nodes = benchNodes(schema, nodes)
	for i, n := range snap.Nodes {
		for k := range 32 {
			snap.Running = append(snap.Running, scheduler.Running{
				Job: &flotilla.Job{ID: fmt.Sprintf("r%04d-%02d", i, k), Queue: "q00", Requests: req,
					PriorityClass: flotilla.ArmadaPreemptible, SubmitTime: t0},
				Node: n.Name, Start: t0,
			})
		}
	}
	store, err := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	require.NoError(tb, err)
	for q := range 10 {
		name := fmt.Sprintf("q%02d", q)
		qd := &flotilla.Queue{Name: name}
		if tree {
			qd.Parent = []string{"g0", "g0", "g1", "g1", "g1", "g1", "g2", "g2", "g2", "g2"}[q]
		}
		snap.Queues = append(snap.Queues, qd)
		if q == 0 {
			continue
		}
		for i := range backlog {
			require.NoError(tb, store.Add(&flotilla.Job{ID: fmt.Sprintf("%s-%05d", name, i), Queue: name,
				PriorityClass: flotilla.ArmadaPreemptible, Requests: req, SubmitTime: t0.Add(time.Second)}))
		}
	}
	snap.Queued = store
	return s, snap
}

// BenchmarkGangCycle is issue 3's: 1,000 × 32-core nodes, 10 queues, 32,000
// cores of demand, half as gangs of 8 × 4-core members and half as one-core
// jobs. ns/job is comparable with BenchmarkColdCycle's.
func BenchmarkGangCycle(b *testing.B) {
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	cfg := scheduler.DefaultConfig(schema)
	s, err := scheduler.New(cfg)
	require.NoError(b, err)
	snap := &scheduler.Snapshot{}
	snap.Nodes = benchNodes(schema, 1000)
	store, err := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	require.NoError(b, err)
	one := schema.MustParse(map[string]string{"cpu": "1", "memory": "4Gi"})
	four := schema.MustParse(map[string]string{"cpu": "4", "memory": "16Gi"})
	jobs := 0
	for q := range 10 {
		name := fmt.Sprintf("q%02d", q)
		snap.Queues = append(snap.Queues, &flotilla.Queue{Name: name})
		for g := range 50 { // 50 gangs × 32 cores = 1,600 cores per queue
			for m := range 8 {
				require.NoError(b, store.Add(&flotilla.Job{ID: fmt.Sprintf("%s-g%02d-%d", name, g, m), Queue: name,
					Requests: four, SubmitTime: t0.Add(time.Duration(2*g) * time.Second),
					Gang: flotilla.Gang{ID: fmt.Sprintf("%s-g%02d", name, g), Cardinality: 8}}))
				jobs++
			}
		}
		for i := range 1600 {
			require.NoError(b, store.Add(&flotilla.Job{ID: fmt.Sprintf("%s-s%04d", name, i), Queue: name,
				Requests: one, SubmitTime: t0.Add(time.Duration(i) * 62500 * time.Microsecond)}))
			jobs++
		}
	}
	snap.Queued = store
	res := runCycles(b, s, snap, t0)
	if len(res.Scheduled) != jobs {
		b.Fatalf("scheduled %d of %d", len(res.Scheduled), jobs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(jobs), "ns/job")
}

// backlog runs cycles over nodes × 32 cores with a backlog of jobs
// one-core jobs in 10 queues, of which nodes × 32 fit: the cycle's cost
// should follow what fits, not the backlog.
func backlog(b *testing.B, nodes, jobs int) {
	s, snap := benchWorld(b, nodes, 10, jobs)
	runtime.GC() // the build's garbage is not the cycle's cost
	res := runCycles(b, s, snap, t0)
	if len(res.Scheduled) != nodes*32 {
		b.Fatalf("scheduled %d, want %d", len(res.Scheduled), nodes*32)
	}
	waiting := 0
	for _, g := range res.Unscheduled {
		waiting += g.Count
	}
	for _, r := range res.NotExamined {
		waiting += r.Count
	}
	if waiting != jobs-nodes*32 {
		b.Fatalf("%d reported waiting, want %d", waiting, jobs-nodes*32)
	}
}

// BenchmarkBacklog1MOn1kNodes: 1,000,000 queued on 1,000 × 32-core nodes
// (10 queues), 32,000 fit.
func BenchmarkBacklog1MOn1kNodes(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	backlog(b, 1000, 1000000)
}

// BenchmarkBacklog1MOn10kNodes: 1,000,000 queued on 10,000 nodes, 320,000
// fit; BenchmarkBacklog10MOn10kNodes's baseline.
func BenchmarkBacklog1MOn10kNodes(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	backlog(b, 10000, 1000000)
}

// BenchmarkBacklog10MOn10kNodes: 10,000,000 queued on 10,000 nodes, 320,000
// fit. Building the store takes about a minute and several GB, so it runs
// only with FLOTILLA_BENCH_10M=1.
func BenchmarkBacklog10MOn10kNodes(b *testing.B) {
	if testing.Short() || os.Getenv("FLOTILLA_BENCH_10M") != "1" {
		b.Skip("set FLOTILLA_BENCH_10M=1: builds 10,000,000 jobs")
	}
	backlog(b, 10000, 10000000)
}
