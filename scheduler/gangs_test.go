package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

func inGang(id string, card int, label string) func(*flotilla.Job) {
	return func(j *flotilla.Job) { j.Gang = flotilla.Gang{ID: id, Cardinality: card, NodeUniformityLabel: label} }
}

func TestGangFitsExactlyOrNotAtAll(t *testing.T) {
	for _, c := range []struct {
		members int
		placed  int
	}{{32, 32}, {33, 0}} {
		t.Run(fmt.Sprint(c.members), func(t *testing.T) {
			w := newWorld(t)
			w.addNodes(2, "32")
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			for range 16 {
				w.run("B", "1", "node-0", nonPreemptible)
				w.run("B", "1", "node-1", nonPreemptible)
			}
			w.submit("A", c.members, "1", inGang("g", c.members, ""))
			res := w.schedule()
			assert.Len(t, res.Scheduled, c.placed)
			if c.placed == 0 {
				require.Len(t, res.UnscheduledJobs, c.members)
				assert.Equal(t, scheduler.ReasonNoRoom, res.UnscheduledJobs[0].Reason.Code)
				assert.Contains(t, res.UnscheduledJobs[0].Reason.Message, "cpu")
				assert.Empty(t, res.Preempted)
			}
		})
	}
}

func TestGangUniformityLabelPicksTheValueThatHoldsIt(t *testing.T) {
	w := newWorld(t)
	for i, v := range []string{"v1", "v1", "v2", "v2", "v3", "v3"} {
		w.nodes = append(w.nodes, &flotilla.Node{Name: fmt.Sprintf("n%d", i), Total: w.res("32"), Labels: map[string]string{"rack": v}})
	}
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	for _, n := range []string{"n0", "n1", "n4", "n5"} {
		w.run("B", "1", n, nonPreemptible)
	}
	w.submit("A", 4, "16", inGang("g", 4, "rack"))
	res := w.schedule()
	require.Len(t, res.Scheduled, 4)
	for _, a := range res.Scheduled {
		assert.Contains(t, []string{"n2", "n3"}, a.Node)
	}
}

func TestGangWithoutTheLabelAnywhereSaysSo(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "32")
	w.addQueue("A", 1)
	w.submit("A", 2, "1", inGang("g", 2, "rack"))
	res := w.schedule()
	assert.Empty(t, res.Scheduled)
	require.Len(t, res.UnscheduledJobs, 2)
	assert.Contains(t, res.UnscheduledJobs[0].Reason.Message, "rack")
}

func TestFairShareJudgesTheWholeGang(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "16")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 8, "1", inGang("g", 8, ""))
	w.submit("B", 16, "1")
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 8, "B": 8}, countByQueue(res.Scheduled))
	// B goes first while its fraction after one more job is below A's after
	// the whole gang (8/16 of a 1/2 share = 1.0): 8 jobs, then the gang.
	assert.Equal(t, "B", res.Scheduled[0].Job.Queue)
	assert.Equal(t, "A", res.Scheduled[8].Job.Queue)
}

func TestGangCountsOnceTowardLookback(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.submit("A", 4, "1", inGang("g", 4, ""))
	w.submit("A", 2, "1")
	w.cfg.MaxQueueLookback = 2
	res := w.schedule()
	assert.Len(t, res.Scheduled, 5, "the gang and one lone job")
	require.Len(t, res.NotExamined, 1)
	assert.Equal(t, 1, res.NotExamined[0].Count)
}

func TestGangLargerThanBurstDoesNotBlockItsQueue(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.submit("A", 5, "1", inGang("g", 5, ""))
	w.submit("A", 3, "1")
	w.cfg.MaximumPerQueueSchedulingRate, w.cfg.MaximumPerQueueSchedulingBurst = 1, 4
	res := w.schedule()
	assert.Len(t, res.Scheduled, 3)
	require.Len(t, res.UnscheduledJobs, 5)
	assert.Equal(t, scheduler.ReasonGangLargerThanBurst, res.UnscheduledJobs[0].Reason.Code)
}

func TestIncompleteGangWaits(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.submit("A", 2, "1", inGang("g", 3, ""))
	res := w.schedule()
	assert.Empty(t, res.Scheduled)
	require.Len(t, res.UnscheduledJobs, 2)
	assert.Equal(t, scheduler.ReasonGangIncomplete, res.UnscheduledJobs[0].Reason.Code)
	assert.Contains(t, res.UnscheduledJobs[0].Reason.Message, "2 of 3")
}

// A gang's class for ordering is its lowest member's: 31 default members and
// one preemptible member order as a preemptible unit, behind B's default job.
func TestGangOrdersByItsLowestClass(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 31, "1", inGang("g", 32, ""), nonPreemptible)
	w.submit("A", 1, "1", inGang("g", 32, ""), preemptible)
	w.submit("B", 1, "1", nonPreemptible)
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, "B", res.Scheduled[0].Job.Queue, "B's default job goes first and the gang no longer fits")
}

