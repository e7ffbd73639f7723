package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// submitJob queues one job of queue q with the given requests and class.
func (w *treeWorld) submitJob(q, class string, req map[string]string) *flotilla.Job {
	w.seq++
	j := &flotilla.Job{ID: fmt.Sprintf("%s-%03d", q, w.seq), Queue: q, SubmitTime: w.now,
		PriorityClass: class, Requests: w.schema.MustParse(req)}
	require.NoError(w.t, w.snap.Queued.(*queue.Store).Add(j))
	return j
}

// Rule 5 bounds what a unit adds: a node already above its limit (the
// limit lowered while its jobs run) or a lending hold already eaten into
// (the lending limit set while others' jobs run) refuses units that need
// the resource, never one that requests none of it.
func TestTreeLimitAndHoldOnlyCheckRequestedResources(t *testing.T) {
	gpuJob := map[string]string{"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
	cpuJob := map[string]string{"cpu": "1", "memory": "1Gi"}
	t.Run("limit", func(t *testing.T) {
		w := newTreeWorld(t, 1) // 8 GPUs
		q := w.queue("q", "", 0, nil, nil)
		for range 6 {
			w.submitJob("q", flotilla.ArmadaDefault, gpuJob) // not preemptible
		}
		require.Len(t, w.round().Scheduled, 6)
		q.Limit = w.gpus(4)
		w.submitJob("q", flotilla.ArmadaDefault, gpuJob)
		w.submitJob("q", flotilla.ArmadaDefault, cpuJob)
		res := w.round()
		require.Len(t, res.Scheduled, 1, "the cpu-only job, not the GPU job: %v", reasonsOf(res))
		require.Empty(t, res.Scheduled[0].Job.Requests[2])
		require.Equal(t, "limit: q", reasonsOf(res)["q"])
	})
	t.Run("lending hold", func(t *testing.T) {
		w := newTreeWorld(t, 2) // 16 GPUs
		lender := w.queue("lender", "", 0, nil, nil)
		w.queue("borrower", "", 0, nil, nil)
		for range 16 {
			w.submitJob("borrower", flotilla.ArmadaDefault, gpuJob)
		}
		require.Len(t, w.round().Scheduled, 16)
		lender.Guaranteed, lender.LendingLimit = w.gpus(6), w.gpus(2) // keeps 4 back
		w.submitJob("borrower", flotilla.ArmadaDefault, gpuJob)
		w.submitJob("borrower", flotilla.ArmadaDefault, cpuJob)
		res := w.round()
		require.Len(t, res.Scheduled, 1, "the cpu-only job, not the GPU job: %v", reasonsOf(res))
		require.Empty(t, res.Scheduled[0].Job.Requests[2])
		require.Equal(t, "lending limit: lender", reasonsOf(res)["borrower"])
	})
}

// Rule 8 reads each guaranteed queue's first stored job before the fill: a
// job the store should not have handed out (the fill reports it invalid
// and never places it) does not make its queue starved, so it cannot
// lower protectedFraction and cost others their jobs. big holds the whole
// cluster, above its adjusted share (3/4) but within twice it: only a
// starved g makes it evictable, and then other takes a place.
func TestTreeInvalidHeadDoesNotStarve(t *testing.T) {
	bundle := map[string]string{"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}
	for _, tc := range []struct {
		name      string
		bad       func(e *queue.Entry)
		preempted bool
	}{
		{"valid head", func(*queue.Entry) {}, true},
		{"unknown class", func(e *queue.Entry) { e.Job.PriorityClass = "gold" }, false},
		{"wrong class priority", func(e *queue.Entry) { e.ClassPriority = 99999 }, false},
		{"negative request", func(e *queue.Entry) { e.Job.Requests[2] = -1 }, false},
		{"wrong queue", func(e *queue.Entry) { e.Job.Queue = "big" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTreeWorld(t, 1) // 8 bundles
			w.cfg.ProtectedFractionOfFairShare = 2
			w.queue("big", "", 0, nil, nil)
			w.queue("g", "", 0, w.bundles(2), nil)
			w.queue("other", "", 0, nil, nil)
			l := newListQueued(w.cfg)
			for i := range 8 {
				j := &flotilla.Job{ID: fmt.Sprintf("big-%d", i), Queue: "big", PriorityClass: flotilla.ArmadaPreemptible,
					Requests: w.schema.MustParse(bundle), SubmitTime: t0}
				w.snap.Running = append(w.snap.Running, scheduler.Running{Job: j, Node: "node-0", Start: t0})
			}
			l.addJob(&flotilla.Job{ID: "other-0", Queue: "other", PriorityClass: flotilla.ArmadaPreemptible,
				Requests: w.schema.MustParse(bundle), SubmitTime: t0})
			tc.bad(l.addJob(&flotilla.Job{ID: "g-0", Queue: "g", PriorityClass: flotilla.ArmadaPreemptible,
				Requests: w.schema.MustParse(bundle), SubmitTime: t0}))
			w.snap.Queued = l
			s, err := scheduler.New(w.cfg)
			require.NoError(t, err)
			res, err := s.Schedule(context.Background(), w.snap, t0)
			require.NoError(t, err)
			require.Equal(t, tc.preempted, len(res.Preempted) > 0, "preempted %v", countPreempted(res))
			if !tc.preempted {
				require.Equal(t, scheduler.ReasonInvalid, groupsOf(res, scheduler.ReasonInvalid)[0].Reason.Code)
			}
		})
	}
}

// checkedBooksRound is one round of w through ScheduleChecked; it applies
// the result and requeues the preempted jobs.
func (w *randomTreeWorld) checkedBooksRound() (*scheduler.Result, string) {
	s, err := scheduler.New(w.cfg)
	require.NoError(w.t, err)
	res, msg, err := scheduler.ScheduleChecked(s, context.Background(), w.snap, w.now)
	require.NoError(w.t, err)
	w.snap.Running = applyResult(w.t, w.snap, res)
	w.snap.Usage = res.Usage
	for n, held := range w.gpusHeld(w.snap.Running) {
		if l := w.limit[n]; l > 0 && held > int64(l) && msg == "" {
			msg = fmt.Sprintf("%s holds %d GPUs over its limit %d", n, held, l)
		}
	}
	store := w.snap.Queued.(*queue.Store)
	for _, p := range res.Preempted {
		j := *p.Job
		require.NoError(w.t, store.Add(&j))
	}
	return res, msg
}

// The tournament's books (each node's allocation and share, the lending
// holds, the cluster's allocation) stay in step with the queues' through
// every path that changes an allocation: lone jobs and gangs, evicted
// units going back in the fill and late, urgency victims (running jobs,
// and jobs placed earlier in the cycle, offered again), displacement and
// gangs preempted whole; and no limit is ever exceeded. Random trees with
// two priority classes (non-preemptible jobs preempt by urgency), gangs,
// limits, lending limits and usage memory. FLOTILLA_SOAK=N runs N worlds;
// the figures logged say how often each path was taken.
func TestTreeBooksStayInStepOnEveryPath(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FLOTILLA_SOAK"))
	switch {
	case n > 0:
	case testing.Short():
		n = 25
	default:
		n = 100
	}
	stats := map[string]int{}
	defer func() { t.Log(stats) }()
	for seed := uint64(1); seed <= uint64(n); seed++ {
		w := newRandomTreeWorld(t, seed, false)
		if seed%3 == 0 {
			w.cfg.UsageHalfLife = time.Hour
		}
		if seed%4 == 0 {
			w.cfg.EnablePreferLargeJobOrdering = true
		}
		for round := range 6 {
			if round < 4 {
				w.submitMixed(4 + w.rng.IntN(8*len(w.snap.Nodes)))
			}
			w.now = w.now.Add(10 * time.Minute)
			res, msg := w.checkedBooksRound()
			if msg != "" {
				t.Fatalf("seed %d round %d: %s", seed, round, msg)
			}
			for _, p := range res.Preempted {
				stats[fmt.Sprint("preempted ", p.Reason, p.For != nil)]++
			}
			for _, u := range res.Unscheduled {
				stats[u.Reason.Code.String()] += u.Count
			}
			stats["scheduled"] += len(res.Scheduled)
		}
	}
}

// submitMixed is submitRandom with a quarter of the units urgent (the
// default class: not preemptible, it preempts preemptible jobs).
func (w *randomTreeWorld) submitMixed(n int) {
	store := w.snap.Queued.(*queue.Store)
	for range n {
		q := w.queues[w.rng.IntN(len(w.queues))]
		size, members := 1+w.rng.IntN(2), 1
		if w.rng.IntN(6) == 0 {
			members = 2 + w.rng.IntN(2)
		}
		class := flotilla.ArmadaPreemptible
		if w.rng.IntN(4) == 0 {
			class = flotilla.ArmadaDefault
		}
		w.seq++
		for m := range members {
			j := &flotilla.Job{ID: fmt.Sprintf("%s-%04d-%d", q, w.seq, m), Queue: q, SubmitTime: w.now, PriorityClass: class,
				Requests: w.schema.MustParse(map[string]string{"cpu": fmt.Sprint(8 * size),
					"memory": fmt.Sprintf("%dGi", 64*size), "nvidia.com/gpu": fmt.Sprint(size)})}
			if members > 1 {
				j.Gang = flotilla.Gang{ID: fmt.Sprintf("gang-%d", w.seq), Cardinality: members}
			}
			require.NoError(w.t, store.Add(j))
		}
	}
}

// The snapshot's problems are reported at once: the tree's (a group's
// unknown parent) and its usage's (a value outside [0, 1]) with a bad
// node's, and with each other.
func TestTreeProblemsReportedWithTheSnapshotsOthers(t *testing.T) {
	w := newTreeWorld(t, 1)
	w.cfg.UsageHalfLife = time.Hour
	w.group("g", "nowhere", nil, nil)
	w.queue("q", "g", 0, nil, nil)
	w.snap.Nodes = append(w.snap.Nodes, nil)
	w.snap.Usage.Usage = map[string]float64{"q": 2}
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	_, err = s.Schedule(context.Background(), w.snap, t0)
	require.ErrorContains(t, err, "nodes[1]")
	require.ErrorContains(t, err, "groups[0].parent")
	require.ErrorContains(t, err, "usage.usage.q")
}

// Usage memory across a clock that steps back: a cycle whose time is
// before the usage's leaves it undecayed and keeps its time, so the
// interval it skipped is not decayed twice by the next cycle.
func TestTreeUsageTimeNeverMovesBack(t *testing.T) {
	w := newTreeWorld(t, 1)
	w.cfg.UsageHalfLife = time.Hour
	w.queue("q", "", 0, nil, nil)
	w.queue("idle", "", 0, nil, nil)
	w.submit("q", 1)
	w.snap.Usage = scheduler.UsageState{Usage: map[string]float64{"idle": 1}, Time: t0.Add(2 * time.Hour)}
	w.now = t0.Add(time.Hour) // behind the usage's time
	res := w.round()
	require.Equal(t, 1.0, res.Usage.Usage["idle"])
	require.Equal(t, t0.Add(2*time.Hour), res.Usage.Time)
	w.now = t0.Add(2 * time.Hour) // the usage's time: nothing to decay
	res = w.round()
	require.Equal(t, 1.0, res.Usage.Usage["idle"])
	w.now = t0.Add(3 * time.Hour) // one half-life on, toward its share 0
	res = w.round()
	require.Equal(t, 0.5, res.Usage.Usage["idle"])
	require.Equal(t, t0.Add(3*time.Hour), res.Usage.Time)
}

// The lottery strategy takes a flat list of queues: a tree is refused,
// naming the field that makes it one.
func TestTreeRefusedWithTheLottery(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mod   func(w *treeWorld)
		field string
	}{
		{"group", func(w *treeWorld) { w.group("g", "", nil, nil) }, "groups[0].name"},
		{"parent", func(w *treeWorld) { w.group("g", "", nil, nil); w.snap.Queues[1].Parent = "g" }, "groups[0].name"},
		{"guaranteed", func(w *treeWorld) { w.snap.Queues[1].Guaranteed = w.gpus(1) }, "queues[1].guaranteed"},
		{"limit", func(w *treeWorld) { w.snap.Queues[0].Limit = w.gpus(1) }, "queues[0].limit"},
		{"lending limit", func(w *treeWorld) { w.snap.Queues[1].LendingLimit = w.gpus(0) }, "queues[1].lendingLimit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTreeWorld(t, 1)
			w.cfg.Strategy, w.cfg.PriorityHalftime = scheduler.Lottery, time.Hour
			w.queue("a", "", 0, nil, nil)
			w.queue("b", "", 0, nil, nil)
			tc.mod(w)
			s, err := scheduler.New(w.cfg)
			require.NoError(t, err)
			res, err := s.Schedule(context.Background(), w.snap, t0)
			require.Nil(t, res)
			require.ErrorIs(t, err, flotilla.ErrInconsistent)
			var fe *flotilla.FieldError
			require.True(t, errors.As(err, &fe))
			require.Equal(t, tc.field, fe.Field)
		})
	}
}

