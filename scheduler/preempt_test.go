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

// Urgency takes victims as units: taking one member of a gang takes its
// mates on the same node too, so a lone job is not preempted for room the
// gang's mates free anyway. Here the victim order is V1 (latest start), W,
// V2: taken job by job, V1 and W (2+2 cores) would go, the gang sweep then
// also V2, freeing 6 cores for a 4-core job with W preempted for nothing.
// As units (the gang, all its members on this node, taken and given back
// together; one unit per lone job), V1 and V2 alone are enough.
func TestUrgencyTakesNoBystanderOnceAGangMateMadeRoom(t *testing.T) {
	w := newWorld(t)
	w.cfg.EvictionProbability = 0 // urgency only
	w.addNodes(1, "6")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	g := func(j *flotilla.Job) { preemptible(j); inGang("g", 2, "")(j) }
	v1 := w.run("A", "2", "node-0", g, startedAt(-time.Minute))
	bystander := w.run("A", "2", "node-0", preemptible, startedAt(-2*time.Minute))
	v2 := w.run("A", "2", "node-0", g, startedAt(-3*time.Minute))
	w.submit("B", 1, "4", nonPreemptible)
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	got := preemptedIDs(res)
	require.Contains(t, got, v1.ID)
	require.Contains(t, got, v2.ID)
	assert.NotContains(t, got, bystander.ID, "the gang's two members free the 4 cores needed")
}

// An urgency victim's gang goes whole, including a mate still evicted
// (holding its capacity, not yet offered back): that mate does not go back
// later and keep running while the other member is preempted.
func TestUrgencyVictimTakesItsEvictedGangMateToo(t *testing.T) {
	w := newWorld(t)
	w.cfg.ProtectedFractionOfFairShare = 0 // every queue holding anything is evictable
	labelledNode(w, "n0", "4", map[string]string{"slot": "a"})
	labelledNode(w, "n1", "4", nil)
	labelledNode(w, "n2", "4", nil)
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	g := func(j *flotilla.Job) { preemptible(j); inGang("g", 2, "")(j) }
	m1 := w.run("A", "4", "n0", g)
	m2 := w.run("A", "4", "n1", g)
	for range 4 {
		w.run("B", "1", "n2", preemptible)
	}
	// B's next job after its evicted ones outranks A's second gang member
	// and can only go to n0, where A's first member is already back.
	w.submit("B", 1, "4", nonPreemptible, func(j *flotilla.Job) { j.NodeSelector = map[string]string{"slot": "a"} })
	res := w.schedule()
	got := preemptedIDs(res)
	_, p1 := got[m1.ID]
	_, p2 := got[m2.ID]
	assert.Equal(t, p1, p2, "gang g must be preempted whole or not at all; preempted: %v", got)
}

// DESIGN.md §3: "Non-preemptible means never preempted by the scheduler."
// That holds for a non-preemptible member of a mixed-class gang (allowed:
// see TestGangOrdersByItsLowestClass): its gang is neither evicted to fair
// share nor swept in with an urgency victim.
func TestNonPreemptibleGangMemberIsNeverPreemptedToFairShare(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "8")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.run("A", "4", "node-0", func(j *flotilla.Job) { preemptible(j); inGang("g", 2, "")(j) })
	w.run("A", "4", "node-0", func(j *flotilla.Job) { nonPreemptible(j); inGang("g", 2, "")(j) })
	w.submit("B", 2, "4", preemptible)
	res := w.schedule()
	for _, p := range res.Preempted {
		assert.NotEqual(t, flotilla.ArmadaDefault, p.Job.PriorityClass, "non-preemptible %s preempted (%s)", p.Job.ID, p.Reason)
	}
}

