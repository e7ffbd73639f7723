package events

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serviceTable is SERVICE.md's life-cycle table, transcribed by hand: for
// each (from, event) the state after it, keyed also by the event's Requeued
// flag and whether a cancellation is pending. A combination not listed is
// refused.
type cell struct {
	from      State
	typ       Type
	requeued  bool
	cancelReq bool
}

var serviceTable = map[cell]State{
	{None, Submitted, false, false}:               Queued,
	{Queued, Leased, false, false}:                LeasedState,
	{LeasedState, Running, false, false}:          RunningState,
	{LeasedState, Running, false, true}:           RunningState,
	{RunningState, Succeeded, false, false}:       SucceededState,
	{RunningState, Succeeded, false, true}:        SucceededState,
	{Queued, Cancelled, false, false}:             CancelledState,
	{LeasedState, Cancelled, false, true}:         CancelledState,
	{RunningState, Cancelled, false, true}:        CancelledState,
	{LeasedState, CancelRequested, false, false}:  LeasedState,
	{RunningState, CancelRequested, false, false}: RunningState,
	{Queued, Reprioritized, false, false}:         Queued,
}

func init() {
	for _, from := range []State{LeasedState, RunningState} {
		for _, cancelReq := range []bool{false, true} {
			serviceTable[cell{from, Failed, false, cancelReq}] = FailedState
			for _, t := range []Type{LeaseExpired, LeaseReturned} {
				serviceTable[cell{from, t, false, cancelReq}] = FailedState
				if !cancelReq {
					serviceTable[cell{from, t, true, cancelReq}] = Queued
				}
			}
			serviceTable[cell{from, Preempted, false, cancelReq}] = PreemptedState
			if !cancelReq {
				serviceTable[cell{from, RunFailed, false, cancelReq}] = Queued
				serviceTable[cell{from, Preempted, true, cancelReq}] = Queued
			}
		}
	}
}

// jobIn returns a job in state s, leased on c1/n1 at attempt 1 when live.
func jobIn(s State, cancelReq bool) Job {
	j := Job{ID: "j", Queue: "A", JobSet: "s", State: s}
	if s == None {
		return Job{}
	}
	if s.Live() || s.Terminal() {
		j.Attempts = 1
	}
	if s.Live() {
		j.Cluster, j.Node, j.CancelRequested = "c1", "n1", cancelReq
	}
	return j
}

func eventOf(t Type, requeued bool) Event {
	e := Event{Queue: "A", JobSet: "s", Job: "j", Type: t, Requeued: requeued}
	if t == Leased {
		e.Cluster, e.Node, e.Attempt = "c2", "n2", 1
	}
	if t == Reprioritized {
		e.Priority = 7
	}
	if t == RunFailed {
		e.Rule = 1
	}
	return e
}

// TestTransitionsAreExactlyServiceTable tries every state, event type,
// requeued flag and pending cancellation against SERVICE.md's table.
func TestTransitionsAreExactlyServiceTable(t *testing.T) {
	allStates := []State{None, Queued, LeasedState, RunningState, SucceededState, FailedState, CancelledState, PreemptedState}
	accepted := 0
	for _, from := range allStates {
		for _, typ := range Types() {
			for _, requeued := range []bool{false, true} {
				for _, cancelReq := range []bool{false, true} {
					if cancelReq && !from.Live() {
						continue
					}
					c := cell{from, typ, requeued, cancelReq}
					name := fmt.Sprintf("%s/%s/requeued=%v/cancel=%v", from, typ, requeued, cancelReq)
					j := jobIn(from, cancelReq)
					got, err := Transition(j, eventOf(typ, requeued))
					want, ok := serviceTable[c]
					if !ok {
						require.Error(t, err, name)
						assert.ErrorIs(t, err, ErrRefused, name)
						var te *TransitionError
						require.True(t, errors.As(err, &te), name)
						assert.Equal(t, from, te.From, name)
						assert.Equal(t, j, got, "%s: a refusal changes nothing", name)
						continue
					}
					require.NoError(t, err, name)
					assert.Equal(t, want, got.State, name)
					accepted++
				}
			}
		}
	}
	assert.Equal(t, len(serviceTable), accepted, "every table row is reachable")
}

func TestTransitionCancelRequestedKeepsStateAndMarksTheJob(t *testing.T) {
	j, err := Transition(jobIn(RunningState, false), eventOf(CancelRequested, false))
	require.NoError(t, err)
	assert.Equal(t, RunningState, j.State)
	assert.True(t, j.CancelRequested)
	assert.Equal(t, "c1", j.Cluster, "the lease stays until the executor stops the job")
}

