package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

func TestProgressiveFillingEqualQueues(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	for _, q := range []string{"A", "B", "C"} {
		w.addQueue(q, 1)
		w.submit(q, 32, "1")
	}
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 11, "B": 11, "C": 10}, countByQueue(res.Scheduled))
	for _, q := range res.Queues {
		assert.InDelta(t, 1.0/3, q.FairShare, 1e-12, q.Name)
	}
}

func TestProgressiveFillingWeights(t *testing.T) {
	w := newWorld(t)
	w.addNodes(3, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 2)
	w.addQueue("C", 10)
	for _, q := range []string{"A", "B", "C"} {
		w.submit(q, 100, "1")
	}
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 60, "B": 30, "C": 6}, countByQueue(res.Scheduled))
}

func TestDemandCappedQueueLeavesRestToOthers(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 4, "1")
	w.submit("B", 100, "1")
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 4, "B": 28}, countByQueue(res.Scheduled))
	assert.InDelta(t, 4.0/32, res.Queues[0].AdjustedFairShare, 1e-9)
	assert.InDelta(t, 28.0/32, res.Queues[1].AdjustedFairShare, 1e-9)
}

func TestLargeUnschedulableJobDoesNotBlockSmallerOnes(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	big := w.submit("A", 1, "64")[0]
	w.submit("A", 3, "1")
	w.cfg.MaxQueueLookback = 10
	res := w.schedule()
	assert.Len(t, res.Scheduled, 3)
	require.Len(t, res.UnscheduledJobs, 1)
	assert.Equal(t, big, res.UnscheduledJobs[0].Job)
	assert.Equal(t, scheduler.ReasonNeverFits, res.UnscheduledJobs[0].Reason.Code)
	assert.Contains(t, res.UnscheduledJobs[0].Reason.Message, "cpu")
}

func TestLookbackBoundsExaminedJobs(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.submit("A", 5, "64")
	w.submit("A", 3, "1")
	w.cfg.MaxQueueLookback = 5
	res := w.schedule()
	assert.Empty(t, res.Scheduled, "the small jobs sit behind five big ones and the lookback is five")
	assert.Len(t, res.UnscheduledJobs, 5)
	require.Len(t, res.NotExamined, 1)
	assert.Equal(t, scheduler.QueueRemainder{Queue: "A", Count: 3, Reason: res.NotExamined[0].Reason}, res.NotExamined[0])
	assert.Equal(t, scheduler.ReasonLookback, res.NotExamined[0].Reason.Code)
}

func TestPerJobPriorityLowerNumberFirst(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "1")
	w.addQueue("A", 1)
	w.submit("A", 1, "1", withPriority(10))
	want := w.submit("A", 1, "1", withPriority(1))[0]
	w.submit("A", 1, "1", withPriority(20))
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, want.ID, res.Scheduled[0].Job.ID)
}

func TestSchedulingKeyCacheKeepsTheFirstJobsCode(t *testing.T) {
	for _, c := range []struct {
		name string
		cpu  string
		code scheduler.ReasonCode
	}{
		{"larger than the node: never fits", "16", scheduler.ReasonNeverFits},
		{"fits the empty node: no room", "6", scheduler.ReasonNoRoom},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.addNodes(1, "8")
			w.addQueue("A", 1)
			w.submit("A", 1, "4")
			jobs := w.submit("A", 3, c.cpu)
			res := w.schedule()
			require.Len(t, res.UnscheduledJobs, 3)
			first := res.UnscheduledJobs[0].Reason
			assert.Equal(t, c.code, first.Code)
			assert.Empty(t, first.Search.SameAs, "the first job was searched for")
			for _, u := range res.UnscheduledJobs[1:] {
				assert.Equal(t, c.code, u.Reason.Code, "a cached hit keeps the first job's code")
				assert.Equal(t, jobs[0].ID, u.Reason.Search.SameAs)
				assert.Equal(t, "same requirements as job "+jobs[0].ID+": "+first.Message, u.Reason.Message)
				assert.Equal(t, first.Search.Shortfall, u.Reason.Search.Shortfall)
				assert.Same(t, res.UnscheduledJobs[1].Reason.Search, u.Reason.Search, "cached hits share one search")
			}
		})
	}
}

