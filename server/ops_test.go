package server

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// oneSlot is a world with queue A and cluster c1 of one 1-cpu node, and
// three queued 1-cpu jobs of priority 5 in A/s, the first of them leased
// and running.
func oneSlot(t *testing.T, opts ...func(*Config)) (*world, []string, []Lease) {
	w := newWorld(t, opts...)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 1)})
	ids := w.submit("A", "s", JobTemplate{Count: intp(3), Priority: 5, Requests: map[string]string{"cpu": "1"}, Runtime: "10s"})
	require.Equal(t, 1, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	require.Len(t, r.Leases, 1)
	require.Equal(t, ids[0], r.Leases[0].Job.ID)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r.Leases)})
	return w, ids, r.Leases
}

// finishAndLease lets the running job succeed and returns the job the
// next cycle leases.
func (w *world) finishAndLease(ls []Lease) []Lease {
	w.t.Helper()
	w.clock.Advance(10 * time.Second)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, ls)})
	require.Equal(w.t, 1, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	require.Len(w.t, r.Leases, 1)
	return r.Leases
}

// A reprioritized queued job takes its new place in its queue at once
// (lower runs first): the last job submitted, given priority 1, runs
// before the one submitted before it at 5. A running job named is
// reported and left alone; the events carry the new priority.
func TestReprioritizeMovesQueuedJobsAndLeavesLiveOnesAlone(t *testing.T) {
	w, ids, ls := oneSlot(t)
	res, err := w.srv.Reprioritize(w.ctx, Selection{IDs: []string{ids[2], ids[0]}}, 1, "ops")
	require.NoError(t, err)
	require.Equal(t, ReprioritizeResult{Reprioritized: []string{ids[2]}, Live: []string{ids[0]}}, res)
	evs := w.jobEvents("A", "s", ids[2])
	require.Equal(t, []events.Type{events.Submitted, events.Reprioritized}, eventTypes(evs))
	require.Equal(t, uint32(1), evs[1].Priority)
	require.Contains(t, evs[1].Reason, "ops")
	require.Equal(t, []events.Type{events.Submitted, events.Leased, events.Running}, eventTypes(w.jobEvents("A", "s", ids[0])))
	next := w.finishAndLease(ls)
	require.Equal(t, ids[2], next[0].Job.ID, "the reprioritized job runs first")
	st, err := w.srv.Status(w.ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, events.SucceededState, st[0].State)
}

// Without reprioritization the submit order decides: the check above could
// fail.
func TestWithoutReprioritizeTheEarlierJobRunsFirst(t *testing.T) {
	w, ids, ls := oneSlot(t)
	require.Equal(t, ids[1], w.finishAndLease(ls)[0].Job.ID)
}

// A restarted service rebuilds the priority from the stored state: the
// reprioritized job still runs first.
func TestReprioritizedPriorityHoldsAcrossARestart(t *testing.T) {
	w, ids, ls := oneSlot(t)
	res, err := w.srv.Reprioritize(w.ctx, Selection{Queue: "A", JobSet: "s"}, 1, "ops")
	require.NoError(t, err)
	require.Equal(t, ids[1:], res.Reprioritized)
	_, err = w.srv.Reprioritize(w.ctx, Selection{IDs: []string{ids[1]}}, 9, "ops")
	require.NoError(t, err)
	w.restart()
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls)})
	require.Equal(t, ids[2], w.finishAndLease(ls)[0].Job.ID, "ids[1] was given 9, after ids[2]'s 1")
	rec, err := w.be.Job(w.ctx, ids[1])
	require.NoError(t, err)
	require.True(t, rec.State.Reprioritized)
	require.Equal(t, uint32(9), rec.State.Priority)
	require.Equal(t, uint32(5), rec.Spec.Job.Priority, "the spec never changes")
}

// Bad or unknown selections are refused whole: nothing is written.
func TestReprioritizeRefusalsChangeNothing(t *testing.T) {
	w, ids, _ := oneSlot(t)
	before, err := w.srv.Events(w.ctx, "A", "s", 0, 0)
	require.NoError(t, err)
	for name, c := range map[string]struct {
		sel  Selection
		want error
	}{
		"an unknown id among known ones": {Selection{IDs: []string{ids[1], "nope"}}, backend.ErrNotFound},
		"an unknown queue":               {Selection{Queue: "Z", JobSet: "s"}, backend.ErrNotFound},
		"ids and a queue":                {Selection{IDs: ids[1:2], Queue: "A", JobSet: "s"}, flotilla.ErrInconsistent},
		"a queue without its job set":    {Selection{Queue: "A"}, flotilla.ErrRequired},
		"nothing named":                  {Selection{}, flotilla.ErrRequired},
		"by cluster":                     {Selection{Cluster: "c1"}, flotilla.ErrInconsistent},
	} {
		_, err := w.srv.Reprioritize(w.ctx, c.sel, 1, "ops")
		require.True(t, errors.Is(err, c.want), "%s: %v", name, err)
		var fe *flotilla.FieldError
		require.True(t, errors.As(err, &fe), "%s: a field is named", name)
	}
	after, err := w.srv.Events(w.ctx, "A", "s", 0, 0)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// Preempting a running job ends it as a cycle's preemption would: a
// preempted event naming who and why, on the lease's cluster, node and
// attempt; the executor is told to kill it in its next report's answer,
// with its grace period; its room goes to the next job.
func TestPreemptEndsARunningJobAndTheExecutorIsToldToKillIt(t *testing.T) {
	w, ids, ls := oneSlot(t)
	res, err := w.srv.Preempt(w.ctx, Selection{IDs: []string{ids[0], ids[1]}}, "ops", "runaway")
	require.NoError(t, err)
	require.Equal(t, PreemptResult{Preempted: []string{ids[0]}, Queued: []string{ids[1]}}, res)
	evs := w.jobEvents("A", "s", ids[0])
	last := evs[len(evs)-1]
	require.Equal(t, events.Preempted, last.Type)
	require.Equal(t, "preempted by ops: runaway", last.Reason)
	require.Equal(t, "c1", last.Cluster)
	require.Equal(t, "c1-n0", last.Node)
	require.Equal(t, 1, last.Attempt)
	require.False(t, last.Requeued)
	require.Equal(t, events.PreemptedState, w.state(ids[0]))
	require.Equal(t, []events.Type{events.Submitted}, eventTypes(w.jobEvents("A", "s", ids[1])), "a queued job is left alone")
	r := w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls)})
	require.Len(t, r.Kill, 1)
	require.Equal(t, ids[0], r.Kill[0].Job)
	require.Equal(t, time.Second, r.Kill[0].GracePeriod)
	require.Equal(t, 1, w.cycle().Leased)
	require.Equal(t, events.LeasedState, w.state(ids[1]))
}