// A running gang with a non-preemptible member is pinned at the top level:
// its preemptible member is neither evicted nor an urgency victim.
func TestRunningGangWithANonPreemptibleMemberIsNoUrgencyVictim(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "8")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.run("A", "4", "node-0", func(j *flotilla.Job) { nonPreemptible(j); inGang("g", 2, "")(j) })
	w.run("A", "4", "node-0", func(j *flotilla.Job) { preemptible(j); inGang("g", 2, "")(j) })
	w.submit("B", 1, "4", nonPreemptible)
	res := w.schedule()
	assert.Empty(t, res.Preempted)
	assert.Empty(t, res.Scheduled)
	require.Len(t, res.UnscheduledJobs, 1)
}

// A queue that loses a job to urgency preemption is ordered by its share
// after the loss for the rest of the cycle. Here C's urgent job preempts
// B's only running job; B (now holding nothing) wins the last free core
// over A (holding 1 of its fair 2): ordered by its fraction before the
// loss (1.5), B would lose to A (1.0).
func TestQueueThatLostAJobToUrgencyIsOrderedByItsNewShare(t *testing.T) {
	w := newWorld(t)
	labelledNode(w, "n0", "2", map[string]string{"slot": "a"})
	labelledNode(w, "n1", "4", nil)
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.addQueue("C", 1)
	b0 := w.run("B", "2", "n0", preemptible)
	w.run("A", "1", "n1", nonPreemptible)
	w.run("C", "2", "n1", nonPreemptible)
	w.submit("C", 1, "2", nonPreemptible, func(j *flotilla.Job) { j.NodeSelector = map[string]string{"slot": "a"} })
	w.submit("A", 1, "1", preemptible)
	w.submit("B", 1, "1", preemptible)
	res := w.schedule()
	require.Contains(t, preemptedIDs(res), b0.ID)
	assert.Equal(t, map[string]int{"B": 1, "C": 1}, countByQueue(res.Scheduled),
		"after losing b0, B holds 0 of its fair share and goes before A")
}

func protect(r *scheduler.Running) { r.Protected = true }

// A protected running job (Running.Protected: its eviction is refused for
// now) is no urgency victim: the preemptor takes another victim that
// makes room, or waits when none does.
func TestUrgencyPassesOverAProtectedJob(t *testing.T) {
	build := func(protectLatest bool) (*world, *flotilla.Job, *flotilla.Job) {
		w := newWorld(t)
		w.addNodes(1, "8")
		w.addQueue("A", 1)
		early := w.run("A", "4", "node-0", preemptible, startedAt(0))
		var late *flotilla.Job
		if protectLatest {
			late = w.run("A", "4", "node-0", preemptible, startedAt(time.Minute), protect)
		} else {
			late = w.run("A", "4", "node-0", preemptible, startedAt(time.Minute))
		}
		w.submit("A", 1, "4", nonPreemptible)
		return w, early, late
	}
	w, _, late := build(false)
	assert.Equal(t, map[string]scheduler.PreemptionReason{late.ID: scheduler.PreemptedForUrgency}, preemptedIDs(w.schedule()),
		"unprotected, the latest started goes first")
	w, early, _ := build(true)
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, map[string]scheduler.PreemptionReason{early.ID: scheduler.PreemptedForUrgency}, preemptedIDs(res))

	w = newWorld(t)
	w.addNodes(1, "8")
	w.addQueue("A", 1)
	w.run("A", "8", "node-0", preemptible, protect)
	w.submit("A", 1, "4", nonPreemptible)
	res = w.schedule()
	assert.Empty(t, res.Preempted, "the only victim is protected")
	assert.Empty(t, res.Scheduled)
}

