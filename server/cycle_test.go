package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
)

func TestActiveDeadlineFailsTheJobCountedFromItsLease(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	tpl := one("1")
	tpl.ActiveDeadline = "1m"
	id := w.submit("A", "s1", tpl)[0]
	// No cluster for 50s: the deadline does not run while the job waits.
	w.clock.Advance(50 * time.Second)
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.cycle()
	leased := w.clock.Now()
	hold := []JobReport{{Job: id, Attempt: 1, Phase: PhaseRunning}}
	for w.clock.Now().Sub(leased) < time.Minute {
		w.report(Report{Cluster: "c1", Jobs: hold})
		rep := w.cycle()
		require.Zero(t, rep.DeadlineExceeded, "at %s after the lease", w.clock.Now().Sub(leased))
		require.Equal(t, events.RunningState, w.state(id))
		w.clock.Advance(10 * time.Second)
	}
	w.report(Report{Cluster: "c1", Jobs: hold})
	rep := w.cycle()
	require.Equal(t, 1, rep.DeadlineExceeded)
	st := w.status(id)
	require.Equal(t, events.FailedState, st.State)
	require.Contains(t, st.Reason, "deadline exceeded")
	log := w.jobLog("A", "s1", id)
	require.Equal(t, events.Failed, log[len(log)-1].Type)
	require.False(t, log[len(log)-1].Requeued)

	// The executor still running it is told to stop.
	reply := w.report(Report{Cluster: "c1", Jobs: hold})
	require.Len(t, reply.Kill, 1)
	require.Equal(t, id, reply.Kill[0].Job)
	require.Zero(t, w.cycle().Leased, "a job failed on its deadline is not leased again")
}

// fullOfPreemptible fills cluster c1 (one node of cpu cores) with queue A's
// preemptible one-cpu jobs, all running.
func fullOfPreemptible(t *testing.T, cpu int, opts ...func(*Config)) (*world, []string) {
	w := newWorld(t, opts...)
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, int64(cpu))})
	tpl := cpuJobs(cpu, "1")
	tpl.PriorityClass = flotilla.ArmadaPreemptible
	ids := w.submit("A", "s1", tpl)
	require.Equal(t, cpu, w.cycle().Leased)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, w.leasesOf("c1"))})
	return w, ids
}

// preempted returns the preempted events of a job set.
func (w *world) preempted(queue, set string) []events.Event {
	var out []events.Event
	for _, e := range w.log(queue, set) {
		if e.Type == events.Preempted {
			out = append(out, e)
		}
	}
	return out
}

func TestPreemptionForUrgencyWritesPreemptedEventsNamingTheJobItWasFor(t *testing.T) {
	w, _ := fullOfPreemptible(t, 4)
	urgent := JobTemplate{Requests: map[string]string{"cpu": "2"}, PriorityClass: flotilla.ArmadaDefault}
	// In the victims' own queue, so that fair share is not the reason.
	id := w.submit("A", "s2", urgent)[0]
	rep := w.cycle()
	require.Equal(t, 2, rep.Preempted)
	require.Equal(t, 1, rep.Leased)
	ps := w.preempted("A", "s1")
	require.Len(t, ps, 2)
	for _, e := range ps {
		require.Contains(t, e.Reason, "higher priority")
		require.Contains(t, e.Reason, "for job "+id+" of queue A")
		require.False(t, e.Requeued)
		require.Equal(t, "c1", e.Cluster)
		require.Equal(t, events.PreemptedState, w.state(e.Job))
	}
	// The executor is told to kill what it still runs.
	reply := w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: ps[0].Job, Attempt: 1, Phase: PhaseRunning}}})
	require.Len(t, reply.Kill, 1)
	require.Equal(t, ps[0].Job, reply.Kill[0].Job)
}

func TestPreemptionToFairShareWritesPreemptedEventsNamingTheShares(t *testing.T) {
	w, _ := fullOfPreemptible(t, 4)
	tpl := cpuJobs(4, "1")
	tpl.PriorityClass = flotilla.ArmadaPreemptible
	bs := w.submit("B", "s1", tpl)
	rep := w.cycle()
	require.Equal(t, 2, rep.Preempted)
	ps := w.preempted("A", "s1")
	require.Len(t, ps, 2)
	for _, e := range ps {
		require.Contains(t, e.Reason, "fair share")
		require.Contains(t, e.Reason, "queue A held share 1.000 above its fair share 0.500")
		require.Regexp(t, `, for job job-[5-8] of queue B$`, e.Reason)
	}
	require.Equal(t, "job-5", bs[0])
}