func TestRoundFractionStopsAfterCrossingJob(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "100")
	w.addQueue("A", 1)
	w.submit("A", 50, "1")
	w.cfg.MaximumResourceFractionToSchedule = map[string]float64{"cpu": 0.1}
	res := w.schedule()
	// 10 cores is exactly the limit, not over it; the 11th crosses and is kept.
	assert.Len(t, res.Scheduled, 11)
	require.Len(t, res.NotExamined, 1)
	assert.Equal(t, scheduler.ReasonRoundLimit, res.NotExamined[0].Reason.Code)
	assert.Equal(t, 39, res.NotExamined[0].Count)
}

func TestGlobalRateLimitBurstAndRefill(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "100")
	w.addQueue("A", 1)
	w.submit("A", 50, "1")
	w.cfg.MaximumSchedulingRate = 2
	w.cfg.MaximumSchedulingBurst = 5
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	res, err := s.Schedule(context.Background(), w.snapshot(), t0)
	require.NoError(t, err)
	assert.Len(t, res.Scheduled, 5, "a full bucket")
	w.apply(res)
	snap := w.snapshot()
	snap.RateLimits = res.RateLimits
	res, err = s.Schedule(context.Background(), snap, t0.Add(1500*1e6)) // 1.5 s later: 3 tokens
	require.NoError(t, err)
	assert.Len(t, res.Scheduled, 3)
	assert.Equal(t, scheduler.ReasonGlobalRateLimit, res.NotExamined[0].Reason.Code)
}

func TestPerQueueRateLimitStopsOnlyThatQueue(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "100")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 20, "1")
	w.submit("B", 20, "1")
	w.cfg.MaximumPerQueueSchedulingRate = 1
	w.cfg.MaximumPerQueueSchedulingBurst = 4
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 4, "B": 4}, countByQueue(res.Scheduled))
	for _, r := range res.NotExamined {
		assert.Equal(t, scheduler.ReasonQueueRateLimit, r.Reason.Code)
		assert.Equal(t, 16, r.Count)
	}
}

func TestPerQueuePriorityClassLimit(t *testing.T) {
	w := newWorld(t)
	w.cfg.PriorityClasses[1].MaximumResourceFractionPerQueue = map[string]float64{"cpu": 0.25}
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.queues[1].LimitsByPriorityClass = map[string]map[string]float64{flotilla.ArmadaPreemptible: {"cpu": 0.5}}
	pre := func(j *flotilla.Job) { j.PriorityClass = flotilla.ArmadaPreemptible }
	w.submit("A", 20, "1", pre)
	w.submit("B", 20, "1", pre)
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 8, "B": 16}, countByQueue(res.Scheduled))
	var limited int
	for _, u := range res.UnscheduledJobs {
		if u.Reason.Code == scheduler.ReasonQueueClassLimit {
			limited++
		}
	}
	assert.Equal(t, 16, limited)
}

func TestHigherPriorityClassGoesFirst(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 4, "1", func(j *flotilla.Job) { j.PriorityClass = flotilla.ArmadaPreemptible })
	w.submit("B", 4, "1")
	res := w.schedule()
	assert.Equal(t, map[string]int{"B": 4}, countByQueue(res.Scheduled))
}

func TestQueueTiersKeepQueuesOnTheirOwnNodes(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 32, "1")
	w.submit("B", 32, "1")
	res := w.schedule()
	nodesOf := map[string]map[string]bool{}
	for _, a := range res.Scheduled {
		if nodesOf[a.Job.Queue] == nil {
			nodesOf[a.Job.Queue] = map[string]bool{}
		}
		nodesOf[a.Job.Queue][a.Node] = true
	}
	assert.Len(t, nodesOf["A"], 1, "A's jobs share one node")
	assert.Len(t, nodesOf["B"], 1, "B's jobs share one node")
}