// A queue held back by a limit (its own or a group's) or a lending hold is
// finished as a queue whose jobs found no room is: once every job it has
// left has a scheduling key the tree refused this cycle, the rest is
// counted from the store's key counts, not read (a limited queue with a
// large backlog was read whole every cycle). The groups are the same with
// ReportEveryUnscheduled, which reads every job.
func TestTreeLimitedQueueIsFinishedWithoutReading(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		setup        func(w *treeWorld)
	}{
		{"queue limit", "limit: a", func(w *treeWorld) { w.queue("a", "", 0, nil, w.gpus(4)) }},
		{"group limit", "limit: g", func(w *treeWorld) {
			w.group("g", "", nil, w.gpus(4))
			w.queue("a", "g", 0, nil, nil)
		}},
		{"lending hold", "lending limit: lender", func(w *treeWorld) {
			lender := w.queue("lender", "", 0, w.gpus(6), nil)
			lender.LendingLimit = w.gpus(2) // keeps 4 of the 8 back
			w.queue("a", "", 0, nil, nil)
		}},
	} {
		for _, every := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/every=%v", tc.name, every), func(t *testing.T) {
				w := newTreeWorld(t, 1) // 8 bundles
				w.cfg.ReportEveryUnscheduled = every
				tc.setup(w)
				w.submit("a", 5000)
				cs := &countingStore{Store: w.snap.Queued.(*queue.Store)}
				w.snap.Queued = cs
				s, err := scheduler.New(w.cfg)
				require.NoError(t, err)
				res, err := s.Schedule(context.Background(), w.snap, t0)
				require.NoError(t, err)
				require.Len(t, res.Scheduled, 4)
				require.Len(t, res.Unscheduled, 1)
				require.Equal(t, 5000-4, res.Unscheduled[0].Count)
				require.Equal(t, tc.reason, res.Unscheduled[0].Reason.String())
				require.Len(t, res.Unscheduled[0].Examples, scheduler.UnscheduledExamples)
				if every {
					require.Equal(t, 5000, cs.read)
				} else {
					require.Less(t, cs.read, 400, "the backlog is not read")
				}
			})
		}
	}
}

