package scheduler_test

// Review tests (written against c8c068a): each one pins a suspected bug in the scheduling cycle. A
// failing test here is a confirmed bug (see the comment above each test for
// the file:line and the suggested fix).

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

func labelledNode(w *world, name, cpu string, labels map[string]string) {
	w.nodes = append(w.nodes, &flotilla.Node{Name: name, Total: w.res(cpu), Labels: labels})
}

// preempt.go:212-217 (makeRoom's gang sweep) only takes gang mates that are
// stRunning/stBack/stNew. A mate still stEvicted (holding at evictedLevel,
// not yet offered) is skipped, later goes back in tryEvicted, and
// finishEvictions (which only looks for stEvicted) never sees the gang
// again: one member is preempted for urgency, the other keeps running.
func TestReviewUrgencyVictimLeavesEvictedGangMateRunning(t *testing.T) {
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

// preempt.go:96-101 (evictGang) evicts every running member of a gang,
// whatever its class, and finishEvictions (preempt.go:289-293) preempts
// them: a non-preemptible member of a mixed-class gang (allowed: see
// TestGangOrdersByItsLowestClass) is preempted to fair share. DESIGN.md §3:
// "Non-preemptible means never preempted by the scheduler." The same holds
// for makeRoom's gang sweep (preempt.go:212-217, no Preemptible check).
func TestReviewNonPreemptibleGangMemberPreemptedToFairShare(t *testing.T) {
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

// fill.go:105: the lookback is checked before every Next, so once the
// first member of a gang uses the last lookback unit, the gang's other
// members are never pulled and the gang never completes. DESIGN.md §3 (and
// the comment at fill.go:118) say a gang counts once toward the lookback.
func TestReviewLookbackCutsAGangInHalf(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.submit("A", 2, "1", inGang("g", 2, ""))
	w.cfg.MaxQueueLookback = 1
	res := w.schedule()
	assert.Len(t, res.Scheduled, 2, "unscheduled: %v", res.UnscheduledJobs)
}

// fill.go:139-162 (notExamined) reports queuedLen-pulled every time a queue
// leaves the selector. A queue that left at its lookback and is pushed back
// by dropVictim (preempt.go:251) to retry a displaced job leaves a second
// time and reports the same unexamined jobs again.
func TestReviewNotExaminedCountedTwiceAfterRetry(t *testing.T) {
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

// cycle.go:343-346 (collectDemand) returns before adding each queue's
// allocation to its demand when Snapshot.Queued is nil ("Nil means none"),
// so a snapshot with nil Queued and one with an empty store disagree on
// Demand and AdjustedFairShare (and so on which queues are evictable).
func TestReviewNilQueuedDropsRunningDemand(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.run("A", "3", "node-0", nonPreemptible)
	w.run("B", "1", "node-0", nonPreemptible)
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	withStore, err := s.Schedule(context.Background(), w.snapshot(), t0)
	require.NoError(t, err)
	snap := w.snapshot()
	snap.Queued = nil
	withNil, err := s.Schedule(context.Background(), snap, t0)
	require.NoError(t, err)
	for i := range withStore.Queues {
		assert.InDelta(t, withStore.Queues[i].Demand, withNil.Queues[i].Demand, 1e-12, "queue %s demand", withStore.Queues[i].Name)
		assert.InDelta(t, withStore.Queues[i].AdjustedFairShare, withNil.Queues[i].AdjustedFairShare, 1e-12, "queue %s adjusted", withStore.Queues[i].Name)
	}
}

// cycle.go:195-235 (bindRunning) does not check running jobs against the
// queued store: a job present in both is bound and scheduled again, and the
// caller is told to bind it a second time.
func TestReviewRunningJobAlsoQueuedIsScheduledTwice(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "4")
	w.addQueue("A", 1)
	j := w.run("A", "1", "node-0", nonPreemptible)
	require.NoError(t, w.store.Add(j))
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	res, err := s.Schedule(context.Background(), w.snapshot(), t0)
	if err != nil {
		return // rejecting the snapshot is a fine answer
	}
	for _, a := range res.Scheduled {
		assert.NotEqual(t, j.ID, a.Job.ID, "running job scheduled again on %s", a.Node)
	}
}

// fill.go:18-26: a queue whose first advance returns false is never pushed
// and never passed to notExamined. advance can return false with jobs left
// when gang members use up the lookback (here an incomplete gang's member),
// so the queue's other jobs are neither scheduled, unscheduled nor counted
// in NotExamined: they vanish from the Result.
func TestReviewQueueSilentlyDroppedWhenFirstAdvanceFails(t *testing.T) {
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

// preempt.go:225-254 (dropVictim) lowers the victim queue's alloc but does
// not refresh its candidate in the selector, so progressive filling keeps
// ordering that queue by its pre-preemption fraction. Here C's urgent job
// preempts B's only running job; B (now holding nothing) should win the
// last free core over A (holding 1 of its fair 2), but its stale fraction
// (1.5) loses to A's (1.0).
func TestReviewStaleCandidateAfterUrgencyPreemption(t *testing.T) {
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

// preempt.go:136-161 (tryEvicted) puts evicted gang members back one by one
// and may urgency-preempt lower-priority jobs to do so (makeRoom), although
// a mate that did not go back dooms the whole gang in finishEvictions
// (preempt.go:281). Here m1 cannot return (B's urgent job took n0), m2 goes
// back to n1 by preempting C's scavenger S, and then m1 and m2 are both
// preempted: S was preempted for nothing (n1 ends with 6 of 8 cores used).
func TestReviewDoomedGangMemberPreemptsBystander(t *testing.T) {
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

// try (fill.go:197), tryGang (gangs.go) and leasePlace ignore class()'s ok:
// a queued job whose priority class the Config does not know (the store
// was built with another class list) is scheduled silently as classes[0]
// instead of being rejected like a running job with an unknown class
// (cycle.go:221-224).
func TestReviewQueuedJobWithUnknownClassAccepted(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	classes := append(flotilla.DefaultPriorityClasses(), flotilla.PriorityClass{Name: "other", Priority: 5, Preemptible: true})
	store, err := queue.New(w.schema, classes, flotilla.ArmadaDefault)
	require.NoError(t, err)
	require.NoError(t, store.Add(w.job("A", "1", func(j *flotilla.Job) { j.PriorityClass = "other" })))
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	snap := w.snapshot()
	snap.Queued = store
	res, err := s.Schedule(context.Background(), snap, t0)
	if err == nil {
		assert.Empty(t, res.Scheduled, "a job of unknown class %q was scheduled", "other")
	}
}

// cycle.go:201 formats the error field name (fmt.Sprintf) for every running
// job before knowing whether there is an error: about two allocations per
// running job on every cycle (DESIGN.md §5: allocation-free per-job paths).
func TestReviewAllocationsPerRunningJob(t *testing.T) {
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

// config.go:137-158: unknown resources are reported while ranging over
// maps, so the joined error's text changes from call to call.
func TestReviewConfigErrorOrderIsDeterministic(t *testing.T) {
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

// Bookkeeping over generated worlds (preemptWorld and lookback variants):
// per queue, Allocated and Running equal what the Result implies; every
// queued job is reported exactly once (scheduled, unscheduled, or counted
// in NotExamined); no job is both scheduled and preempted or scheduled
// twice; running gangs lose all members or none.
func TestReviewResultBookkeeping(t *testing.T) {
	for seed := range uint64(1500) {
		w := preemptWorld(t, seed)
		w.cfg.MaxQueueLookback = int(seed % 4)
		if seed%5 == 0 {
			w.cfg.MaximumResourceFractionToSchedule = map[string]float64{"cpu": 0.3}
		}
		res := w.schedule(t)
		if msg := bookkeeping(w, res); msg != "" {
			t.Fatalf("seed %d (lookback %d): %s", seed, w.cfg.MaxQueueLookback, msg)
		}
	}
}

func bookkeeping(w *genWorld, res *scheduler.Result) string {
	schema := w.cfg.Schema
	alloc := map[string]flotilla.Resources{}
	running := map[string]int{}
	for _, q := range w.snap.Queues {
		alloc[q.Name] = schema.Zero()
	}
	preempted := map[string]bool{}
	for _, p := range res.Preempted {
		if preempted[p.Job.ID] {
			return "preempted twice: " + p.Job.ID
		}
		preempted[p.Job.ID] = true
	}
	gangs := map[string][2]int{}
	for _, r := range w.snap.Running {
		if id := r.Job.Gang.ID; id != "" {
			c := gangs[id]
			c[0]++
			if preempted[r.Job.ID] {
				c[1]++
			}
			gangs[id] = c
		}
		if !preempted[r.Job.ID] {
			alloc[r.Job.Queue].Add(r.Job.Requests)
			running[r.Job.Queue]++
		}
	}
	for id, c := range gangs {
		if c[1] != 0 && c[1] != c[0] {
			return fmt.Sprintf("running gang %s lost %d of %d members", id, c[1], c[0])
		}
	}
	seen := map[string]string{}
	perQueue := map[string]int{}
	for _, a := range res.Scheduled {
		if preempted[a.Job.ID] {
			return "scheduled and preempted: " + a.Job.ID
		}
		if seen[a.Job.ID] != "" {
			return "reported twice: " + a.Job.ID
		}
		seen[a.Job.ID] = "scheduled"
		alloc[a.Job.Queue].Add(a.Job.Requests)
		running[a.Job.Queue]++
		perQueue[a.Job.Queue]++
	}
	for _, u := range res.UnscheduledJobs {
		if seen[u.Job.ID] != "" {
			return fmt.Sprintf("%s both %s and unscheduled (%s)", u.Job.ID, seen[u.Job.ID], u.Reason)
		}
		seen[u.Job.ID] = "unscheduled"
		perQueue[u.Job.Queue]++
	}
	for _, n := range res.NotExamined {
		perQueue[n.Queue] += n.Count
	}
	queued := map[string]int{}
	for _, j := range w.queued {
		queued[j.Queue]++
	}
	for _, q := range res.Queues {
		if !q.Allocated.Equal(alloc[q.Name]) {
			return fmt.Sprintf("queue %s: Allocated %v, running+scheduled-preempted %v", q.Name, q.Allocated, alloc[q.Name])
		}
		if q.Running != running[q.Name] {
			return fmt.Sprintf("queue %s: Running %d, want %d", q.Name, q.Running, running[q.Name])
		}
		if perQueue[q.Name] != queued[q.Name] {
			return fmt.Sprintf("queue %s: %d queued jobs, %d reported (scheduled+unscheduled+not examined)", q.Name, queued[q.Name], perQueue[q.Name])
		}
	}
	return ""
}
