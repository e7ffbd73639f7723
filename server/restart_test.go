package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

func TestRestartRebuildsQueuesQueuedJobsLiveLeasesAndClustersAndSequenceNumbersContinue(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	require.NoError(t, w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: "B", PriorityFactor: 2}))
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 2)})
	live := w.submit("A", "s1", one("1"), one("1"), one("1"))
	require.Equal(t, 3, w.cycle().Leased)
	w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: live[0], Attempt: 1, Phase: PhaseRunning}}})
	// live[1] is returned once and leased again; live[2] is asked to stop.
	w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: live[1], Attempt: 1, Phase: PhaseReturned}}})
	require.Equal(t, 1, w.cycle().Leased)
	_, err := w.srv.Cancel(w.ctx, live[2])
	require.NoError(t, err)
	queued := w.submit("A", "s1", one("1"))[0]
	waiting := w.submit("A", "s2", gangOf("g", 2))
	logBefore := w.log("A", "s1")

	w.clock.Advance(20 * time.Second)
	w.restart()

	qs, err := w.srv.ListQueues(w.ctx)
	require.NoError(t, err)
	require.Len(t, qs, 2)
	require.Equal(t, 2.0, qs[1].PriorityFactor)
	require.Equal(t, 3, qs[0].Queued)
	require.Equal(t, 2, qs[0].Leased)
	require.Equal(t, 1, qs[0].Running)
	require.Equal(t, []string{"c1-n0", "c1-n1"}, w.nodeNames("c1"))
	for i, want := range []events.State{events.RunningState, events.LeasedState, events.LeasedState} {
		st := w.status(live[i])
		require.Equal(t, want, st.State)
		require.Equal(t, "c1", st.Cluster)
	}
	require.Equal(t, 2, w.status(live[1]).Attempts)
	require.Equal(t, []string{"c1"}, w.srv.st.jobs.get(live[1]).sched().AvoidClusters, "failed clusters are avoided after a restart too")
	require.True(t, w.status(live[2]).CancelRequested)

	// The gang id is still in use; client-less resubmission is refused.
	_, err = w.submitErr("A", "s2", gangOf("g", 2))
	requireProblems(t, err, problem{"gang.id", "g", flotilla.ErrDuplicate})

	// Leases get a fresh timeout from the restart: at 40s after they were
	// made, with no renewal since, they are alive. The cluster takes part
	// in cycles once its executor reports to the new process; then the
	// queued job is leased in the first cycle.
	w.clock.Advance(20 * time.Second)
	require.Zero(t, w.cycle().Leased, "no report since the restart: the cluster is not scheduled on")
	w.report(Report{Cluster: "c1"})
	rep := w.cycle()
	require.Zero(t, rep.Expired)
	require.Equal(t, 1, rep.Leased)
	require.Equal(t, events.LeasedState, w.state(queued))
	require.Equal(t, events.Queued, w.state(waiting[0]), "the gang does not fit")
	reply := w.report(Report{Cluster: "c1", Jobs: []JobReport{
		{Job: live[0], Attempt: 1, Phase: PhaseRunning},
		{Job: live[2], Attempt: 1, Phase: PhaseRunning},
	}})
	require.Len(t, reply.Kill, 1, "the cancellation requested before the restart is carried out")
	require.Equal(t, live[2], reply.Kill[0].Job)
	require.Len(t, reply.Leases, 2) // live[1] (attempt 2) and queued
	w.clock.Advance(10 * time.Second)
	require.Equal(t, 1, w.cycle().Expired, "live[1], not renewed since the restart 30s ago")

	// The log continues the numbering of the stored events.
	logAfter := w.log("A", "s1")
	require.Equal(t, logBefore, logAfter[:len(logBefore)])
	require.Greater(t, len(logAfter), len(logBefore))
	for i, e := range logAfter {
		require.Equal(t, uint64(i+1), e.Seq)
	}
}

