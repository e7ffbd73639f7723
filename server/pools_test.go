package server

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// inPools is a template of n one-cpu jobs accepting pools.
func inPools(n int, pools ...string) JobTemplate {
	t := cpuJobs(n, "1")
	t.Pools = pools
	return t
}

// leasedOn returns the cluster each job's live lease is on.
func (w *world) leasedOn(ids []string) []string {
	w.t.Helper()
	st, err := w.srv.Status(w.ctx, ids...)
	require.NoError(w.t, err)
	out := make([]string, len(st))
	for i, s := range st {
		out[i] = s.Cluster
	}
	return out
}

func TestJobAcceptingOnlyOnePoolIsNeverLeasedToAnotherPoolsCluster(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "ca", Pool: "a", Nodes: nodesOf("ca", 1, 8)})
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 8)})
	onlyB := w.submit("A", "s", inPools(6, "b"))
	onlyA := w.submit("A", "s", inPools(2, "a"))
	nowhere := w.submit("A", "s", inPools(1, "c"))
	for range 3 {
		w.cycle()
	}
	for _, c := range w.leasedOn(onlyB) {
		require.Equal(t, "cb", c)
	}
	for _, c := range w.leasedOn(onlyA) {
		require.Equal(t, "ca", c)
	}
	// More jobs than pool b holds: the rest wait though pool a has room.
	more := w.submit("A", "s", inPools(4, "b"))
	w.cycle()
	leasedB := 0
	for _, id := range append(onlyB, more...) {
		if w.state(id) == events.LeasedState {
			leasedB++
		}
	}
	require.Equal(t, 8, leasedB, "pool b's one node holds 8 one-cpu jobs")
	st, err := w.srv.Status(w.ctx, nowhere...)
	require.NoError(t, err)
	require.Equal(t, events.Queued, st[0].State)
	require.Contains(t, st[0].Reason, "no cluster is in its pools (c); the service's pools are a, b")
}

func TestAJobLeasedInOnePoolIsNotQueuedForTheNextPoolInTheSameCycle(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "ca", Pool: "a", Nodes: nodesOf("ca", 1, 4)})
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 4)})
	ids := w.submit("A", "s", cpuJobs(6, "1")) // every pool
	rep := w.cycle()
	require.Equal(t, 6, rep.Leased)
	require.Len(t, rep.Pools, 2)
	require.Equal(t, 4, len(rep.Pools[0].Result.Scheduled), "pool a fills first")
	require.Equal(t, 2, len(rep.Pools[1].Result.Scheduled), "pool b gets the rest, not the jobs leased in a")
	on := w.leasedOn(ids)
	require.Equal(t, 4, strings.Count(strings.Join(on, " "), "ca"))
	require.Equal(t, 2, strings.Count(strings.Join(on, " "), "cb"))
}

func TestEachPoolHasItsOwnFairSharesAndRunningCountsOnlyInItsPool(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "ca", Pool: "a", Nodes: nodesOf("ca", 1, 4)})
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 4)})
	w.submit("A", "s", inPools(4, "a")) // A fills pool a
	w.cycle()
	w.submit("A", "s", inPools(8, "a", "b"))
	w.submit("B", "s", inPools(8, "b"))
	w.cycle()
	qs, err := w.srv.ListQueues(w.ctx)
	require.NoError(t, err)
	shares := map[string]float64{}
	fair := map[string]float64{}
	for _, q := range qs {
		for _, p := range q.Pools {
			shares[q.Name+"@"+p.Pool] = p.Report.Share
			fair[q.Name+"@"+p.Pool] = p.Report.FairShare
		}
	}
	// Pool a: only A has work accepting it, and holds it all.
	require.InDelta(t, 1, fair["A@a"], 1e-9)
	require.InDelta(t, 1, shares["A@a"], 1e-9)
	require.Zero(t, fair["B@a"], "B has no work accepting pool a")
	// Pool b: A's running jobs in a do not count; A and B split it.
	require.InDelta(t, 0.5, fair["A@b"], 1e-9)
	require.InDelta(t, 0.5, fair["B@b"], 1e-9)
	require.InDelta(t, 0.5, shares["A@b"], 1e-9)
	require.InDelta(t, 0.5, shares["B@b"], 1e-9)
	// The top-level report is the first pool's (no default pool here).
	for _, q := range qs {
		if q.Name == "B" {
			require.InDelta(t, 0.5, q.Report.FairShare, 1e-9, "B's first pool with a report is b")
		}
	}
}

func TestRestartRebuildsClusterPoolsAndTheJobsPools(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "ca", Pool: "a", Nodes: nodesOf("ca", 1, 4)})
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 4)})
	ids := w.submit("A", "s", inPools(3, "b"))
	w.restart()
	require.Equal(t, "a", w.srv.st.clusters["ca"].pool)
	require.Equal(t, "b", w.srv.st.clusters["cb"].pool)
	// Both executors report again, without naming their pools (pool a's
	// first, with room for all).
	w.report(Report{Cluster: "ca"})
	w.report(Report{Cluster: "cb"})
	w.cycle()
	for _, c := range w.leasedOn(ids) {
		require.Equal(t, "cb", c)
	}
}

