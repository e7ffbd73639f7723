package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

func preemptible(j *flotilla.Job)    { j.PriorityClass = flotilla.ArmadaPreemptible }
func nonPreemptible(j *flotilla.Job) { j.PriorityClass = flotilla.ArmadaDefault }
func startedAt(s time.Duration) func(*scheduler.Running) {
	return func(r *scheduler.Running) { r.Start = t0.Add(s) }
}

// run adds a running job of queue q on node.
func (w *world) run(q, cpu, node string, mod func(*flotilla.Job), rmod ...func(*scheduler.Running)) *flotilla.Job {
	j := w.job(q, cpu, mod)
	r := scheduler.Running{Job: j, Node: node, Start: t0}
	for _, m := range rmod {
		m(&r)
	}
	w.running = append(w.running, r)
	return j
}

func preemptedIDs(res *scheduler.Result) map[string]scheduler.PreemptionReason {
	m := map[string]scheduler.PreemptionReason{}
	for _, p := range res.Preempted {
		m[p.Job.ID] = p.Reason
	}
	return m
}

// The seed's example: 10 cores of armada-default and 20 of
// armada-preemptible on a 32-core node leave 22 allocatable at 30000 and 2
// at 20000.
func TestUrgencySeedAllocatable(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.run("A", "10", "node-0", nonPreemptible)
	victim := w.run("A", "20", "node-0", preemptible)

	w.submit("A", 1, "3", preemptible)
	res := w.schedule()
	assert.Empty(t, res.Scheduled, "3 cores at 20000: only 2 allocatable")
	assert.Empty(t, res.Preempted, "equal priority never preempts")

	w.resetStore()
	w.submit("A", 1, "22", nonPreemptible)
	res = w.schedule()
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, map[string]scheduler.PreemptionReason{victim.ID: scheduler.PreemptedForUrgency}, preemptedIDs(res))

	w.resetStore()
	w.submit("A", 1, "23", nonPreemptible)
	res = w.schedule()
	assert.Empty(t, res.Scheduled, "23 > 22 allocatable at 30000")
	assert.Empty(t, res.Preempted)
}

func TestNeverPreemptWhenAFreeFitExists(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "8")
	w.addQueue("A", 1)
	for range 8 {
		w.run("A", "1", "node-0", preemptible)
	}
	w.submit("A", 1, "4", nonPreemptible)
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, "node-1", res.Scheduled[0].Node)
	assert.Empty(t, res.Preempted)
}

func TestUrgencyTakesTheFewestVictims(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "16")
	w.addQueue("A", 1)
	w.run("A", "6", "node-0", nonPreemptible)
	big := w.run("A", "8", "node-0", preemptible, startedAt(0))
	w.run("A", "2", "node-0", preemptible, startedAt(time.Second))
	w.submit("A", 1, "8", nonPreemptible)
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	// The later-started 2-core job is tried first, but is not enough on
	// its own; once the 8-core job goes, it can stay.
	assert.Equal(t, map[string]scheduler.PreemptionReason{big.ID: scheduler.PreemptedForUrgency}, preemptedIDs(res))
}

func TestUrgencyLowestPriorityFirst(t *testing.T) {
	w := newWorld(t)
	w.cfg.PriorityClasses = append(w.cfg.PriorityClasses, flotilla.PriorityClass{Name: "scavenger", Priority: 10000, Preemptible: true})
	w.resetStore()
	w.addNodes(1, "8")
	w.addQueue("A", 1)
	w.run("A", "4", "node-0", preemptible, startedAt(time.Second))
	low := w.run("A", "4", "node-0", func(j *flotilla.Job) { j.PriorityClass = "scavenger" })
	w.submit("A", 1, "4", nonPreemptible)
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, map[string]scheduler.PreemptionReason{low.ID: scheduler.PreemptedForUrgency}, preemptedIDs(res))
}

func TestUrgencyPreemptsAGangWholeAndNothingElse(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "8")
	w.addQueue("A", 1)
	gang := func(j *flotilla.Job) {
		preemptible(j)
		j.Gang = flotilla.Gang{ID: "g", Cardinality: 2}
	}
	bystander := w.run("A", "4", "node-0", preemptible, startedAt(0))
	g0 := w.run("A", "4", "node-0", gang, startedAt(time.Second))
	g1 := w.run("A", "4", "node-1", gang, startedAt(time.Second))
	w.run("A", "4", "node-1", preemptible, startedAt(0))
	w.submit("A", 1, "4", nonPreemptible)
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	got := preemptedIDs(res)
	assert.Equal(t, map[string]scheduler.PreemptionReason{g0.ID: scheduler.PreemptedForUrgency, g1.ID: scheduler.PreemptedForUrgency}, got)
	assert.NotContains(t, got, bystander.ID)
}