func TestGangsLandWithinOneCluster(t *testing.T) {
	w := newWorld(t)
	for i := range 4 {
		w.nodes = append(w.nodes, &flotilla.Node{Name: fmt.Sprintf("n%d", i), Cluster: fmt.Sprintf("c%d", i/2), Total: w.res("8")})
	}
	w.addQueue("A", 1)
	w.submit("A", 3, "6", inGang("g", 3, ""))
	w.submit("A", 2, "6", inGang("h", 2, ""))
	res := w.schedule()
	// Three 6-core members need three nodes; no cluster has three, so g
	// waits though the cluster as a whole could hold it. h fits in one.
	require.Len(t, res.Scheduled, 2)
	clusters := map[string]bool{}
	for _, a := range res.Scheduled {
		assert.Equal(t, "h", a.Job.Gang.ID)
		for _, n := range w.nodes {
			if n.Name == a.Node {
				clusters[n.Cluster] = true
			}
		}
	}
	assert.Len(t, clusters, 1)
}

func TestGangPreemptsForUrgencyAsAUnit(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "8")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	for range 8 {
		w.run("A", "1", "node-0", preemptible)
		w.run("A", "1", "node-1", preemptible)
	}
	w.submit("B", 2, "6", inGang("g", 2, ""), nonPreemptible)
	w.cfg.EvictionProbability = 0 // urgency alone
	res := w.schedule()
	require.Len(t, res.Scheduled, 2)
	assert.NotEqual(t, res.Scheduled[0].Node, res.Scheduled[1].Node)
	require.Len(t, res.Preempted, 12, "six one-core jobs on each node make room for a 6-core member")
	for _, p := range res.Preempted {
		assert.Equal(t, scheduler.PreemptedForUrgency, p.Reason)
	}
}

func TestGangDisplacesEvictedJobsForFairShare(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "8")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	for range 8 {
		w.run("A", "1", "node-0", preemptible)
		w.run("A", "1", "node-1", preemptible)
	}
	w.submit("B", 2, "4", inGang("g", 2, ""), preemptible)
	res := w.schedule()
	assert.Equal(t, map[string]int{"B": 2}, countByQueue(res.Scheduled), "B's gang takes half the cluster, its fair share")
	assert.Len(t, res.Preempted, 8)
	for _, p := range res.Preempted {
		assert.Equal(t, scheduler.PreemptedForFairShare, p.Reason)
	}
}

// TestQueuedMemberOfARunningGangIsInvalid: gang IDs are never reused. A
// queued job naming the gang of running jobs is reported gang-invalid and
// not placed. It used to be placed, taken for its running namesake's mate;
// in the world FuzzSchedule found (testdata/fuzz/FuzzSchedule/f3e962e4689e19b7)
// the urgency preemption it needed was then skipped, over-committing the
// node.
func TestQueuedMemberOfARunningGangIsInvalid(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.run("A", "2", "node-0", func(j *flotilla.Job) {
		j.PriorityClass = flotilla.ArmadaPreemptible
		inGang("g", 1, "")(j)
	})
	w.run("A", "1", "node-0", nonPreemptible)
	reused := w.submit("A", 1, "1", nonPreemptible, inGang("g", 1, ""))[0]
	w.submit("A", 1, "2", nonPreemptible)
	res := w.schedule()
	for _, a := range res.Scheduled {
		assert.NotEqual(t, reused.ID, a.Job.ID)
	}
	var invalid []scheduler.Unscheduled
	for _, u := range res.UnscheduledJobs {
		if u.Job == reused {
			invalid = append(invalid, u)
		}
	}
	require.Len(t, invalid, 1)
	assert.Equal(t, scheduler.ReasonGangInvalid, invalid[0].Reason.Code)
	assert.Contains(t, invalid[0].Reason.Message, "gang g already has members running")
	used := w.res("0")
	gone := preemptedIDs(res)
	for _, r := range w.running {
		if _, ok := gone[r.Job.ID]; !ok {
			used.Add(r.Job.Requests)
		}
	}
	for _, a := range res.Scheduled {
		used.Add(a.Job.Requests)
	}
	assert.True(t, used.Fits(w.res("4")), "node over-committed: %v used", used)
}