func TestRestartedServiceExpiresLeasesOfAClusterThatNeverReportsAgain(t *testing.T) {
	w, id := leasedWorld(t)
	w.restart()
	w.clock.Advance(DefaultLeaseTimeout - time.Nanosecond)
	require.Zero(t, w.cycle().Expired)
	w.clock.Advance(time.Nanosecond)
	rep := w.cycle()
	require.Equal(t, 1, rep.Expired)
	require.Zero(t, rep.Leased, "the silent cluster left scheduling")
	require.Equal(t, events.Queued, w.state(id))
}

// outage is a backend that goes away: while down every read the service
// loads from fails with backend.ErrUnavailable; lose makes the next
// Commit apply its write and report its outcome unknown, and take the
// backend down.
type outage struct {
	backend.Backend
	down, lose bool
}

func (o *outage) unavailable() error {
	if o.down {
		return fmt.Errorf("connection refused: %w", backend.ErrUnavailable)
	}
	return nil
}

func (o *outage) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	if err := o.unavailable(); err != nil {
		return nil, err
	}
	out, err := o.Backend.Commit(ctx, w)
	if err == nil && o.lose {
		o.lose, o.down = false, true
		return nil, fmt.Errorf("connection lost: %w", backend.ErrOutcomeUnknown)
	}
	return out, err
}

func (o *outage) ListQueues(ctx context.Context) ([]flotilla.Queue, error) {
	if err := o.unavailable(); err != nil {
		return nil, err
	}
	return o.Backend.ListQueues(ctx)
}

func (o *outage) LiveJobs(ctx context.Context, fn func(backend.Record) error) error {
	if err := o.unavailable(); err != nil {
		return err
	}
	return o.Backend.LiveJobs(ctx, fn)
}

func TestAReloadThatFailsLeavesNoPartialStateAndTheNextCallReloads(t *testing.T) {
	// A write's outcome is unknown and the backend is down, so the reload
	// that follows fails half-way. While the backend stays down, calls
	// fail with ErrUnavailable instead of answering from a partial state
	// (no queues, no jobs); once it is back, the next call reloads and the
	// service goes on with every job, the lost write's included.
	var o *outage
	w := newWorld(t, func(c *Config) { o = &outage{Backend: c.Backend}; c.Backend = o })
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	leased := w.submit("A", "s1", one("1"))[0]
	require.Equal(t, 1, w.cycle().Leased)
	o.lose = true
	_, err := w.srv.Submit(w.ctx, &SubmitRequest{Queue: "A", JobSet: "s1", Jobs: []JobTemplate{one("1")}})
	require.ErrorIs(t, err, backend.ErrOutcomeUnknown)

	_, err = w.srv.ListQueues(w.ctx)
	require.ErrorIs(t, err, backend.ErrUnavailable)
	_, err = w.srv.Queue(w.ctx, "A")
	require.ErrorIs(t, err, backend.ErrUnavailable)
	_, err = w.srv.Submit(w.ctx, &SubmitRequest{Queue: "A", JobSet: "s1", Jobs: []JobTemplate{one("1")}})
	require.ErrorIs(t, err, backend.ErrUnavailable, "not a queue that does not exist")
	_, err = w.srv.Cycle(w.ctx)
	require.ErrorIs(t, err, backend.ErrUnavailable)
	_, err = w.srv.Report(w.ctx, &Report{Cluster: "c1", Jobs: []JobReport{{Job: leased, Attempt: 1, Phase: PhaseRunning}}})
	require.ErrorIs(t, err, backend.ErrUnavailable, "not a report of a job the cluster does not hold")
	_, err = w.srv.Cancel(w.ctx, leased)
	require.ErrorIs(t, err, backend.ErrUnavailable)

	o.down = false
	qs, err := w.srv.ListQueues(w.ctx)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, 1, qs[0].Queued, "the write whose outcome was unknown was stored")
	require.Equal(t, 1, qs[0].Leased)
	w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: leased, Attempt: 1, Phase: PhaseRunning}}})
	require.Equal(t, events.RunningState, w.state(leased))
	require.Equal(t, 1, w.cycle().Leased)
}