func TestTransitionLeaseCountsAttempts(t *testing.T) {
	j, err := Transition(Job{}, Event{Queue: "A", JobSet: "s", Job: "j", Type: Submitted})
	require.NoError(t, err)
	for attempt := 1; attempt <= 3; attempt++ {
		bad := Event{Queue: "A", JobSet: "s", Job: "j", Type: Leased, Cluster: "c1", Node: "n1", Attempt: attempt + 1}
		_, err := Transition(j, bad)
		require.ErrorIs(t, err, ErrRefused, "attempt %d skips one", attempt+1)
		lease := bad
		lease.Attempt = attempt
		j, err = Transition(j, lease)
		require.NoError(t, err)
		assert.Equal(t, attempt, j.Attempts)
		j, err = Transition(j, Event{Queue: "A", JobSet: "s", Job: "j", Type: LeaseExpired, Requeued: true})
		require.NoError(t, err)
		assert.Equal(t, Queued, j.State)
		assert.Empty(t, j.Cluster, "an expired lease is gone")
	}
	assert.Equal(t, []string{"c1"}, j.FailedClusters, "each failed cluster once")
}

func TestTransitionRefusesEventsAboutAStaleLease(t *testing.T) {
	j := jobIn(RunningState, false)
	j.Attempts = 2
	for name, e := range map[string]Event{
		"old attempt":   {Queue: "A", JobSet: "s", Job: "j", Type: Succeeded, Attempt: 1},
		"other cluster": {Queue: "A", JobSet: "s", Job: "j", Type: Succeeded, Cluster: "c9"},
		"other job set": {Queue: "A", JobSet: "t", Job: "j", Type: Succeeded},
		"no job":        {Queue: "A", JobSet: "s", Type: Succeeded},
	} {
		got, err := Transition(j, e)
		assert.ErrorIs(t, err, ErrRefused, name)
		assert.Equal(t, j, got, name)
	}
	got, err := Transition(j, Event{Queue: "A", JobSet: "s", Job: "j", Type: Succeeded, Attempt: 2, Cluster: "c1"})
	require.NoError(t, err)
	assert.Equal(t, SucceededState, got.State)
}

func TestTransitionSucceededNeedsExitCodeZero(t *testing.T) {
	_, err := Transition(jobIn(RunningState, false), Event{Queue: "A", JobSet: "s", Job: "j", Type: Succeeded, ExitCode: 3})
	assert.ErrorIs(t, err, ErrRefused)
}

func TestTransitionIsPureFailedClustersNotAliased(t *testing.T) {
	j := jobIn(RunningState, false)
	j.FailedClusters = make([]string, 1, 8)
	j.FailedClusters[0] = "c0"
	a, err := Transition(j, eventOf(LeaseExpired, true))
	require.NoError(t, err)
	j2 := j
	j2.Cluster = "c3"
	b, err := Transition(j2, eventOf(LeaseReturned, true))
	require.NoError(t, err)
	assert.Equal(t, []string{"c0", "c1"}, a.FailedClusters)
	assert.Equal(t, []string{"c0", "c3"}, b.FailedClusters)
	assert.Equal(t, []string{"c0"}, j.FailedClusters)
}

func TestTerminalStatesAreTheLastFour(t *testing.T) {
	for s, want := range map[State]bool{None: false, Queued: false, LeasedState: false, RunningState: false,
		SucceededState: true, FailedState: true, CancelledState: true, PreemptedState: true} {
		assert.Equal(t, want, s.Terminal(), s.String())
	}
}

func TestTransitionRefusesANegativeAttemptOnAnyEvent(t *testing.T) {
	for _, typ := range Types() {
		for _, from := range []State{None, Queued, LeasedState, RunningState} {
			j := jobIn(from, false)
			e := eventOf(typ, false)
			e.Attempt = -1
			got, err := Transition(j, e)
			assert.ErrorIs(t, err, ErrRefused, "%s from %s", typ, from)
			assert.Equal(t, j, got)
		}
	}
}

// TestTransitionRefusesAnEventOnAnotherNodeThanTheLease: a lease names a
// cluster and a node (SERVICE.md), so an event about a leased or running
// job that names a node must name the lease's, as one naming a cluster
// must name its cluster.
func TestTransitionRefusesAnEventOnAnotherNodeThanTheLease(t *testing.T) {
	for _, from := range []State{LeasedState, RunningState} {
		j := jobIn(from, false)
		for _, typ := range []Type{Running, Succeeded, Failed, LeaseExpired, LeaseReturned, Preempted, CancelRequested} {
			e := Event{Queue: "A", JobSet: "s", Job: "j", Type: typ, Cluster: "c1", Node: "n9"}
			got, err := Transition(j, e)
			assert.ErrorIs(t, err, ErrRefused, "%s from %s on node n9", typ, from)
			assert.Equal(t, j, got)
			e.Node = "n1"
			if _, err := Transition(j, e); err != nil && typ != Running && typ != Succeeded {
				t.Errorf("%s from %s on the lease's node: %v", typ, from, err)
			}
		}
	}
}