func TestSnapshotErrorsNameFieldAndValue(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.running = append(w.running,
		scheduler.Running{Job: w.job("nope", "1"), Node: "node-0"},
		scheduler.Running{Job: w.job("A", "1"), Node: "missing"},
	)
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	_, err = s.Schedule(context.Background(), w.snapshot(), t0)
	require.Error(t, err)
	var fe *flotilla.FieldError
	require.True(t, errors.As(err, &fe))
	assert.ErrorIs(t, err, flotilla.ErrUnknownName)
	assert.Contains(t, err.Error(), `running[0].job.queue "nope"`)
	assert.Contains(t, err.Error(), `running[1].node "missing"`)
}

// A job listed running twice is a malformed snapshot: the second listing
// is named (field and id), the first is not, and jobs of other ids are
// not mistaken for it.
func TestRunningJobListedTwiceIsRefused(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "32")
	w.addQueue("A", 1)
	a, b := w.job("A", "1"), w.job("A", "1")
	twin := *a
	w.running = append(w.running,
		scheduler.Running{Job: a, Node: "node-0"},
		scheduler.Running{Job: b, Node: "node-0"},
		scheduler.Running{Job: &twin, Node: "node-1"},
	)
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	_, err = s.Schedule(context.Background(), w.snapshot(), t0)
	require.ErrorIs(t, err, flotilla.ErrDuplicate)
	assert.Contains(t, err.Error(), fmt.Sprintf("running[2].job.id %q", a.ID))
	assert.NotContains(t, err.Error(), "running[0]")
	assert.NotContains(t, err.Error(), "running[1]")
}

// A node whose running jobs request more than its total (its allocatable
// shrank under them) is full, not an error: the cycle places nothing new
// there, its jobs stay, the rest of the cluster is scheduled as usual,
// and the node is named; the caller's node is not modified.
func TestOverCommittedNodeIsTreatedAsFull(t *testing.T) {
	for _, strategy := range []scheduler.Strategy{scheduler.ProgressiveFilling, scheduler.Lottery} {
		t.Run(string(strategy), func(t *testing.T) {
			w := newWorld(t)
			w.cfg.Strategy = strategy
			if strategy == scheduler.Lottery {
				w.cfg.PriorityHalftime = time.Hour
			}
			w.addNodes(2, "4")
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			w.running = append(w.running,
				scheduler.Running{Job: w.job("A", "3"), Node: "node-0"},
				scheduler.Running{Job: w.job("A", "3"), Node: "node-0"},
			)
			w.submit("B", 6, "1")
			res := w.schedule()
			assert.Equal(t, []string{"node-0"}, res.OverCommitted)
			assert.Empty(t, res.Preempted, "its jobs stay")
			require.Len(t, res.Scheduled, 4, "node-1 fills")
			for _, a := range res.Scheduled {
				assert.Equal(t, "node-1", a.Node, a.Job.ID)
			}
			assert.Equal(t, w.res("4"), w.nodes[0].Total, "the snapshot's node keeps its total")
			assert.False(t, w.nodes[0].Unschedulable, "and is not cordoned")
		})
	}
}