// An evicted gang goes back whole when nothing takes its room.
func TestEvictedGangReturnsWholeWhenNothingTakesItsRoom(t *testing.T) {
	w := newWorld(t)
	w.cfg.ProtectedFractionOfFairShare = 0 // every queue holding anything is evicted
	w.addNodes(2, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	g := func(j *flotilla.Job) { preemptible(j); inGang("g", 2, "")(j) }
	w.run("A", "4", "node-0", g)
	w.run("A", "4", "node-1", g)
	w.submit("B", 1, "8", nonPreemptible) // fits nowhere, displaces nothing
	res := w.schedule()
	assert.Empty(t, res.Preempted)
	assert.Empty(t, res.Scheduled)
	assert.Equal(t, 2, res.Queues[0].Running)
}

// One member's node is taken by a higher-priority job: the whole gang is
// preempted to fair share, and the other member's hold is released so a
// later job of the same cycle can use its node.
func TestEvictedGangThatCannotReturnIsPreemptedWholeAndFreesEveryNode(t *testing.T) {
	w := newWorld(t)
	w.cfg.ProtectedFractionOfFairShare = 0
	labelledNode(w, "n0", "4", map[string]string{"slot": "a"})
	labelledNode(w, "n1", "4", nil)
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.addQueue("C", 1)
	g := func(j *flotilla.Job) { preemptible(j); inGang("g", 2, "")(j) }
	m1 := w.run("A", "4", "n0", g)
	m2 := w.run("A", "4", "n1", g)
	w.submit("B", 1, "4", nonPreemptible, func(j *flotilla.Job) { j.NodeSelector = map[string]string{"slot": "a"} })
	w.submit("C", 1, "4", preemptible)
	res := w.schedule()
	assert.Equal(t, map[string]scheduler.PreemptionReason{m1.ID: scheduler.PreemptedForFairShare, m2.ID: scheduler.PreemptedForFairShare}, preemptedIDs(res))
	nodes := map[string]string{}
	for _, a := range res.Scheduled {
		nodes[a.Job.Queue] = a.Node
	}
	assert.Equal(t, map[string]string{"B": "n0", "C": "n1"}, nodes)
}

// An evicted gang member does not urgency-preempt lower-priority jobs to go
// back when a mate cannot go back: the gang is preempted whole anyway. Here
// m1 cannot return (B's urgent job took n0), so m2 does not go back to n1
// by preempting C's scavenger S: m1 and m2 are both preempted, and S,
// had it been taken, would have been preempted for nothing (n1 ends with 6
// of its 8 cores used).
func TestEvictedGangThatCannotReturnPreemptsNoBystanderToPutAMemberBack(t *testing.T) {
	w := newWorld(t)
	w.cfg.PriorityClasses = append(w.cfg.PriorityClasses, flotilla.PriorityClass{Name: "scavenger", Priority: 10000, Preemptible: true})
	w.resetStore()
	labelledNode(w, "n0", "4", nil)
	labelledNode(w, "n1", "8", nil)
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.addQueue("C", 1)
	g := func(j *flotilla.Job) { preemptible(j); inGang("g", 2, "")(j) }
	m1 := w.run("A", "4", "n0", g)
	m2 := w.run("A", "4", "n1", g)
	s := w.run("C", "2", "n1", func(j *flotilla.Job) { j.PriorityClass = "scavenger" })
	w.submit("B", 2, "4", nonPreemptible)
	res := w.schedule()
	got := preemptedIDs(res)
	require.Contains(t, got, m1.ID)
	require.Contains(t, got, m2.ID)
	assert.NotContains(t, got, s.ID, "S preempted to make room for a gang member that is preempted anyway")
}

// A non-preemptible gang with no free room preempts, on each node it uses,
// the lower-priority jobs in its way.
func TestGangPreemptsForUrgencyOnEveryNodeItUses(t *testing.T) {
	w := newWorld(t)
	w.cfg.EvictionProbability = 0 // urgency only
	w.addNodes(2, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	a0 := w.run("A", "4", "node-0", preemptible)
	a1 := w.run("A", "4", "node-1", preemptible)
	w.submit("B", 2, "4", nonPreemptible, inGang("g", 2, ""))
	res := w.schedule()
	assert.Len(t, res.Scheduled, 2)
	assert.Equal(t, map[string]scheduler.PreemptionReason{a0.ID: scheduler.PreemptedForUrgency, a1.ID: scheduler.PreemptedForUrgency}, preemptedIDs(res))
}

// A gang searches at its lowest class: one preemptible member means it may
// not preempt preemptible jobs of the same priority.
func TestGangWithAPreemptibleMemberPreemptsNothingOfThatPriority(t *testing.T) {
	w := newWorld(t)
	w.cfg.EvictionProbability = 0
	w.addNodes(2, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.run("A", "4", "node-0", preemptible)
	w.run("A", "4", "node-1", preemptible)
	w.submit("B", 1, "4", nonPreemptible, inGang("g", 2, ""))
	w.submit("B", 1, "4", preemptible, inGang("g", 2, ""))
	res := w.schedule()
	assert.Empty(t, res.Scheduled)
	assert.Empty(t, res.Preempted)
	require.Len(t, res.UnscheduledJobs, 2)
	assert.Equal(t, scheduler.ReasonNoRoom, res.UnscheduledJobs[0].Reason.Code)
}