// A refusal by the tree's limits or holds, remembered by scheduling key
// for the rest of the cycle (until an allocation shrinks) so that a queue
// refused whole is finished without reading on, refuses exactly what
// checking every unit refuses: over random trees with urgent jobs, gangs,
// limits and lending limits, every round decides the same placements and
// preemptions with and without the memory, with the same reasons when
// every job is reported, and the same unscheduled counts per queue
// otherwise (a remainder counted unread gets the reason at the time it is
// counted: the node whose limit or hold refuses may change as the fill
// goes on). FLOTILLA_SOAK=N runs N worlds.
func TestTreeRememberedRefusalsDecideAsCheckingEveryUnit(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FLOTILLA_SOAK"))
	switch {
	case n > 0:
	case testing.Short():
		n = 15
	default:
		n = 60
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		w := newRandomTreeWorld(t, seed, false)
		w.cfg.ReportEveryUnscheduled = seed%2 == 0 // odd: queues refused whole are finished early
		for round := range 5 {
			if round < 3 {
				w.submitMixed(4 + w.rng.IntN(16*len(w.snap.Nodes)))
			}
			w.now = w.now.Add(10 * time.Minute)
			plain, err := scheduler.New(w.cfg)
			require.NoError(t, err)
			scheduler.NoTreeMemo(plain)
			want, err := plain.Schedule(context.Background(), w.snap, w.now)
			require.NoError(t, err)
			res, _ := w.checkedBooksRound()
			key := resultKey // every job read and judged: the same reasons
			if !w.cfg.ReportEveryUnscheduled {
				key = decisionKey
			}
			if a, b := key(want), key(res); a != b {
				t.Fatalf("seed %d round %d:\nchecking every unit:\n%s\nremembering:\n%s", seed, round, a, b)
			}
		}
	}
}