// A cycle over an over-committed node builds its node database once, as
// any cycle does: it allocates no more than the same cycle with the node's
// total raised to what its jobs request (a second build over a patched
// snapshot, as the cycle once made, doubles what taking stock allocates).
func TestOverCommittedNodeBuildsTheNodeDatabaseOnce(t *testing.T) {
	w := newWorld(t)
	w.addNodes(200, "4")
	w.addQueue("A", 1)
	for i := range w.nodes {
		w.run("A", "2", w.nodes[i].Name, nonPreemptible)
	}
	w.run("A", "3", "node-0", nonPreemptible) // 5 cores of 4
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	allocs := func() float64 {
		return testing.AllocsPerRun(3, func() {
			_, err := s.Schedule(context.Background(), w.snapshot(), t0)
			require.NoError(t, err)
		})
	}
	over := allocs()
	res := w.schedule()
	require.Equal(t, []string{"node-0"}, res.OverCommitted)
	w.nodes[0] = &flotilla.Node{Name: "node-0", Total: w.res("5")}
	fits := allocs()
	assert.LessOrEqual(t, over, fits+4, "allocations with the over-committed node (%v) against without (%v)", over, fits)
}

// Running.NodeIndex is only a hint: the job is bound to the node Running.Node
// names, whatever a hint naming another node or out of range says, and a
// hint naming the right node gives the same decision as none.
func TestRunningNodeIndexHintIsCheckedAgainstTheNodeName(t *testing.T) {
	for name, hints := range map[string][2]int{
		"no hints":           {0, 0},
		"right hints":        {2, 1},
		"hint of other node": {1, 2},
		"hints out of range": {3, -1},
	} {
		w := newWorld(t)
		w.addNodes(2, "2")
		w.addQueue("A", 1)
		// node-1 is full; node-0 has one core free: if a hint were taken
		// for node-0 (or node-1) without checking, a node would hold 3
		// cores and the cycle would fail, or the queued job's node differ.
		w.running = append(w.running,
			scheduler.Running{Job: w.job("A", "2"), Node: "node-1", NodeIndex: hints[0], Start: t0},
			scheduler.Running{Job: w.job("A", "1"), Node: "node-0", NodeIndex: hints[1], Start: t0},
		)
		w.submit("A", 1, "1")
		res := w.schedule()
		require.Len(t, res.Scheduled, 1, name)
		assert.Equal(t, "node-0", res.Scheduled[0].Node, name)
	}
}

// Schedule judges snapshot nodes with flotilla's Node.Validate, the check
// the scenario format uses: a taint without an effect, an empty label key
// or a nameless node is an error naming the field, not a node silently
// read one way or another.
func TestSnapshotNodesAreValidatedLikeScenarioNodes(t *testing.T) {
	for name, tc := range map[string]struct {
		mod   func(*flotilla.Node)
		field string
		class error
	}{
		"taint without effect": {func(n *flotilla.Node) { n.Taints = []flotilla.Taint{{Key: "gpu", Value: "true"}} }, `node "node-0".taints[0].effect`, flotilla.ErrRequired},
		"empty label key":      {func(n *flotilla.Node) { n.Labels = map[string]string{"": "x"} }, `node "node-0".labels`, flotilla.ErrRequired},
		"no name":              {func(n *flotilla.Node) { n.Name = "" }, `node "".name`, flotilla.ErrRequired},
	} {
		w := newWorld(t)
		w.addNodes(1, "32")
		w.addQueue("A", 1)
		w.submit("A", 1, "1")
		tc.mod(w.nodes[0])
		s, err := scheduler.New(w.cfg)
		require.NoError(t, err)
		_, err = s.Schedule(context.Background(), w.snapshot(), t0)
		require.ErrorIs(t, err, tc.class, name)
		var fe *flotilla.FieldError
		require.ErrorAs(t, err, &fe, name)
		assert.Equal(t, tc.field, fe.Field, name)
	}
}

func TestConfigErrorsAllReported(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu")
	cfg := scheduler.DefaultConfig(schema)
	cfg.Fairness = "fifo"
	cfg.EvictionProbability = 2
	cfg.MaxQueueLookback = -1
	cfg.DefaultPriorityClass = "gold"
	cfg.MaximumResourceFractionToSchedule = map[string]float64{"gpu": 1.5}
	_, err := scheduler.New(cfg)
	require.Error(t, err)
	for _, want := range []string{`fairness "fifo"`, `evictionProbability "2"`, `maxQueueLookback "-1"`, `defaultPriorityClass "gold"`, `maximumResourceFractionToSchedule.gpu "1.5"`} {
		assert.Contains(t, err.Error(), want)
	}
	assert.ErrorIs(t, err, flotilla.ErrOutOfRange)
}