// Protected jobs are not evicted to fair share either, and a protected
// member keeps its whole gang.
func TestFairSharePassesOverProtectedJobsAndTheirGangs(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	for i := range 30 {
		if i == 0 {
			w.run("A", "1", "node-0", preemptible, protect)
		} else {
			w.run("A", "1", "node-0", preemptible)
		}
	}
	inGang := func(j *flotilla.Job) { preemptible(j); j.Gang = flotilla.Gang{ID: "g", Cardinality: 2} }
	w.run("A", "1", "node-0", inGang, protect)
	mate := w.run("A", "1", "node-0", inGang)
	w.submit("B", 32, "1", preemptible)
	res := w.schedule()
	require.NotEmpty(t, res.Preempted, "A is over its fair share: some of its jobs go")
	for _, p := range res.Preempted {
		assert.NotEqual(t, w.running[0].Job.ID, p.Job.ID, "the protected job stays")
		assert.NotEqual(t, mate.ID, p.Job.ID, "a protected member keeps its gang")
		assert.Empty(t, p.Job.Gang.ID)
	}
	w = newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	for range 32 {
		w.run("A", "1", "node-0", preemptible, protect)
	}
	w.submit("B", 32, "1", preemptible)
	res = w.schedule()
	assert.Empty(t, res.Preempted, "every job of A protected")
	assert.Empty(t, res.Scheduled)
}

// A node whose running jobs request more than its total is full, but
// urgency may still use it: a job of higher priority lands there when
// preempting lower-priority jobs brings the node back under its total
// with the job placed, and then the fewest such jobs go. Here 3×2 cores
// run on a node of 4: a 2-core job of higher priority preempts two of
// them, leaving 2+2 of 4, not one (which would leave 6 of 4).
func TestUrgencyOnAnOverCommittedNodePreemptsUntilTheJobFitsItsTotal(t *testing.T) {
	w := newWorld(t)
	w.cfg.EvictionProbability = 0
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	for range 3 {
		w.run("A", "2", "node-0", preemptible)
	}
	urgent := w.submit("B", 1, "2", nonPreemptible)[0]
	res := w.schedule()
	assert.Equal(t, []string{"node-0"}, res.OverCommitted)
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, urgent, res.Scheduled[0].Job)
	require.Len(t, res.Preempted, 2)
	for _, p := range res.Preempted {
		assert.Equal(t, scheduler.PreemptedForUrgency, p.Reason)
		assert.Equal(t, urgent, p.For)
	}
}

// Preemption to fair share on an over-committed node: its evicted jobs go
// back to it as far as it held them (going back, they add nothing to what
// it held), so eviction alone preempts nothing there.
func TestEvictedJobsGoBackToTheirOverCommittedNode(t *testing.T) {
	w := newWorld(t)
	w.cfg.ProtectedFractionOfFairShare = 0 // every queue with jobs is evicted
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.run("A", "3", "node-0", preemptible)
	w.run("A", "3", "node-0", preemptible)
	res := w.schedule()
	assert.Equal(t, []string{"node-0"}, res.OverCommitted)
	assert.Empty(t, res.Preempted, "both evicted jobs went back")
}

// New work displaces evicted jobs from an over-committed node only as far
// as brings it back under its total with the new job placed: B's 1-core
// job displaces one of A's 3-core jobs from a node of 4 (3+1 of 4), a
// 2-core job both (one would leave 3+2).
func TestNewWorkDisplacesEvictedJobsFromAnOverCommittedNodeUntilItFits(t *testing.T) {
	for _, c := range []struct {
		cpu       string
		displaced int
	}{{"1", 1}, {"2", 2}} {
		t.Run(c.cpu, func(t *testing.T) {
			w := newWorld(t)
			w.cfg.ProtectedFractionOfFairShare = 0
			w.addNodes(1, "4")
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			w.run("A", "3", "node-0", preemptible)
			w.run("A", "3", "node-0", preemptible)
			job := w.submit("B", 1, c.cpu, preemptible)[0]
			res := w.schedule()
			assert.Equal(t, []string{"node-0"}, res.OverCommitted)
			require.Len(t, res.Scheduled, 1)
			assert.Equal(t, job, res.Scheduled[0].Job)
			require.Len(t, res.Preempted, c.displaced)
			for _, p := range res.Preempted {
				assert.Equal(t, scheduler.PreemptedForFairShare, p.Reason)
				assert.Equal(t, job, p.For)
			}
		})
	}
}