func TestReportWithABadPoolIsRefusedNamingThePoolAndChangesNothing(t *testing.T) {
	w := newWorld(t)
	_, err := w.srv.Report(w.ctx, &Report{Cluster: "c1", Pool: "a b", Nodes: nodesOf("c1", 1, 4)})
	requireProblems(t, err, problem{"pool", "a b", flotilla.ErrMalformed})
	require.Empty(t, w.srv.st.clusters)
	es, err := w.be.ListExecutors(w.ctx)
	require.NoError(t, err)
	require.Empty(t, es)
}

func TestClusterMovingToAnotherPoolIsStoredThere(t *testing.T) {
	w := newWorld(t)
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.report(Report{Cluster: "c1", Pool: "a"}) // no nodes: they are stored again with the pool
	es, err := w.be.ListExecutors(w.ctx)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, "a", es[0].Pool)
	require.Len(t, es[0].Nodes, 1)
	w.report(Report{Cluster: "c1"}) // neither nodes nor pool: the pool is kept
	require.Equal(t, "a", w.srv.st.clusters["c1"].pool)
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)}) // nodes without a pool: the default pool
	require.Equal(t, backend.DefaultPool, w.srv.st.clusters["c1"].pool)
	w.report(Report{Cluster: "c1", Pool: "b"})
	w.report(Report{Cluster: "c1", Pool: backend.DefaultPool})
	es, err = w.be.ListExecutors(w.ctx)
	require.NoError(t, err)
	require.Equal(t, "", es[0].Pool, "the default pool is stored as none")
}

// TestPropertyPerPoolFairShareIsWeightOverTheQueuesWithWorkAcceptingThePool
// checks each pool's fair shares against a naive oracle: with every
// cluster cordoned (nothing leases, so the pools' snapshots do not depend
// on each other), queue q's fair share in pool p is (1/factor_q) over the
// sum of 1/factor of the queues with a job accepting p, and its queued
// count is its number of such jobs.
func TestPropertyPerPoolFairShareIsWeightOverTheQueuesWithWorkAcceptingThePool(t *testing.T) {
	allPools := []string{"a", "b", "c"}
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 23))
			w := newWorld(t)
			queues := []string{"Q0", "Q1", "Q2", "Q3"}
			factor := map[string]float64{}
			for _, q := range queues {
				factor[q] = float64(1 + r.IntN(4))
				require.NoError(t, w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: q, PriorityFactor: factor[q]}))
			}
			for i := range 1 + r.IntN(4) {
				name := fmt.Sprintf("c%d", i)
				w.report(Report{Cluster: name, Pool: allPools[r.IntN(len(allPools))], Nodes: nodesOf(name, 1, 4)})
				require.NoError(t, w.srv.Cordon(w.ctx, backend.Cordon{Kind: backend.CordonCluster, Name: name}, true))
			}
			count := map[string]int{} // queue@pool → jobs accepting it
			for _, q := range queues {
				for range r.IntN(3) {
					var pools []string
					for _, p := range allPools {
						if r.IntN(2) == 0 {
							pools = append(pools, p)
						}
					}
					n := 1 + r.IntN(3)
					w.submit(q, "s", inPools(n, pools...))
					for _, p := range allPools {
						if pools == nil || slices.Contains(pools, p) {
							count[q+"@"+p] += n
						}
					}
				}
			}
			w.cycle()
			for _, p := range w.srv.st.poolNames() {
				sum := 0.0
				for _, q := range queues {
					if count[q+"@"+p] > 0 {
						sum += 1 / factor[q]
					}
				}
				shares := w.srv.st.last.pool(p).shares
				for _, q := range queues {
					rep, ok := shares[q]
					if count[q+"@"+p] == 0 {
						require.True(t, !ok || rep.FairShare == 0, "pool %s: queue %s without work has fair share %v", p, q, rep.FairShare)
						continue
					}
					require.True(t, ok, "pool %s: no report of queue %s", p, q)
					require.InDelta(t, (1/factor[q])/sum, rep.FairShare, 1e-9, "pool %s queue %s", p, q)
					require.Equal(t, count[q+"@"+p], rep.Queued, "pool %s queue %s queued", p, q)
					require.False(t, math.IsNaN(rep.AdjustedFairShare))
				}
			}
		})
	}
}