// Urgency takes only jobs of strictly lower priority, and a gang goes
// whole: so a gang with a member at or above the urgent job's priority is
// no victim, even through its lower members. Here the gang's
// armada-preemptible member is below the mid job and its mid member is not:
// taking the gang would preempt a job of equal priority. The gang's
// members hold their capacity at its highest member's level, so the mid
// job finds no room there.
func TestUrgencyNeverTakesAGangWithAMemberAtOrAboveThePreemptor(t *testing.T) {
	w := newWorld(t)
	withMidPreemptible(w)
	w.cfg.EvictionProbability = 0
	w.addNodes(1, "10")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.run("A", "4", "node-0", func(j *flotilla.Job) { preemptible(j); inGang("g", 2, "")(j) })
	w.run("A", "4", "node-0", func(j *flotilla.Job) { midPreemptible(j); inGang("g", 2, "")(j) })
	w.submit("B", 1, "6", midPreemptible)
	res := w.schedule()
	assert.Empty(t, res.Preempted)
	assert.Empty(t, res.Scheduled)
}

func TestFairShareSeedExample(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	// As in the seed: 32 of A's jobs went onto node 1 first, then 8 onto
	// node 2, so node 2's are the evicted jobs A would put back last, and
	// the ones B's jobs displace.
	for i := range 40 {
		node, start := "node-0", time.Duration(0)
		if i >= 32 {
			node, start = "node-1", time.Second
		}
		w.run("A", "1", node, preemptible, startedAt(start))
	}
	w.submit("B", 50, "1", preemptible)
	res := w.schedule()
	assert.Equal(t, map[string]int{"B": 32}, countByQueue(res.Scheduled))
	require.Len(t, res.Preempted, 8)
	for _, p := range res.Preempted {
		assert.Equal(t, scheduler.PreemptedForFairShare, p.Reason)
		assert.Equal(t, "node-1", p.Node, "A keeps the node it filled")
		assert.InDelta(t, 40.0/64, p.Share, 1e-12)
		assert.InDelta(t, 0.5, p.FairShare, 1e-12)
	}
	for _, a := range res.Scheduled {
		assert.Equal(t, "node-1", a.Node, "B fills the node A did not fill")
	}
	assert.Equal(t, 32, res.Queues[0].Running)
	assert.Equal(t, 32, res.Queues[1].Running)
}

func TestFairShareRespectsProbabilityAndProtection(t *testing.T) {
	build := func() *world {
		w := newWorld(t)
		w.addNodes(1, "32")
		w.addQueue("A", 1)
		w.addQueue("B", 1)
		for range 32 {
			w.run("A", "1", "node-0", preemptible)
		}
		w.submit("B", 32, "1", preemptible)
		return w
	}
	w := build()
	w.cfg.EvictionProbability = 0
	assert.Empty(t, w.schedule().Preempted, "probability 0 evicts nothing")

	w = build()
	w.cfg.ProtectedFractionOfFairShare = 2
	assert.Empty(t, w.schedule().Preempted, "A holds 1.0, under 2 × its 0.5 fair share")

	w = build()
	for i := range w.running {
		w.running[i].Job.PriorityClass = flotilla.ArmadaDefault
	}
	res := w.schedule()
	assert.Empty(t, res.Preempted, "non-preemptible jobs are never evicted")
	assert.Empty(t, res.Scheduled)
}

func TestEvictedJobsIgnoreLimits(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	for range 32 {
		w.run("A", "1", "node-0", preemptible)
	}
	w.submit("B", 32, "1", preemptible)
	w.cfg.MaxQueueLookback = 1
	w.cfg.MaximumSchedulingRate, w.cfg.MaximumSchedulingBurst = 1, 4
	res := w.schedule()
	// A's 32 evicted jobs do not use B's lookback or the rate bucket: B gets
	// one job (its lookback), and A keeps the other 31.
	assert.Equal(t, map[string]int{"B": 1}, countByQueue(res.Scheduled))
	assert.Len(t, res.Preempted, 1)
	assert.Equal(t, 31, res.Queues[0].Running)
}

// A running job stays where it runs when its node's labels or NoSchedule
// taints change (Kubernetes keeps running pods in place): evicted to fair
// share with nothing competing for the room, it goes back to its own node
// though its selector and tolerations no longer admit it there; a NoExecute
// taint it does not tolerate is the one thing that keeps it off.
func TestEvictedJobGoesBackPastChangedLabelsAndNoScheduleTaints(t *testing.T) {
	for _, tc := range []struct {
		effect flotilla.TaintEffect
		back   bool
	}{{flotilla.TaintNoSchedule, true}, {flotilla.TaintNoExecute, false}} {
		w := newWorld(t)
		w.addNodes(1, "32")
		w.nodes[0].Taints = []flotilla.Taint{{Key: "maintenance", Value: "soon", Effect: tc.effect}}
		w.addQueue("A", 1)
		w.addQueue("B", 1)
		w.cfg.ProtectedFractionOfFairShare = 0 // every queue holding anything is evicted
		for range 4 {
			w.run("A", "1", "node-0", func(j *flotilla.Job) {
				preemptible(j)
				j.NodeSelector = map[string]string{"pool": "retired"}
			})
		}
		w.submit("B", 1, "64", preemptible) // never fits: nothing competes with A
		res := w.schedule()
		if tc.back {
			assert.Empty(t, res.Preempted, "%s: the evicted jobs go back to their node", tc.effect)
		} else {
			assert.Len(t, res.Preempted, 4, "%s: an untolerated NoExecute taint keeps them off", tc.effect)
		}
		assert.Empty(t, res.Scheduled, tc.effect)
	}
}