func TestRequeuePreemptedQueuesThePreemptedJobAgainAndItIsLeasedLater(t *testing.T) {
	w, _ := fullOfPreemptible(t, 2, func(c *Config) { c.RequeuePreempted = true })
	urgent := JobTemplate{Requests: map[string]string{"cpu": "1"}, PriorityClass: flotilla.ArmadaDefault}
	uid := w.submit("B", "s1", urgent)[0]
	require.Equal(t, 1, w.cycle().Preempted)
	ps := w.preempted("A", "s1")
	require.Len(t, ps, 1)
	require.True(t, ps[0].Requeued)
	victim := ps[0].Job
	require.Equal(t, events.Queued, w.state(victim))
	require.Equal(t, 1, w.status(victim).Attempts)

	// The urgent job ends; the victim's turn comes again.
	reply := w.report(Report{Cluster: "c1"})
	require.Len(t, reply.Leases, 1)
	require.Equal(t, uid, reply.Leases[0].Job.ID)
	w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: uid, Attempt: 1, Phase: PhaseSucceeded}}})
	require.Equal(t, 1, w.cycle().Leased)
	st := w.status(victim)
	require.Equal(t, events.LeasedState, st.State)
	require.Equal(t, 2, st.Attempts)
	require.Equal(t, []string{"submitted", "leased", "running", "preempted", "leased"}, types(w.jobLog("A", "s1", victim)))
}

func TestPreemptedJobWhoseCancellationWasRequestedEndsEvenWithRequeuePreempted(t *testing.T) {
	w, ids := fullOfPreemptible(t, 1, func(c *Config) { c.RequeuePreempted = true })
	_, err := w.srv.Cancel(w.ctx, ids[0])
	require.NoError(t, err)
	w.submit("B", "s1", JobTemplate{Requests: map[string]string{"cpu": "1"}, PriorityClass: flotilla.ArmadaDefault})
	require.Equal(t, 1, w.cycle().Preempted)
	ps := w.preempted("A", "s1")
	require.Len(t, ps, 1)
	require.False(t, ps[0].Requeued)
	require.Equal(t, events.PreemptedState, w.state(ids[0]))
}

func TestGangLandsInOneClusterWithAllItsMembersLeasedInOneCycle(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	// Two clusters of three one-cpu nodes: six free cpus in all, three in
	// each.
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 3, 1)})
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 3, 1)})
	big := w.submit("A", "s1", gangOf("big", 4))
	rep := w.cycle()
	require.Zero(t, rep.Leased, "a gang of four does not fit in one cluster")
	for _, id := range big {
		require.Equal(t, events.Queued, w.state(id))
	}
	_, err := w.srv.Cancel(w.ctx, big...)
	require.NoError(t, err)

	small := w.submit("A", "s1", gangOf("small", 3))
	require.Equal(t, 3, w.cycle().Leased)
	cluster := w.clusterOf(small[0])
	for _, id := range small {
		require.Equal(t, cluster, w.clusterOf(id))
	}
	require.Len(t, w.leasesOf(cluster), 3)
}

func TestDrainingServiceLeasesNothingButStillExpiresLeases(t *testing.T) {
	w, id := leasedWorld(t)
	queued := w.submit("A", "s1", one("1"))[0]
	w.srv.Drain()
	w.clock.Advance(DefaultLeaseTimeout)
	w.report(Report{Cluster: "c1"})
	rep := w.cycle()
	require.Nil(t, rep.Result)
	require.Zero(t, rep.Leased)
	require.Equal(t, 1, rep.Expired)
	require.Equal(t, events.Queued, w.state(id))
	require.Equal(t, events.Queued, w.state(queued))
	require.Zero(t, w.cycle().Leased)
}

// cycleWith runs one cycle (Cycle), calling during once Schedule has
// decided and before the decision is written, without the service's
// lock: the moment a submission, cancellation or report can interleave
// with a real cycle.
func (w *world) cycleWith(during func()) *CycleReport {
	w.t.Helper()
	d := &w.srv.st.deps
	inner := d.schedule
	d.schedule = func(ctx context.Context, snap *scheduler.Snapshot, now time.Time) (*scheduler.Result, error) {
		res, err := inner(ctx, snap, now)
		during()
		return res, err
	}
	defer func() { d.schedule = inner }()
	return w.cycle()
}

func TestJobCancelledWhileTheCycleDecidesIsNotLeasedNorTheRestOfItsGang(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 4, 1)})
	solo := w.submit("A", "s1", one("1"), one("1"))
	gang := w.submit("A", "s2", gangOf("g", 2))
	var late []string
	rep := w.cycleWith(func() {
		_, err := w.srv.Cancel(w.ctx, solo[0], gang[1])
		require.NoError(t, err)
		late = w.submit("A", "s3", one("1")) // stored meanwhile, queued after
	})
	require.Equal(t, 1, rep.Leased, "only the job that did not change is leased")
	require.Equal(t, events.LeasedState, w.state(solo[1]))
	require.Equal(t, events.CancelledState, w.state(solo[0]))
	require.Equal(t, events.CancelledState, w.state(gang[1]))
	require.Equal(t, events.CancelledState, w.state(gang[0]), "a gang is leased whole or not at all; its mate, which can no longer run whole, is cancelled")
	require.Equal(t, []string{"submitted", "cancelled"}, types(w.jobLog("A", "s1", solo[0])))

	// The store saw the changes made during the cycle.
	require.Equal(t, 1, w.srv.st.queued.store.Len()) // the late job
	require.Equal(t, 1, w.cycle().Leased)
	require.Equal(t, events.LeasedState, w.state(late[0]))
}

