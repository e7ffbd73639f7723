package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// topClass is a third class above armada-default, not preemptible.
const topClass = "top"

// newUrgencyWorld is a treeWorld of one node (8 bundles) with the class top
// above the Armada ones, and eviction to fair share switched off
// (a protected fraction no share reaches), so that only urgency moves
// jobs.
func newUrgencyWorld(t testing.TB) *treeWorld {
	w := newTreeWorld(t, 1)
	w.cfg.ProtectedFractionOfFairShare = 100
	w.cfg.PriorityClasses = append(flotilla.DefaultPriorityClasses(), flotilla.PriorityClass{Name: topClass, Priority: 40000})
	store, err := queue.New(w.schema, w.cfg.PriorityClasses, w.cfg.DefaultPriorityClass)
	require.NoError(t, err)
	w.snap.Queued = store
	return w
}

// bundleJob is a job of queue q and class requesting n bundles.
func (w *treeWorld) bundleJob(q, class string, n int) *flotilla.Job {
	w.seq++
	return &flotilla.Job{ID: fmt.Sprintf("%s-%03d", q, w.seq), Queue: q, SubmitTime: w.now, PriorityClass: class,
		Requests: w.schema.MustParse(map[string]string{"cpu": fmt.Sprint(8 * n), "memory": fmt.Sprintf("%dGi", 64*n), "nvidia.com/gpu": fmt.Sprint(n)})}
}

// run starts n one-bundle jobs of queue q and class on node-0.
func (w *treeWorld) run(q, class string, n int) {
	for range n {
		w.snap.Running = append(w.snap.Running, scheduler.Running{Job: w.bundleJob(q, class, 1), Node: "node-0", Start: t0})
	}
}

// heldGPUs is what every queue and group holds in running, in GPUs, and
// the whole cluster under "".
func heldGPUs(snap *scheduler.Snapshot, running []scheduler.Running) map[string]int64 {
	parent := map[string]string{}
	for _, g := range snap.Groups {
		parent[g.Name] = g.Parent
	}
	for _, q := range snap.Queues {
		parent[q.Name] = q.Parent
	}
	held := map[string]int64{}
	for _, r := range running {
		g := r.Job.Requests[2]
		held[""] += g
		for n := r.Job.Queue; n != ""; n = parent[n] {
			held[n] += g
		}
	}
	return held
}