// decisionKey lists a result's placements and preemptions, and how many
// jobs of each queue were not scheduled.
func decisionKey(res *scheduler.Result) string {
	var b strings.Builder
	for _, a := range res.Scheduled {
		fmt.Fprintf(&b, "S %s %s\n", a.Job.ID, a.Node)
	}
	for _, p := range res.Preempted {
		fmt.Fprintf(&b, "P %s %s %v\n", p.Job.ID, p.Node, p.Reason)
	}
	counts := map[string]int{}
	for _, g := range res.Unscheduled {
		counts[g.Queue] += g.Count
	}
	for _, q := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "U %s %d\n", q, counts[q])
	}
	return b.String()
}

// A running gang's members are in one queue, as a queued gang's are: a
// snapshot whose gang spans queues is refused, naming the member. (Such a
// gang was ranked once per queue for displacement, and a displacing job
// counted its capacity twice: a node ended over its total.)
func TestRunningGangAcrossQueuesIsRefused(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu")
	cfg := scheduler.DefaultConfig(schema)
	snap := &scheduler.Snapshot{Nodes: []*flotilla.Node{{Name: "n", Total: schema.MustParse(map[string]string{"cpu": "4"})}},
		Queues: []*flotilla.Queue{{Name: "a"}, {Name: "b"}}}
	for i, q := range []string{"a", "b"} {
		snap.Running = append(snap.Running, scheduler.Running{Node: "n", Start: t0, Job: &flotilla.Job{
			ID: fmt.Sprint("j", i), Queue: q, PriorityClass: flotilla.ArmadaPreemptible, SubmitTime: t0,
			Requests: schema.MustParse(map[string]string{"cpu": "1"}), Gang: flotilla.Gang{ID: "g", Cardinality: 2}}})
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	res, err := s.Schedule(context.Background(), snap, t0)
	require.Nil(t, res)
	require.ErrorIs(t, err, flotilla.ErrInconsistent)
	var fe *flotilla.FieldError
	require.True(t, errors.As(err, &fe))
	require.Equal(t, "running[1].job.gang.id", fe.Field)
}