func TestCancelledContext(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.submit("A", 5, "1")
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Schedule(ctx, w.snapshot(), t0)
	assert.ErrorIs(t, err, context.Canceled)
}

// A resource no node has is a resource of capacity 0 everywhere: New accepts
// it as an indexed resource, a resource weight, a round fraction and a class
// or queue cap (Armada's default config indexes nvidia.com/gpu on CPU-only
// clusters), and the cycle decides exactly as it does without it.
func TestConfigResourceAbsentFromSchemaIsCapacityZero(t *testing.T) {
	run := func(absent bool) map[string]int {
		schema := flotilla.MustResourceSchema("cpu", "memory")
		cfg := scheduler.DefaultConfig(schema)
		cfg.Fairness = scheduler.AssetFairness
		cfg.ResourceWeights = map[string]float64{"cpu": 1, "memory": 0.5}
		cfg.IndexedResources = []binpack.IndexedResource{{Name: "cpu", Resolution: 1}, {Name: "memory", Resolution: 1}}
		cfg.MaximumResourceFractionToSchedule = map[string]float64{"cpu": 0.75}
		limits := map[string]map[string]float64{flotilla.ArmadaDefault: {"cpu": 0.5}}
		if absent {
			cfg.ResourceWeights["nvidia.com/gpu"] = 4
			cfg.IndexedResources = append([]binpack.IndexedResource{{Name: "nvidia.com/gpu", Resolution: 1}}, cfg.IndexedResources...)
			cfg.MaximumResourceFractionToSchedule["nvidia.com/gpu"] = 0
			cfg.PriorityClasses = flotilla.DefaultPriorityClasses()
			for i := range cfg.PriorityClasses {
				cfg.PriorityClasses[i].MaximumResourceFractionPerQueue = map[string]float64{"nvidia.com/gpu": 0}
			}
			limits[flotilla.ArmadaDefault]["nvidia.com/gpu"] = 0
		}
		s, err := scheduler.New(cfg)
		require.NoError(t, err)
		store, err := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
		require.NoError(t, err)
		var nodes []*flotilla.Node
		for i := range 4 {
			nodes = append(nodes, &flotilla.Node{Name: fmt.Sprintf("n%d", i), Total: schema.MustParse(map[string]string{"cpu": fmt.Sprint(4 + i), "memory": "16Gi"})})
		}
		queues := []*flotilla.Queue{{Name: "A", LimitsByPriorityClass: limits}, {Name: "B"}}
		for i := range 12 {
			q := queues[i%2].Name
			require.NoError(t, store.Add(&flotilla.Job{ID: fmt.Sprintf("j%02d", i), Queue: q, SubmitTime: t0,
				Requests: schema.MustParse(map[string]string{"cpu": "1", "memory": "1Gi"})}))
		}
		res, err := s.Schedule(context.Background(), &scheduler.Snapshot{Nodes: nodes, Queues: queues, Queued: store}, t0)
		require.NoError(t, err)
		got := map[string]int{}
		for _, a := range res.Scheduled {
			got[a.Job.ID+"@"+a.Node]++
		}
		return got
	}
	without := run(false)
	require.NotEmpty(t, without)
	assert.Equal(t, without, run(true))
}

