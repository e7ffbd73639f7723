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