// A job of a higher priority class whose queue (or a group above it) is
// at its limit preempts lower-priority preemptible jobs under the limiting
// node, the fewest that make room, as urgency preemption does for a node's
// room: Kueue's withinClusterQueue LowerPriority, Armada's urgency, which
// evicts the lower-priority jobs before the queue's limit is judged. Only
// the limited subtree's jobs free room under a limit; a lending hold is
// the cluster's room, so there any lower-priority preemptible job outside
// the lender frees it (urgency is across queues). Non-preemptible jobs
// and jobs of the same priority are never taken, and a job whose room
// would need more than those jobs hold stays refused and preempts nothing.
func TestTreeUrgencyPreemptsWithinALimit(t *testing.T) {
	type running struct {
		queue, class string
		n            int
	}
	type submit struct {
		queue, class string
		bundles      int // per job
		gang         int // members of one gang; 0: a lone job
	}
	for _, tc := range []struct {
		name        string
		tree        func(w *treeWorld)
		running     []running
		submit      []submit
		scheduled   map[string]int
		preempted   map[string]int // nil: counted in preemptedN only
		preemptedN  int
		wantRefusal string // nlp's jobs' reason when refused
		max         map[string]int64
	}{
		{
			name:      "limit on the queue",
			tree:      func(w *treeWorld) { w.queue("nlp", "", 0, nil, w.gpus(4)) },
			running:   []running{{"nlp", flotilla.ArmadaPreemptible, 4}},
			submit:    []submit{{"nlp", flotilla.ArmadaDefault, 1, 0}},
			scheduled: map[string]int{"nlp": 1}, preempted: map[string]int{"nlp": 1},
			max: map[string]int64{"nlp": 4},
		},
		{
			name: "limit on the group, the victim in a sibling queue",
			tree: func(w *treeWorld) {
				w.group("research", "", nil, w.gpus(4))
				w.queue("nlp", "research", 0, nil, nil)
				w.queue("vision", "research", 0, nil, nil)
			},
			running:   []running{{"vision", flotilla.ArmadaPreemptible, 4}},
			submit:    []submit{{"nlp", flotilla.ArmadaDefault, 1, 0}},
			scheduled: map[string]int{"nlp": 1}, preempted: map[string]int{"vision": 1},
			max: map[string]int64{"research": 4},
		},
		{
			name:      "the victim's room on a full node is the job's room",
			tree:      func(w *treeWorld) { w.queue("nlp", "", 0, nil, w.gpus(8)) },
			running:   []running{{"nlp", flotilla.ArmadaPreemptible, 8}},
			submit:    []submit{{"nlp", flotilla.ArmadaDefault, 1, 0}},
			scheduled: map[string]int{"nlp": 1}, preempted: map[string]int{"nlp": 1},
			max: map[string]int64{"nlp": 8},
		},
		{
			name:      "a gang takes room for all its members",
			tree:      func(w *treeWorld) { w.queue("nlp", "", 0, nil, w.gpus(4)) },
			running:   []running{{"nlp", flotilla.ArmadaPreemptible, 4}},
			submit:    []submit{{"nlp", flotilla.ArmadaDefault, 1, 2}},
			scheduled: map[string]int{"nlp": 2}, preempted: map[string]int{"nlp": 2},
			max: map[string]int64{"nlp": 4},
		},
		{
			name: "limits on the queue and on its group",
			tree: func(w *treeWorld) {
				w.group("research", "", nil, w.gpus(6))
				w.queue("nlp", "research", 0, nil, w.gpus(4))
				w.queue("vision", "research", 0, nil, nil)
			},
			running:    []running{{"nlp", flotilla.ArmadaPreemptible, 3}, {"vision", flotilla.ArmadaPreemptible, 3}},
			submit:     []submit{{"nlp", flotilla.ArmadaDefault, 1, 0}, {"nlp", flotilla.ArmadaDefault, 1, 0}},
			scheduled:  map[string]int{"nlp": 2},
			preemptedN: 2,
			max:        map[string]int64{"nlp": 4, "research": 6},
		},
		{
			name: "lending hold, the queue's own job",
			tree: func(w *treeWorld) {
				l := w.queue("lender", "", 0, w.gpus(4), nil)
				l.LendingLimit = w.gpus(0)
				w.queue("nlp", "", 0, nil, nil)
			},
			running:   []running{{"nlp", flotilla.ArmadaPreemptible, 4}},
			submit:    []submit{{"nlp", flotilla.ArmadaDefault, 1, 0}},
			scheduled: map[string]int{"nlp": 1}, preempted: map[string]int{"nlp": 1},
			max: map[string]int64{"": 4},
		},
		{
			name: "lending hold, another queue's job",
			tree: func(w *treeWorld) {
				l := w.queue("lender", "", 0, w.gpus(4), nil)
				l.LendingLimit = w.gpus(0)
				w.queue("nlp", "", 0, nil, nil)
				w.queue("other", "", 0, nil, nil)
			},
			running:   []running{{"other", flotilla.ArmadaPreemptible, 4}},
			submit:    []submit{{"nlp", flotilla.ArmadaDefault, 1, 0}},
			scheduled: map[string]int{"nlp": 1}, preempted: map[string]int{"other": 1},
			max: map[string]int64{"": 4},
		},
		{
			name: "lending hold, the lender's own jobs free nothing",
			tree: func(w *treeWorld) {
				l := w.queue("lender", "", 0, w.gpus(4), nil)
				l.LendingLimit = w.gpus(0)
				w.queue("nlp", "", 0, nil, nil)
			},
			running:   []running{{"lender", flotilla.ArmadaPreemptible, 2}, {"nlp", flotilla.ArmadaPreemptible, 4}},
			submit:    []submit{{"nlp", flotilla.ArmadaDefault, 1, 0}},
			scheduled: map[string]int{"nlp": 1}, preempted: map[string]int{"nlp": 1},
			max: map[string]int64{"nlp": 4},
		},
		{
			name:        "non-preemptible jobs are never taken",
			tree:        func(w *treeWorld) { w.queue("nlp", "", 0, nil, w.gpus(4)) },
			running:     []running{{"nlp", flotilla.ArmadaDefault, 4}},
			submit:      []submit{{"nlp", topClass, 1, 0}},
			wantRefusal: "limit: nlp",
			max:         map[string]int64{"nlp": 4},
		},
		{
			name:        "jobs of the same priority are never taken",
			tree:        func(w *treeWorld) { w.queue("nlp", "", 0, nil, w.gpus(4)) },
			running:     []running{{"nlp", flotilla.ArmadaPreemptible, 4}},
			submit:      []submit{{"nlp", flotilla.ArmadaPreemptible, 1, 0}},
			wantRefusal: "limit: nlp",
			max:         map[string]int64{"nlp": 4},
		},
		{
			name: "more room than the group's lower-priority jobs hold",
			tree: func(w *treeWorld) {
				w.group("research", "", nil, w.gpus(4))
				w.queue("nlp", "research", 0, nil, nil)
				w.queue("vision", "research", 0, nil, nil)
			},
			running:     []running{{"vision", flotilla.ArmadaPreemptible, 2}, {"vision", flotilla.ArmadaDefault, 2}},
			submit:      []submit{{"nlp", flotilla.ArmadaDefault, 3, 0}},
			wantRefusal: "limit: research",
			max:         map[string]int64{"research": 4},
		},
		{
			name: "lower-priority jobs outside the limited group free nothing",
			tree: func(w *treeWorld) {
				w.group("research", "", nil, w.gpus(4))
				w.queue("nlp", "research", 0, nil, nil)
				w.queue("vision", "research", 0, nil, nil)
				w.queue("other", "", 0, nil, nil)
			},
			running:     []running{{"vision", flotilla.ArmadaDefault, 4}, {"other", flotilla.ArmadaPreemptible, 4}},
			submit:      []submit{{"nlp", topClass, 1, 0}},
			wantRefusal: "limit: research",
			max:         map[string]int64{"research": 4},
		},
		{
			name: "a gang needing more than the lower-priority jobs hold",
			tree: func(w *treeWorld) { w.queue("nlp", "", 0, nil, w.gpus(4)) },
			running: []running{{"nlp", flotilla.ArmadaPreemptible, 1},
				{"nlp", flotilla.ArmadaDefault, 3}},
			submit:      []submit{{"nlp", topClass, 1, 2}},
			wantRefusal: "limit: nlp",
			max:         map[string]int64{"nlp": 4},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newUrgencyWorld(t)
			tc.tree(w)
			for _, r := range tc.running {
				w.run(r.queue, r.class, r.n)
			}
			store := w.snap.Queued.(*queue.Store)
			submitted := map[string]bool{}
			for gi, s := range tc.submit {
				n := max(s.gang, 1)
				for range n {
					j := w.bundleJob(s.queue, s.class, s.bundles)
					if s.gang > 0 {
						j.Gang = flotilla.Gang{ID: fmt.Sprintf("gang-%d", gi), Cardinality: s.gang}
					}
					require.NoError(t, store.Add(j))
					submitted[j.ID] = true
				}
			}
			s, err := scheduler.New(w.cfg)
			require.NoError(t, err)
			res, msg, err := scheduler.ScheduleChecked(s, context.Background(), w.snap, w.now)
			require.NoError(t, err)
			require.Empty(t, msg)
			scheduled := countByQueue(res.Scheduled)
			if tc.scheduled == nil {
				tc.scheduled = map[string]int{}
			}
			require.Equal(t, tc.scheduled, scheduled, "reasons %v", reasonsOf(res))
			if tc.preempted != nil {
				require.Equal(t, tc.preempted, countPreempted(res))
			}
			if tc.preempted == nil && tc.preemptedN == 0 {
				require.Empty(t, res.Preempted)
			}
			if tc.preemptedN > 0 {
				require.Len(t, res.Preempted, tc.preemptedN)
			}
			for _, p := range res.Preempted {
				require.Equal(t, scheduler.PreemptedForUrgency, p.Reason, p.Job.ID)
				require.NotNil(t, p.For, p.Job.ID)
				require.True(t, submitted[p.For.ID], "%s preempted for %s", p.Job.ID, p.For.ID)
			}
			if tc.wantRefusal != "" {
				require.Equal(t, tc.wantRefusal, reasonsOf(res)["nlp"])
			}
			held := heldGPUs(w.snap, applyResult(t, w.snap, res))
			for n, m := range tc.max {
				require.LessOrEqual(t, held[n], m, "%s holds %d GPUs", n, held[n])
			}
		})
	}
}