// Config.Validate (and so New) catches at construction what the node
// database would otherwise reject only at the first Schedule: duplicate
// indexed resources, more than binpack.MaxIndexedResources, empty names and
// resolutions below 1.
func TestConfigIndexedResourceProblemsAreCaughtAtNew(t *testing.T) {
	cases := []struct {
		name    string
		indexed []binpack.IndexedResource
		field   string
		class   error
	}{
		{"duplicate", []binpack.IndexedResource{{Name: "cpu", Resolution: 1}, {Name: "cpu", Resolution: 1}}, "indexedResources[1].name", flotilla.ErrDuplicate},
		{"too many", []binpack.IndexedResource{{Name: "a", Resolution: 1}, {Name: "b", Resolution: 1}, {Name: "c", Resolution: 1}, {Name: "d", Resolution: 1}, {Name: "e", Resolution: 1}}, "indexedResources", flotilla.ErrOutOfRange},
		{"empty name", []binpack.IndexedResource{{Name: "", Resolution: 1}}, "indexedResources[0].name", flotilla.ErrRequired},
		{"resolution 0", []binpack.IndexedResource{{Name: "cpu"}}, "indexedResources[0].resolution", flotilla.ErrOutOfRange},
	}
	for _, c := range cases {
		cfg := scheduler.DefaultConfig(flotilla.MustResourceSchema("cpu"))
		cfg.IndexedResources = c.indexed
		_, err := scheduler.New(cfg)
		require.Error(t, err, c.name)
		var fe *flotilla.FieldError
		require.True(t, errors.As(err, &fe), c.name)
		assert.Equal(t, c.field, fe.Field, c.name)
		assert.ErrorIs(t, err, c.class, c.name)
		assert.Equal(t, err.Error(), cfg.Validate().Error(), c.name)
	}
}

// A queue whose weight 1/priorityFactor is not finite (1e-310), or whose
// weight would overflow the sum of weights (two queues at 1e-308), is bad
// input named by the queue, not a cycle with NaN or zero fair shares.
func TestScheduleRejectsQueueWhoseWeightIsNotFinite(t *testing.T) {
	for _, factors := range [][]float64{{1e-310, 1}, {1e-308, 1e-308}} {
		w := newWorld(t)
		w.addNodes(1, "8")
		w.addQueue("A", factors[0])
		w.addQueue("B", factors[1])
		w.submit("A", 2, "1")
		w.submit("B", 2, "1")
		s, err := scheduler.New(w.cfg)
		require.NoError(t, err)
		_, err = s.Schedule(context.Background(), w.snapshot(), t0)
		require.Error(t, err, "%v", factors)
		assert.ErrorIs(t, err, flotilla.ErrOutOfRange)
		assert.Contains(t, err.Error(), `queue "A".priorityFactor`)
	}
}