// With RequeuePreempted, an operator's preemption queues the job again
// (requeued), as a cycle's does; it is leased again with its next attempt.
func TestPreemptRequeuesWhenTheServiceRequeuesPreemptedJobs(t *testing.T) {
	w, ids, _ := oneSlot(t, func(c *Config) { c.RequeuePreempted = true })
	_, err := w.srv.Reprioritize(w.ctx, Selection{IDs: ids[1:]}, 9, "ops")
	require.NoError(t, err)
	res, err := w.srv.Preempt(w.ctx, Selection{Queue: "A"}, "ops", "")
	require.NoError(t, err)
	require.Equal(t, []string{ids[0]}, res.Preempted)
	require.Equal(t, ids[1:], res.Queued)
	evs := w.jobEvents("A", "s", ids[0])
	require.True(t, evs[len(evs)-1].Requeued)
	require.Equal(t, "preempted by ops", evs[len(evs)-1].Reason)
	require.Equal(t, events.Queued, w.state(ids[0]))
	require.Equal(t, 1, w.cycle().Leased)
	st, err := w.srv.Status(w.ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, events.LeasedState, st[0].State, "priority 5 before the others' 9")
	require.Equal(t, 2, st[0].Attempts)
}

// By cluster and node: only the jobs leased on that node are preempted; a
// gang member's preemption preempts its running mates too.
func TestPreemptByNodePreemptsItsJobsAndTheirGangMates(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 3, 1)})
	solo := w.submit("A", "s", JobTemplate{Requests: map[string]string{"cpu": "1"}})
	gang := w.submit("A", "g", JobTemplate{Count: intp(2), Requests: map[string]string{"cpu": "1"}, Gang: &GangSpec{ID: "g", Cardinality: 2}})
	require.Equal(t, 3, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	node := map[string]string{}
	for _, l := range r.Leases {
		node[l.Job.ID] = l.Node
	}
	_, err := w.srv.Preempt(w.ctx, Selection{Cluster: "c1", Node: "nope"}, "ops", "")
	require.ErrorIs(t, err, backend.ErrNotFound)
	_, err = w.srv.Preempt(w.ctx, Selection{Cluster: "c9"}, "ops", "")
	require.ErrorIs(t, err, backend.ErrNotFound)
	res, err := w.srv.Preempt(w.ctx, Selection{Cluster: "c1", Node: node[gang[0]]}, "ops", "drain")
	require.NoError(t, err)
	require.ElementsMatch(t, gang, res.Preempted)
	require.Equal(t, events.LeasedState, w.state(solo[0]))
	for _, id := range gang {
		require.Equal(t, events.PreemptedState, w.state(id))
	}
}

// Bad or unknown selections are refused whole: nothing is written.
func TestPreemptRefusalsChangeNothing(t *testing.T) {
	w, ids, _ := oneSlot(t)
	before, err := w.srv.Events(w.ctx, "A", "s", 0, 0)
	require.NoError(t, err)
	for name, c := range map[string]struct {
		sel  Selection
		want error
	}{
		"an unknown id among known ones": {Selection{IDs: []string{ids[0], "nope"}}, backend.ErrNotFound},
		"an unknown queue":               {Selection{Queue: "Z"}, backend.ErrNotFound},
		"ids and a cluster":              {Selection{IDs: ids[:1], Cluster: "c1"}, flotilla.ErrInconsistent},
		"a job set without its queue":    {Selection{JobSet: "s"}, flotilla.ErrRequired},
		"a node without its cluster":     {Selection{Node: "c1-n0"}, flotilla.ErrRequired},
		"nothing named":                  {Selection{}, flotilla.ErrRequired},
	} {
		_, err := w.srv.Preempt(w.ctx, c.sel, "ops", "")
		require.True(t, errors.Is(err, c.want), "%s: %v", name, err)
	}
	after, err := w.srv.Events(w.ctx, "A", "s", 0, 0)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// Cancelling a queue (job set "") cancels its queued jobs of every job
// set and asks its running ones to stop; another queue's jobs are left.
func TestCancelJobSetWithoutASetCancelsTheWholeQueue(t *testing.T) {
	w, ids, _ := oneSlot(t)
	w.queue("B")
	other := w.submit("A", "t", cpuJob())
	b := w.submit("B", "s", cpuJob())
	res, err := w.srv.CancelJobSet(w.ctx, "A", "")
	require.NoError(t, err)
	require.ElementsMatch(t, append(ids[1:], other...), res.Cancelled)
	require.Equal(t, []string{ids[0]}, res.Requested)
	require.Equal(t, events.Queued, w.state(b[0]))
}
