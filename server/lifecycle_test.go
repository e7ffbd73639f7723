package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/events"
)

// Scenario tests of the job life cycle across executors: each follows one
// story through reports and cycles and checks the events it leaves.

// jobEvents returns the events of job id in queue/set's log, in order.
func (w *world) jobEvents(queue, set, id string) []events.Event {
	w.t.Helper()
	evs, err := w.srv.Events(w.ctx, queue, set, 0, 0)
	require.NoError(w.t, err)
	var out []events.Event
	for _, e := range evs {
		if e.Job == id {
			out = append(out, e)
		}
	}
	return out
}

// eventTypes lists the events' types.
func eventTypes(evs []events.Event) []events.Type {
	out := make([]events.Type, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// requireLeaseExpiredOnThenLeasedTo requires the job's log to show it
// running on from, its lease there expiring (requeued) no sooner than one
// lease timeout after its last renewal, then leased to to.
func requireLeaseExpiredOnThenLeasedTo(t *testing.T, evs []events.Event, from, to string, renewed time.Time) {
	t.Helper()
	require.Equal(t, []events.Type{events.Submitted, events.Leased, events.Running, events.LeaseExpired, events.Leased}, eventTypes(evs))
	require.Equal(t, from, evs[1].Cluster)
	exp := evs[3]
	require.Equal(t, from, exp.Cluster)
	require.True(t, exp.Requeued, "the expired job is queued again")
	require.Equal(t, 1, exp.Attempt)
	require.GreaterOrEqual(t, exp.Time.Sub(renewed), DefaultLeaseTimeout)
	again := evs[4]
	require.Equal(t, to, again.Cluster)
	require.Equal(t, 2, again.Attempt)
	require.False(t, again.Time.Before(exp.Time))
}

func TestGangLandsInOneClusterAndWaitsWhileOnlySeveralClustersTogetherHaveRoom(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	// c1 has two 4-cpu nodes, one of them taken by a 4-cpu job; c2 has one
	// free 4-cpu node. Together they have room for the gang's 3 × 2 cpu,
	// neither alone.
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	big := w.submit("A", "s0", JobTemplate{Requests: map[string]string{"cpu": "4"}, Runtime: "10s"})
	w.cycle()
	r1 := w.report(Report{Cluster: "c1"})
	require.Len(t, r1.Leases, 1)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r1.Leases)})
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 4)})

	g := JobTemplate{Count: intp(3), Requests: map[string]string{"cpu": "2"}, Gang: &GangSpec{ID: "g2", Cardinality: 3}}
	ids := w.submit("A", "s2", g)
	rep := w.cycle()
	require.Zero(t, rep.Leased, "no cluster alone has room for the gang")
	for _, id := range ids {
		require.Equal(t, events.Queued, w.state(id))
	}

	// The big job ends: c1 now has room for the whole gang.
	w.clock.Advance(10 * time.Second)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, r1.Leases)})
	w.report(Report{Cluster: "c2"})
	rep = w.cycle()
	require.Equal(t, 3, rep.Leased)
	for _, id := range ids {
		evs := w.jobEvents("A", "s2", id)
		require.Equal(t, []events.Type{events.Submitted, events.Leased}, eventTypes(evs))
		require.Equal(t, "c1", evs[1].Cluster, "job %s", id)
	}
	require.Equal(t, events.SucceededState, w.state(big[0]))
}

func TestCancellingARunningJobRequestsItsStopAndEndsCancelledWhenTheExecutorStopsItOrItsLeaseExpires(t *testing.T) {
	for _, tc := range []struct {
		name string
		// end makes the cancelled job's lease end, given the executor's
		// leases; it returns what the job's last event must say.
		end func(w *world, ls []Lease) string
	}{
		{name: "the executor stops it", end: func(w *world, ls []Lease) string {
			reply := w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls)})
			require.Len(w.t, reply.Kill, 1, "the executor is told to kill it")
			require.Equal(w.t, ls[0].Job.ID, reply.Kill[0].Job)
			require.Equal(w.t, ls[0].Attempt, reply.Kill[0].Attempt)
			require.Equal(w.t, events.RunningState, w.state(ls[0].Job.ID), "running until the executor stopped it")
			w.report(Report{Cluster: "c1", Jobs: held(PhaseStopped, ls)})
			return "returned by cluster c1"
		}},
		{name: "the executor dies instead", end: func(w *world, ls []Lease) string {
			w.clock.Advance(DefaultLeaseTimeout - time.Second)
			w.cycle()
			require.Equal(w.t, events.RunningState, w.state(ls[0].Job.ID), "running until its lease expires")
			w.clock.Advance(time.Second)
			rep := w.cycle()
			require.Equal(w.t, 1, rep.Expired)
			return "lease not renewed by cluster c1"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.queue("A")
			w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
			ids := w.submit("A", "s1", cpuJob())
			w.cycle()
			r := w.report(Report{Cluster: "c1"})
			w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r.Leases)})

			res, err := w.srv.Cancel(w.ctx, ids[0])
			require.NoError(t, err)
			require.Equal(t, ids, res.Requested)
			st, err := w.srv.Status(w.ctx, ids[0])
			require.NoError(t, err)
			require.Equal(t, events.RunningState, st[0].State)
			require.True(t, st[0].CancelRequested)

			reason := tc.end(w, r.Leases)
			require.Equal(t, events.CancelledState, w.state(ids[0]))
			evs := w.jobEvents("A", "s1", ids[0])
			require.Equal(t, []events.Type{events.Submitted, events.Leased, events.Running, events.CancelRequested, events.Cancelled}, eventTypes(evs))
			last := evs[4]
			require.Equal(t, "c1", last.Cluster)
			require.Equal(t, 1, last.Attempt)
			require.False(t, last.Requeued)
			require.Contains(t, last.Reason, reason)
			// Nothing is leased again: the job has ended.
			w.clock.Advance(time.Second)
			require.Empty(t, w.report(Report{Cluster: "c1"}).Leases)
			require.Zero(t, w.cycle().Leased)
		})
	}
}