// TestHundredThousandNodesOf4TiBScheduleWithExactAccounting: the largest
// cluster a scenario allows, 100,000 nodes of 64 cpu and 4 TiB, is accepted
// (its memory total, 4.4·10^17 bytes, fits an int64; in milli-bytes it
// overflowed) and filled by two equal queues of whole-node jobs and a gang
// that must land within one zone of 50,000 nodes: every allocation is exact.
func TestHundredThousandNodesOf4TiBScheduleWithExactAccounting(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 nodes")
	}
	const nodes = 100_000
	schema := flotilla.MustResourceSchema("cpu", "memory")
	cfg := scheduler.DefaultConfig(schema)
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	node := schema.MustParse(map[string]string{"cpu": "64", "memory": "4Ti"})
	require.Equal(t, flotilla.Resources{64_000, 1 << 42}, node)
	snap := &scheduler.Snapshot{}
	zones := []map[string]string{{"zone": "a"}, {"zone": "b"}}
	for i := range nodes {
		snap.Nodes = append(snap.Nodes, &flotilla.Node{Name: fmt.Sprintf("n%06d", i), Total: node, Labels: zones[i%2]})
	}
	for _, q := range []string{"A", "B", "G"} {
		snap.Queues = append(snap.Queues, &flotilla.Queue{Name: q, PriorityFactor: 1})
	}
	store, err := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	require.NoError(t, err)
	for i := range 60_000 {
		for _, q := range []string{"A", "B"} {
			require.NoError(t, store.Add(&flotilla.Job{ID: fmt.Sprintf("%s%06d", q, i), Queue: q, Requests: node,
				SubmitTime: t0.Add(time.Duration(i))}))
		}
	}
	const gangSize = 8
	for i := range gangSize {
		require.NoError(t, store.Add(&flotilla.Job{ID: fmt.Sprint("g", i), Queue: "G", Requests: node, SubmitTime: t0,
			Gang: flotilla.Gang{ID: "g", Cardinality: gangSize, NodeUniformityLabel: "zone"}}))
	}
	snap.Queued = store
	res, err := s.Schedule(context.Background(), snap, t0)
	require.NoError(t, err)
	require.Len(t, res.Scheduled, nodes, "every node gets one whole-node job")

	perQueue := (nodes - gangSize) / 2
	want := map[string]int{"A": perQueue, "B": perQueue, "G": gangSize}
	assert.Equal(t, want, countByQueue(res.Scheduled))
	gangZone := ""
	byName := map[string]*flotilla.Node{}
	for _, n := range snap.Nodes {
		byName[n.Name] = n
	}
	for _, a := range res.Scheduled {
		if a.Job.Queue == "G" {
			z := byName[a.Node].Labels["zone"]
			if gangZone == "" {
				gangZone = z
			}
			assert.Equal(t, gangZone, z, "the gang stays within one zone")
		}
	}
	for _, q := range res.Queues {
		n := int64(want[q.Name])
		assert.Equal(t, flotilla.Resources{n * 64_000, n << 42}, q.Allocated, q.Name)
		assert.Equal(t, schema.Quantity(1, n<<42), schema.Format(q.Allocated)["memory"], q.Name)
		assert.Equal(t, float64(n)/nodes, q.Share, q.Name)
		assert.InDelta(t, 1.0/3, q.FairShare, 1e-12, q.Name)
	}
	assert.Equal(t, "199984Ti", schema.Format(res.Queues[0].Allocated)["memory"])
}

// A gang counts once toward the lookback (DESIGN.md §3): a gang whose
// first member takes the last lookback unit still has its other members
// read, and completes.
func TestLookbackLetsAGangBegunAtItsLastUnitComplete(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.submit("A", 2, "1", inGang("g", 2, ""))
	w.cfg.MaxQueueLookback = 1
	res := w.schedule()
	assert.Len(t, res.Scheduled, 2, "unscheduled: %v", res.UnscheduledJobs)
}

// Past the lookback, a queue is read on for the missing members of a gang
// already begun even when they are not adjacent in queue order (a
// mixed-class gang, or members with different per-job priorities or submit
// times): a lone job between them is left unexamined (counted in
// NotExamined), not peeked so that it stops the queue. Otherwise the gang
// would never complete, be reported gang-incomplete while all its members
// are queued, and, as the same snapshot gives the same answer every cycle,
// with maxQueueLookback 1 queue A would never schedule anything again.
func TestLookbackReadsOnForTheMissingMembersOfAGangThatAreNotAdjacent(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	m1 := w.job("A", "1", nonPreemptible, inGang("g", 2, ""))
	x := w.job("A", "1", nonPreemptible, func(j *flotilla.Job) { j.SubmitTime = t0.Add(time.Second) })
	m2 := w.job("A", "1", preemptible, inGang("g", 2, ""))
	for _, j := range []*flotilla.Job{m1, x, m2} {
		require.NoError(t, w.store.Add(j))
	}
	w.cfg.MaxQueueLookback = 1
	res := w.schedule()
	assert.Len(t, res.Scheduled, 2, "gang g is the queue's first unit; Unscheduled=%v NotExamined=%v", res.UnscheduledJobs, res.NotExamined)
}