// limitWorld is a small random world for the urgency-within-limits
// property: one or two nodes of 8 bundles; group g (maybe limited) holds
// queues a and b (maybe limited), queue c hangs from the root (maybe
// limited); jobs of one bundle of the three classes run within every
// limit and node; a few jobs of one or two bundles, mostly of a class
// above the preemptible one, are queued. No lender: a hold would refuse
// what the limits admit, and the oracle judges limits.
func limitWorld(t testing.TB, seed uint64, evict bool) (*treeWorld, map[string]int64) {
	rng := rand.New(rand.NewPCG(seed, 0x11a17))
	w := newUrgencyWorld(t)
	if evict {
		w.cfg.ProtectedFractionOfFairShare = 1
	}
	if rng.IntN(2) == 0 {
		w.snap.Nodes = append(w.snap.Nodes, &flotilla.Node{Name: "node-1", Total: w.snap.Nodes[0].Total.Clone()})
	}
	limits := map[string]int64{}
	lim := func(name string, lo, hi int) flotilla.Resources {
		if rng.IntN(3) == 0 {
			return nil
		}
		n := lo + rng.IntN(hi-lo+1)
		limits[name] = int64(n)
		return w.gpus(n)
	}
	w.group("g", "", nil, lim("g", 2, 8))
	w.queue("a", "g", 0, nil, lim("a", 1, 6))
	w.queue("b", "g", 0, nil, lim("b", 1, 6))
	w.queue("c", "", 0, nil, lim("c", 1, 6))
	parent := map[string]string{"a": "g", "b": "g"}
	classes := []string{flotilla.ArmadaPreemptible, flotilla.ArmadaDefault, topClass}
	queues := []string{"a", "b", "c"}
	held := map[string]int64{}
	free := make([]int64, len(w.snap.Nodes))
	for i := range free {
		free[i] = 8
	}
	for range rng.IntN(20) {
		q, ni := queues[rng.IntN(3)], rng.IntN(len(free))
		ok := free[ni] > 0
		for n := q; n != ""; n = parent[n] {
			if l, limited := limits[n]; limited && held[n]+1 > l {
				ok = false
			}
		}
		if !ok {
			continue
		}
		class := classes[min(rng.IntN(4), 2)] // mostly preemptible and default
		w.snap.Running = append(w.snap.Running, scheduler.Running{Job: w.bundleJob(q, class, 1), Node: w.snap.Nodes[ni].Name, Start: t0})
		free[ni]--
		for n := q; n != ""; n = parent[n] {
			held[n]++
		}
	}
	store := w.snap.Queued.(*queue.Store)
	for range 1 + rng.IntN(4) {
		class := classes[1+rng.IntN(2)]
		if rng.IntN(5) == 0 {
			class = flotilla.ArmadaPreemptible
		}
		require.NoError(t, store.Add(w.bundleJob(queues[rng.IntN(3)], class, 1+rng.IntN(2))))
	}
	return w, limits
}

