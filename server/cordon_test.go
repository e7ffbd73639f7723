package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

func queueCordon(name string) backend.Cordon {
	return backend.Cordon{Kind: backend.CordonQueue, Name: name}
}
func clusterCordon(name string) backend.Cordon {
	return backend.Cordon{Kind: backend.CordonCluster, Name: name}
}

// A cordoned queue's queued jobs are not leased, and say why; its running
// job goes on; another queue's jobs are leased as before; once uncordoned
// its jobs are leased. The cordon holds across a restart.
func TestCordonedQueueLeasesNothingItsRunningJobsGoOnAndARestartKeepsIt(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 4, 1)})
	first := w.submit("A", "s", JobTemplate{Requests: map[string]string{"cpu": "1"}})
	require.Equal(t, 1, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r.Leases)})

	require.NoError(t, w.srv.Cordon(w.ctx, queueCordon("A"), true))
	a := w.submit("A", "s", cpuJobs(2, "1"))
	b := w.submit("B", "s", cpuJobs(2, "1"))
	w.restart()
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r.Leases)})
	require.Equal(t, 2, w.cycle().Leased, "B's two jobs only")
	for _, id := range b {
		require.Equal(t, events.LeasedState, w.state(id))
	}
	st, err := w.srv.Status(w.ctx, a...)
	require.NoError(t, err)
	for _, s := range st {
		require.Equal(t, events.Queued, s.State)
		require.Equal(t, "queue A is cordoned: its jobs are not leased until it is uncordoned", s.Reason)
	}
	require.Equal(t, events.RunningState, w.state(first[0]), "a cordon preempts nothing")
	q, err := w.srv.Queue(w.ctx, "A")
	require.NoError(t, err)
	require.True(t, q.Cordoned)

	require.NoError(t, w.srv.Cordon(w.ctx, queueCordon("A"), false))
	require.Equal(t, 1, w.cycle().Leased, "the one free node goes to A")
}

// A cordoned cluster gets no new lease, its running job goes on, and its
// executor hears of the cordon in each report's answer; once uncordoned
// it gets leases again. The cordon holds across a restart.
func TestCordonedClusterGetsNoLeaseAndItsExecutorIsTold(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 1)})
	first := w.submit("A", "s", JobTemplate{Requests: map[string]string{"cpu": "1"}})
	require.Equal(t, 1, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	require.False(t, r.Cordoned)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r.Leases)})
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 1)})

	require.NoError(t, w.srv.Cordon(w.ctx, clusterCordon("c1"), true))
	w.restart()
	rc1 := w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r.Leases)})
	require.True(t, rc1.Cordoned)
	require.Empty(t, rc1.Kill, "its running job goes on")
	require.False(t, w.report(Report{Cluster: "c2"}).Cordoned)
	w.submit("A", "s", cpuJobs(3, "1"))
	require.Equal(t, 1, w.cycle().Leased, "c2's one node only")
	require.Empty(t, w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r.Leases)}).Leases)
	require.Len(t, w.report(Report{Cluster: "c2"}).Leases, 1)
	require.Equal(t, events.RunningState, w.state(first[0]))
	cs, err := w.srv.ListClusters(w.ctx)
	require.NoError(t, err)
	require.Len(t, cs, 2)
	require.True(t, cs[0].Cordoned)
	require.Equal(t, 1, cs[0].Running)
	require.False(t, cs[1].Cordoned)

	require.NoError(t, w.srv.Cordon(w.ctx, clusterCordon("c1"), false))
	require.Equal(t, 1, w.cycle().Leased, "c1's free node")
	require.False(t, w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r.Leases)}).Cordoned)
}

// Cordoning what does not exist, or something of no known kind, is
// refused and stores nothing; a queue deleted while cordoned comes back
// uncordoned.
func TestCordonRefusalsStoreNothingAndADeletedQueueForgetsItsCordon(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	for _, c := range []backend.Cordon{queueCordon("Z"), clusterCordon("c9")} {
		require.ErrorIs(t, w.srv.Cordon(w.ctx, c, true), backend.ErrNotFound, "%v", c)
	}
	require.ErrorIs(t, w.srv.Cordon(w.ctx, backend.Cordon{Kind: "node", Name: "n"}, true), flotilla.ErrMalformed)
	cs, err := w.be.ListCordons(w.ctx)
	require.NoError(t, err)
	require.Empty(t, cs)
	require.NoError(t, w.srv.Cordon(w.ctx, queueCordon("A"), true))
	require.NoError(t, w.srv.DeleteQueue(w.ctx, "A"))
	w.queue("A")
	q, err := w.srv.Queue(w.ctx, "A")
	require.NoError(t, err)
	require.False(t, q.Cordoned)
	cs, err = w.be.ListCordons(w.ctx)
	require.NoError(t, err)
	require.Empty(t, cs)
}