// NotExamined counts a queue's unexamined jobs once, even when the queue
// left at its lookback and came back to retry a displaced job, then left
// again.
func TestNotExaminedCountsAQueueOnceWhenItReturnsToRetryADisplacedJob(t *testing.T) {
	w := newWorld(t)
	w.cfg.ProtectedFractionOfFairShare = 0
	w.cfg.MaxQueueLookback = 1
	w.addNodes(1, "2")
	w.addQueue("A", 1)
	w.addQueue("Z", 1)
	w.run("Z", "1", "node-0", preemptible, startedAt(-time.Hour))
	w.submit("Z", 1, "2", nonPreemptible)
	w.submit("A", 2, "1", preemptible)
	res := w.schedule()
	accounted := countByQueue(res.Scheduled)["A"]
	for _, u := range res.UnscheduledJobs {
		if u.Job.Queue == "A" {
			accounted++
		}
	}
	for _, n := range res.NotExamined {
		if n.Queue == "A" {
			accounted += n.Count
		}
	}
	assert.Equal(t, 2, accounted, "A has 2 queued jobs; NotExamined=%v Unscheduled=%v", res.NotExamined, res.UnscheduledJobs)
}

// A queue whose first unit already reaches the lookback (here an
// incomplete gang's member) still reports its other jobs in NotExamined:
// every queued job is scheduled, unscheduled or counted, none vanishes
// from the Result.
func TestQueueStoppedAtItsFirstUnitCountsItsOtherJobsInNotExamined(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.submit("A", 1, "1", inGang("g", 2, ""), withPriority(0))
	w.submit("A", 1, "1", withPriority(1))
	w.cfg.MaxQueueLookback = 1
	res := w.schedule()
	accounted := len(res.Scheduled) + len(res.UnscheduledJobs)
	for _, n := range res.NotExamined {
		accounted += n.Count
	}
	assert.Equal(t, 2, accounted, "NotExamined=%v Unscheduled=%v", res.NotExamined, res.UnscheduledJobs)
}

// A job both running and queued in the snapshot is never scheduled again:
// the caller is not told to bind it a second time (rejecting the snapshot
// is a fine answer too).
func TestSnapshotWithAJobBothRunningAndQueuedIsRefused(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "4")
	w.addQueue("A", 1)
	j := w.run("A", "1", "node-0", nonPreemptible)
	require.NoError(t, w.store.Add(j))
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	_, err = s.Schedule(context.Background(), w.snapshot(), t0)
	require.ErrorIs(t, err, flotilla.ErrDuplicate, "a job both running and queued is a malformed snapshot")
	var fe *flotilla.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, j.ID, fe.Value)
}

// Binding running jobs allocates nothing per job (DESIGN.md §5:
// allocation-free per-job paths): an error's field name is formatted only
// when there is an error.
func TestBindingRunningJobsAllocatesNothingPerJob(t *testing.T) {
	allocs := func(nodes int) float64 {
		w := newWorld(t)
		w.addNodes(nodes, "32")
		w.addQueue("A", 1)
		for n := range nodes {
			for range 32 {
				w.run("A", "1", fmt.Sprintf("node-%d", n), nonPreemptible)
			}
		}
		s, err := scheduler.New(w.cfg)
		require.NoError(t, err)
		snap := w.snapshot()
		return testing.AllocsPerRun(3, func() { _, _ = s.Schedule(context.Background(), snap, t0) })
	}
	a, b := allocs(20), allocs(40)
	perJob := (b - a) / (20 * 32)
	assert.Less(t, perJob, 0.5, "allocations per running job: %.2f", perJob)
}

// Config errors come in a deterministic order: problems in a map (here
// resource weights) are reported in a fixed order, not map iteration
// order, so the joined error's text is the same from call to call.
func TestConfigErrorsAreReportedInADeterministicOrder(t *testing.T) {
	w := newWorld(t)
	seen := map[string]bool{}
	for range 20 {
		cfg := w.cfg
		cfg.ResourceWeights = map[string]float64{"a": -1, "b": -1, "c": math.NaN(), "d": -1}
		_, err := scheduler.New(cfg)
		require.Error(t, err)
		seen[err.Error()] = true
	}
	assert.Len(t, seen, 1)
}