// Rule 5 with urgency: no placement takes a node of the tree over its
// limit, however many lower-priority jobs it preempts; every urgency
// preemption is for a job of a higher class; and no job is refused for a
// limit while, at the end of the round, the lower-priority preemptible
// jobs below every limiting node on its path would make the room it needs
// there, and some node could take it with the room of its lower-priority
// preemptible jobs (the oracle: placements later in the round only add
// to what the job would need, so what the end of the round would allow,
// the time the job was tried allowed too; so do evicted jobs going back,
// or not). With eviction to fair share on, its preemptions are not
// urgency's and are not judged here.
func TestPropertyTreeUrgencyWithinLimits(t *testing.T) {
	for _, evict := range []bool{false, true} {
		t.Run(fmt.Sprint("evict=", evict), func(t *testing.T) { propertyTreeUrgencyWithinLimits(t, evict) })
	}
}

func propertyTreeUrgencyWithinLimits(t *testing.T, evict bool) {
	p := properties(t)
	// How many worlds preempted, and refused a job for a limit: the
	// generator must exercise both.
	preempting, refusing := 0, 0
	p.Property("limits hold; no job refused for a limit that lower-priority jobs could free", prop.ForAll(func(seed uint64) string {
		w, limits := limitWorld(t, seed, evict)
		parent := map[string]string{"a": "g", "b": "g"}
		prio := map[string]int32{}
		preemptible := map[string]bool{}
		for _, pc := range w.cfg.PriorityClasses {
			prio[pc.Name], preemptible[pc.Name] = pc.Priority, pc.Preemptible
		}
		s, err := scheduler.New(w.cfg)
		require.NoError(t, err)
		res, msg, err := scheduler.ScheduleChecked(s, context.Background(), w.snap, w.now)
		require.NoError(t, err)
		if msg != "" {
			return fmt.Sprintf("seed %d: %s", seed, msg)
		}
		scheduled := map[string]bool{}
		for _, a := range res.Scheduled {
			scheduled[a.Job.ID] = true
		}
		for _, pe := range res.Preempted {
			if evict && pe.Reason == scheduler.PreemptedForFairShare {
				continue
			}
			if pe.Reason != scheduler.PreemptedForUrgency || pe.For == nil || !scheduled[pe.For.ID] ||
				prio[pe.For.PriorityClass] <= prio[pe.Job.PriorityClass] || !preemptible[pe.Job.PriorityClass] {
				return fmt.Sprintf("seed %d: %s (%s) preempted %v for %v", seed, pe.Job.ID, pe.Job.PriorityClass, pe.Reason, pe.For)
			}
		}
		if len(res.Preempted) > 0 {
			preempting++
		}
		if len(groupsOf(res, scheduler.ReasonLimit)) > 0 {
			refusing++
		}
		after := applyResult(t, w.snap, res)
		held := heldGPUs(w.snap, after)
		for n, l := range limits {
			if held[n] > l {
				return fmt.Sprintf("seed %d: %s holds %d GPUs over its limit %d", seed, n, held[n], l)
			}
		}
		free := map[string]int64{}
		for _, n := range w.snap.Nodes {
			free[n.Name] = n.Total[2]
		}
		for _, r := range after {
			free[r.Node] -= r.Job.Requests[2]
		}
		for _, u := range res.UnscheduledJobs {
			if u.Reason.Code != scheduler.ReasonLimit {
				continue
			}
			j, need := u.Job, u.Job.Requests[2]
			lower := func(r scheduler.Running) bool {
				return preemptible[r.Job.PriorityClass] && prio[r.Job.PriorityClass] < prio[j.PriorityClass]
			}
			freeable := map[string]int64{} // per tree node
			room := map[string]int64{}     // per cluster node
			for _, r := range after {
				if !lower(r) {
					continue
				}
				room[r.Node] += r.Job.Requests[2]
				for n := r.Job.Queue; n != ""; n = parent[n] {
					freeable[n] += r.Job.Requests[2]
				}
			}
			within := true
			for n := j.Queue; n != ""; n = parent[n] {
				if l, ok := limits[n]; ok && held[n]+need-l > freeable[n] {
					within = false
				}
			}
			fits := false
			for _, n := range w.snap.Nodes {
				fits = fits || free[n.Name]+room[n.Name] >= need
			}
			if within && fits {
				return fmt.Sprintf("seed %d: %s (%s, %d GPUs) refused for %v though lower-priority jobs could free the room",
					seed, j.ID, j.PriorityClass, need, u.Reason)
			}
		}
		return ""
	}, gen.UInt64()))
	p.TestingRun(t)
	require.Greater(t, preempting, 30, "worlds that preempted")
	require.Greater(t, refusing, 30, "worlds that refused a job for a limit")
	t.Logf("%d worlds preempted, %d refused a job for a limit", preempting, refusing)
}