// Each pool's usage memory is its own and is stored under its name (the
// default pool's as before), so a restart gives each pool its own back.
func TestEachPoolsUsageMemoryIsStoredUnderItsNameAndRestored(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.Scheduler.UsageHalfLife = 10 * time.Second })
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "ca", Nodes: nodesOf("ca", 1, 4)})
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 4)})
	w.submit("A", "s", inPools(4, backend.DefaultPool))
	w.submit("B", "s", inPools(2, "b"))
	w.cycle()
	w.clock.Advance(5 * time.Second)
	w.report(Report{Cluster: "ca"})
	w.report(Report{Cluster: "cb"})
	w.cycle()
	def, b := w.srv.TreeUsage(""), w.srv.TreeUsage("b")
	require.Positive(t, def.Usage["A"])
	require.Zero(t, def.Usage["B"], "B runs in pool b only")
	require.Positive(t, b.Usage["B"])
	require.Zero(t, b.Usage["A"], "A runs in the default pool only")
	rs, err := w.be.ListUsage(w.ctx)
	require.NoError(t, err)
	var keys []string
	for _, r := range rs {
		if strings.HasPrefix(r.Key, UsageKeyShare) {
			keys = append(keys, r.Key)
		}
	}
	require.Equal(t, []string{"share/A", "share/A/b", "share/B", "share/B/b"}, keys)
	w.restart()
	require.Equal(t, def, w.srv.TreeUsage(""))
	require.Equal(t, b, w.srv.TreeUsage("b"))
}

// With one pool, a job naming only another pool waits; so it does after a
// restart, which splits the stores again because the job names pools.
func TestAfterARestartAJobNamingOnlyAnUnknownPoolIsNotLeasedInTheOnePool(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 8)})
	ids := w.submit("A", "s", inPools(2, "gpu"))
	w.cycle()
	require.Equal(t, events.Queued, w.state(ids[0]))
	w.restart()
	w.report(Report{Cluster: "c1"})
	w.cycle()
	for _, id := range ids {
		require.Equal(t, events.Queued, w.state(id), "job %s accepts only pool gpu", id)
	}
}

// So for a job live at the restart and queued again after it, when the
// service then knows one pool that the job does not accept.
func TestAfterARestartALiveJobNamingPoolsQueuedAgainIsNotLeasedInAPoolItDoesNotAccept(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Pool: "gpu", Nodes: nodesOf("c1", 1, 8)})
	ids := w.submit("A", "s", inPools(1, "gpu"))
	w.cycle()
	require.Equal(t, events.LeasedState, w.state(ids[0]))
	w.restart()
	// c1 comes back in the default pool, and c2 joins it: one pool, which
	// the job does not accept.
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 8)})
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 8)})
	w.clock.Advance(w.srv.st.cfg.LeaseTimeout)
	w.report(Report{Cluster: "c1"})
	w.report(Report{Cluster: "c2"})
	rep := w.cycle()
	require.Equal(t, 1, rep.Expired)
	require.Zero(t, rep.Leased)
	require.Equal(t, events.Queued, w.state(ids[0]))
}

// A gang's members accept the same pools: a gang split between pools'
// stores would wait forever in each, so such a request is refused.
func TestGangWhoseMembersNameDifferentPoolsIsRefusedNamingTheField(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "ca", Pool: "a", Nodes: nodesOf("ca", 1, 8)})
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 8)})
	m0, m1 := inPools(1, "a"), inPools(1, "a", "b")
	m0.Gang = &GangSpec{ID: "g", Cardinality: 2}
	m1.Gang = &GangSpec{ID: "g", Cardinality: 2}
	_, err := w.srv.Submit(w.ctx, &SubmitRequest{Queue: "A", JobSet: "s", Jobs: []JobTemplate{m0, m1}})
	requireProblems(t, err, problem{"jobs[1].pools", "[a b]", flotilla.ErrInconsistent})
	m1.Pools = []string{"a"}
	ids := w.submit("A", "s", m0, m1)
	w.cycle()
	require.Equal(t, []string{"ca", "ca"}, w.leasedOn(ids))
}

// A lease the decision could not write is reported as skipped, so that
// each lease written is counted once (the wait histogram observes the
// leases, not the decisions): here pool a decided for a node that left
// during its cycle, and pool b then leased the job.
func TestALeaseNotWrittenIsReportedSkippedSoEachLeaseWrittenCountsOnce(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "ca", Pool: "a", Nodes: nodesOf("ca", 1, 4)})
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 4)})
	ids := w.submit("A", "s", cpuJobs(1, "1"))
	once := false
	rep := w.cycleWith(func() {
		if !once {
			once = true // pool a's cycle: its node leaves, another comes
			w.report(Report{Cluster: "ca", Nodes: []flotilla.Node{{Name: "other", Total: nodesOf("ca", 1, 4)[0].Total}}})
		}
	})
	require.Equal(t, 1, rep.Leased)
	require.Equal(t, []string{"cb"}, w.leasedOn(ids))
	written := 0
	for _, p := range rep.Pools {
		written += len(p.Result.Scheduled) - len(p.Skipped)
	}
	require.Equal(t, rep.Leased, written)
	require.Equal(t, ids, rep.Pools[0].Skipped)
	require.Nil(t, rep.Pools[1].Skipped)
}