func TestOnlyOneCycleRunsAtATime(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.submit("A", "s1", one("1"))
	rep := w.cycleWith(func() {
		_, err := w.srv.Cycle(w.ctx)
		require.ErrorIs(t, err, ErrCycleRunning)
	})
	require.Equal(t, 1, rep.Leased)
	require.Len(t, w.log("A", "s1"), 2)
}

// The snapshot's buffer of running jobs is kept for the next cycle with
// no job in it, whether Schedule succeeded or failed: a failed cycle
// must not keep the jobs (ended, cancelled, collected meanwhile)
// reachable until the next one.
func TestFailedCycleKeepsNoJobInTheRunningBuffer(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.submit("A", "s1", cpuJobs(3, "1"))
	require.Equal(t, 3, w.cycle().Leased)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, w.leasesOf("c1"))})
	w.cycle() // a cycle over the running jobs: the buffer has room for them
	failing := errors.New("schedule failed")
	var seen int
	w.srv.st.schedule = func(_ context.Context, snap *scheduler.Snapshot, _ time.Time) (*scheduler.Result, error) {
		seen = len(snap.Running)
		return nil, failing
	}
	_, err := w.srv.Cycle(w.ctx)
	require.ErrorIs(t, err, failing)
	require.Equal(t, 3, seen, "the cycle's snapshot had the running jobs")
	buf := w.srv.st.scratch.running[:cap(w.srv.st.scratch.running)]
	require.NotEmpty(t, buf)
	for i, r := range buf {
		require.Zero(t, r, "running buffer entry %d", i)
	}
}

func TestClusterWhoseNodeShrankUnderItsJobsDoesNotStopTheCycles(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.submit("A", "s1", cpuJobs(3, "1"))
	require.Equal(t, 3, w.cycle().Leased)
	hold := held(PhaseRunning, w.leasesOf("c1"))
	// The node now has 2 cpus under its 3 running jobs; another cluster
	// has room.
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 2), Jobs: hold})
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 2)})
	ids := w.submit("A", "s2", cpuJobs(3, "1"))
	rep, err := w.srv.Cycle(w.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Leased)
	for _, id := range ids {
		require.NotEqual(t, "c1", w.clusterOf(id), "the shrunk node is full")
	}
}

// A node that shrank under its jobs is full: its queue's next job of the
// same priority finds no room there (its evicted jobs go back, nothing
// goes), and a job of higher priority lands there only by preempting enough of them
// that it fits the node's new total: 3 one-core jobs on a node now of 2,
// a one-core urgent job preempts two of them.
func TestNodeThatShrankUnderItsJobsTakesANewJobOnlyByPreemptingItBackUnderItsTotal(t *testing.T) {
	w, ids := fullOfPreemptible(t, 3)
	hold := make([]JobReport, len(ids))
	for i, id := range ids {
		hold[i] = JobReport{Job: id, Attempt: 1, Phase: PhaseRunning}
	}
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 2), Jobs: hold})
	same := w.submit("A", "s2", JobTemplate{Requests: map[string]string{"cpu": "1"}, PriorityClass: flotilla.ArmadaPreemptible})[0]
	rep := w.cycle()
	require.Zero(t, rep.Preempted)
	require.Zero(t, rep.Leased)
	require.Equal(t, events.Queued, w.state(same))

	urgent := w.submit("A", "s3", JobTemplate{Requests: map[string]string{"cpu": "1"}, PriorityClass: flotilla.ArmadaDefault})[0]
	rep = w.cycle()
	require.Equal(t, 2, rep.Preempted)
	require.Equal(t, 1, rep.Leased)
	require.Equal(t, "c1", w.clusterOf(urgent))
}

// BenchmarkSnapshot builds a cycle's snapshot of 10 clusters × 1,000
// nodes holding 20,000 live leases.
func BenchmarkSnapshot(b *testing.B) {
	w := newWorld(b)
	w.queue("A")
	for c := range 10 {
		name := "c" + string(rune('0'+c))
		w.report(Report{Cluster: name, Nodes: nodesOf(name, 1000, 4)})
	}
	for range 20 {
		w.submit("A", "s1", cpuJobs(1000, "1"))
	}
	if rep := w.cycle(); rep.Leased != 20000 {
		b.Fatalf("%d leased", rep.Leased)
	}
	now := w.clock.Now()
	b.ReportAllocs()
	for b.Loop() {
		w.srv.mu.Lock()
		snap := w.srv.st.snapshot("default", now)
		w.srv.mu.Unlock()
		if len(snap.Running) != 20000 {
			b.Fatal(len(snap.Running))
		}
	}
}