// The flat model's per-queue caps (a class's maximumResourceFractionPerQueue)
// count only the class's own jobs, as Armada's per-class constraints do:
// a queue at its cap at armada-preemptible is not at it at armada-default,
// so its default jobs go in, urgency taking the full node's room from
// preemptible jobs, up to the default class's own cap. The cap needs no
// room made under it, unlike the tree's limits, which count every class.
func TestFlatClassCapCountsOnlyItsClass(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu")
	cfg := scheduler.DefaultConfig(schema)
	cfg.ReportEveryUnscheduled = true
	for i := range cfg.PriorityClasses {
		cfg.PriorityClasses[i].MaximumResourceFractionPerQueue = map[string]float64{"cpu": 0.5}
	}
	store, err := queue.New(schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	require.NoError(t, err)
	snap := &scheduler.Snapshot{Queued: store, Queues: []*flotilla.Queue{{Name: "a"}, {Name: "b"}},
		Nodes: []*flotilla.Node{{Name: "n", Total: schema.MustParse(map[string]string{"cpu": "4"})}}}
	job := func(id, q, class string) *flotilla.Job {
		return &flotilla.Job{ID: id, Queue: q, PriorityClass: class, SubmitTime: t0, Requests: schema.MustParse(map[string]string{"cpu": "1"})}
	}
	for _, q := range []string{"a", "b"} {
		for i := range 2 {
			snap.Running = append(snap.Running, scheduler.Running{Job: job(fmt.Sprint(q, "-low-", i), q, flotilla.ArmadaPreemptible), Node: "n", Start: t0})
		}
	}
	for i := range 3 {
		require.NoError(t, store.Add(job(fmt.Sprint("a-high-", i), "a", flotilla.ArmadaDefault)))
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	res, err := s.Schedule(context.Background(), snap, t0)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 2}, countByQueue(res.Scheduled))
	require.Len(t, res.Preempted, 2)
	for _, p := range res.Preempted {
		require.Equal(t, scheduler.PreemptedForUrgency, p.Reason)
	}
	require.Len(t, res.UnscheduledJobs, 1)
	require.Equal(t, scheduler.ReasonQueueClassLimit, res.UnscheduledJobs[0].Reason.Code)
}