// A reprioritized event changes a queued job's priority and nothing else;
// the job stays queued, and a priority on another event is refused.
func TestTransitionReprioritizedSetsThePriorityOfAQueuedJobOnly(t *testing.T) {
	q := jobIn(Queued, false)
	e := eventOf(Reprioritized, false)
	e.Priority = 0
	j, err := Transition(q, e)
	require.NoError(t, err)
	assert.Equal(t, Queued, j.State)
	assert.True(t, j.Reprioritized, "priority 0 is a priority too")
	assert.Equal(t, uint32(0), j.Priority)
	e.Priority = 9
	j, err = Transition(j, e)
	require.NoError(t, err)
	assert.Equal(t, uint32(9), j.Priority, "the last reprioritization wins")
	assert.Equal(t, q.Attempts, j.Attempts)
	for _, s := range []State{LeasedState, RunningState, SucceededState, CancelledState} {
		_, err := Transition(jobIn(s, false), e)
		assert.ErrorIs(t, err, ErrRefused, "%s", s)
	}
	l := eventOf(Leased, false)
	l.Priority = 3
	_, err = Transition(q, l)
	assert.ErrorIs(t, err, ErrRefused, "only reprioritized carries a priority")
}

// A run-failed event queues a live job again and counts a retry against
// its rule; with avoidNode the lease's node is avoided from then on. A
// run-failed event without a rule, a rule on an event that names none, a
// rule beyond MaxRules and avoidNode on an event that does not retry are
// refused.
func TestTransitionRunFailedCountsRetriesPerRuleAndAvoidsTheNode(t *testing.T) {
	j := jobIn(RunningState, false)
	e := Event{Queue: "A", JobSet: "s", Job: "j", Type: RunFailed, ExitCode: 137, Rule: 2, AvoidNode: true, Reason: "oom"}
	got, err := Transition(j, e)
	require.NoError(t, err)
	assert.Equal(t, Queued, got.State)
	assert.Equal(t, []int{0, 1}, got.Retries)
	assert.Equal(t, 2, got.Rule)
	assert.Equal(t, []string{"c1/n1"}, got.AvoidNodes)
	assert.Equal(t, 137, got.ExitCode)
	assert.Equal(t, 1, got.Attempts, "a retry is no lease")
	assert.Empty(t, got.Cluster)
	assert.Nil(t, j.Retries, "the job given is unchanged")

	l := Event{Queue: "A", JobSet: "s", Job: "j", Type: Leased, Cluster: "c1", Node: "n1", Attempt: 2}
	got, err = Transition(got, l)
	require.NoError(t, err)
	got, err = Transition(got, e)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2}, got.Retries)
	assert.Equal(t, []string{"c1/n1"}, got.AvoidNodes, "each node once")

	f := Event{Queue: "A", JobSet: "s", Job: "j", Type: Failed, ExitCode: 137, Rule: 1}
	l.Attempt = 3
	got, err = Transition(got, l)
	require.NoError(t, err)
	got, err = Transition(got, f)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2}, got.Retries, "a failure retries nothing")
	assert.Equal(t, 1, got.Rule, "the rule that ended it is shown")

	for name, bad := range map[string]Event{
		"no rule":              {Queue: "A", JobSet: "s", Job: "j", Type: RunFailed, ExitCode: 1},
		"rule too big":         {Queue: "A", JobSet: "s", Job: "j", Type: RunFailed, ExitCode: 1, Rule: MaxRules + 1},
		"negative rule":        {Queue: "A", JobSet: "s", Job: "j", Type: Failed, ExitCode: 1, Rule: -1},
		"rule on running":      {Queue: "A", JobSet: "s", Job: "j", Type: Running, Rule: 1},
		"avoid without retry":  {Queue: "A", JobSet: "s", Job: "j", Type: Failed, ExitCode: 1, Rule: 1, AvoidNode: true},
		"avoid without rule":   {Queue: "A", JobSet: "s", Job: "j", Type: LeaseExpired, Requeued: true, AvoidNode: true},
		"avoid on a lease end": {Queue: "A", JobSet: "s", Job: "j", Type: LeaseExpired, Rule: 1, AvoidNode: true},
	} {
		got, err := Transition(j, bad)
		assert.ErrorIs(t, err, ErrRefused, name)
		assert.Equal(t, j, got, name)
	}
	c := jobIn(RunningState, true)
	_, err = Transition(c, e)
	assert.ErrorIs(t, err, ErrRefused, "a cancel-requested job is not retried")

	x, err := Transition(j, Event{Queue: "A", JobSet: "s", Job: "j", Type: LeaseExpired, Requeued: true, Rule: 3, AvoidNode: true})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 0, 1}, x.Retries, "a requeued lease end under a rule counts")
	assert.Equal(t, []string{"c1/n1"}, x.AvoidNodes)
	assert.Equal(t, []string{"c1"}, x.FailedClusters)
}
