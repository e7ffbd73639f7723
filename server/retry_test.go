package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
)

// oomPolicy retries exit 137 (or an oom) twice, off the node that failed,
// within 5 attempts.
func oomPolicy() *events.RetryPolicy {
	return &events.RetryPolicy{MaxAttempts: 5, Rules: []events.RetryRule{
		{OnExitCodes: []int{137, 143}, OnReasons: []events.FailureReason{events.ReasonOOM}, RetryLimit: 2, AvoidSameNode: true},
	}}
}

// policyQueue creates queue name with retry policy p.
func (w *world) policyQueue(name string, p *events.RetryPolicy) {
	w.t.Helper()
	require.NoError(w.t, w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: name}, WithRetryPolicy(p)))
}

// runAndFail leases the job the next cycle places on cluster c and has
// its executor report it running, then failed with exit code and
// reason; it returns the node it ran on.
func (w *world) runAndFail(cluster string, code int, why string) string {
	w.t.Helper()
	require.Equal(w.t, 1, w.cycle().Leased)
	r := w.report(Report{Cluster: cluster})
	require.Len(w.t, r.Leases, 1)
	jr := held(PhaseRunning, r.Leases)
	w.report(Report{Cluster: cluster, Jobs: jr})
	jr[0].Phase, jr[0].ExitCode, jr[0].FailureReason = PhaseFailed, code, why
	w.report(Report{Cluster: cluster, Jobs: jr})
	return r.Leases[0].Node
}

// queuedJob is job id as the next cycle's snapshot holds it.
func (w *world) queuedJob(id string) *flotilla.Job {
	w.t.Helper()
	snap := w.snapshotNow()
	e, ok := snap.Queued.Get(id)
	require.True(w.t, ok, "job %s is queued in the snapshot", id)
	return e.Job
}

// A run failing with 137 under a rule that retries it twice and avoids
// the node is queued again (run-failed naming the rule and the retry),
// its scheduling copy avoiding the node; the third failure reaches the
// rule's limit and fails the job, saying so. A restart in between keeps
// the count and the node avoided. Status shows the attempts, the rule and
// the retries.
func TestRunFailingWith137IsRetriedAvoidingItsNodeUpToTheRuleLimitThenFails(t *testing.T) {
	w := newWorld(t)
	w.policyQueue("A", oomPolicy())
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	id := w.submit("A", "s1", cpuJobs(1, "1"))[0]

	n1 := w.runAndFail("c1", 137, "oom")
	evs := w.jobEvents("A", "s1", id)
	rf := evs[len(evs)-1]
	require.Equal(t, events.RunFailed, rf.Type)
	require.Equal(t, 1, rf.Rule)
	require.True(t, rf.AvoidNode)
	require.Equal(t, 137, rf.ExitCode)
	require.Equal(t, "exit code 137; exit code 137 (oom): rule 1 retries it (retry 1 of 2, attempt 2 of 5 next)", rf.Reason)
	require.Equal(t, events.Queued, w.state(id))
	require.Equal(t, []string{"c1/" + n1}, w.queuedJob(id).AvoidNodes, "the retry avoids the node that failed")

	w.restart()
	require.Equal(t, []string{"c1/" + n1}, w.queuedJob(id).AvoidNodes, "a restart rebuilds the nodes avoided")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	n2 := w.runAndFail("c1", 137, "")
	require.NotEqual(t, n1, n2, "the retry runs on the other node")
	require.Equal(t, events.Queued, w.state(id))
	require.Equal(t, []string{"c1/" + n1, "c1/" + n2}, w.queuedJob(id).AvoidNodes)

	// Both nodes avoided: the job goes to one of them rather than wait.
	w.runAndFail("c1", 137, "oom")
	evs = w.jobEvents("A", "s1", id)
	last := evs[len(evs)-1]
	require.Equal(t, events.Failed, last.Type)
	require.Equal(t, 1, last.Rule)
	require.Contains(t, last.Reason, "rule 1 matched exit code 137 (oom); its retry limit is reached (2 of 2)")
	st, err := w.srv.Status(w.ctx, id)
	require.NoError(t, err)
	require.Equal(t, events.FailedState, st[0].State)
	require.Equal(t, 3, st[0].Attempts)
	require.Equal(t, 1, st[0].Record.State.Rule)
	require.Equal(t, []int{2}, st[0].Record.State.Retries)
}

// A failed run that no rule matches fails the job at once, saying so; a
// queue without a policy fails it as before (the exit code alone).
func TestFailedRunNoRuleMatchesFailsAtOnceAndWithoutPolicyAsBefore(t *testing.T) {
	w := newWorld(t)
	w.policyQueue("A", oomPolicy())
	w.queue("B")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	a := w.submit("A", "s1", cpuJobs(1, "1"))[0]
	w.runAndFail("c1", 1, "")
	evs := w.jobEvents("A", "s1", a)
	last := evs[len(evs)-1]
	require.Equal(t, events.Failed, last.Type)
	require.Equal(t, "exit code 1; no retry rule matches exit code 1", last.Reason)
	require.Zero(t, last.Rule)

	b := w.submit("B", "s1", cpuJobs(1, "1"))[0]
	w.runAndFail("c1", 137, "oom")
	evs = w.jobEvents("B", "s1", b)
	require.Equal(t, []events.Type{events.Submitted, events.Leased, events.Running, events.Failed}, eventTypes(evs))
	require.Equal(t, "exit code 137", evs[3].Reason)
	require.Equal(t, 137, evs[3].ExitCode)
}

// maxAttempts bounds the retries of a rule without a limit of its own.
func TestFailedRunRetriedUntilMaxAttempts(t *testing.T) {
	w := newWorld(t)
	w.policyQueue("A", &events.RetryPolicy{MaxAttempts: 2, Rules: []events.RetryRule{{OnExitCodes: []int{3}}}})
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	id := w.submit("A", "s1", cpuJobs(1, "1"))[0]
	w.runAndFail("c1", 3, "")
	require.Equal(t, events.Queued, w.state(id))
	require.Nil(t, w.queuedJob(id).AvoidNodes, "the rule does not avoid the node")
	w.runAndFail("c1", 3, "")
	evs := w.jobEvents("A", "s1", id)
	last := evs[len(evs)-1]
	require.Equal(t, events.Failed, last.Type)
	require.Contains(t, last.Reason, "attempts exhausted (2 of maxAttempts 2)")
}

// A run past its active deadline is a failure of reason deadline: a rule
// naming it retries the job.
func TestDeadlineExceededIsRetriedByARuleOnDeadline(t *testing.T) {
	w := newWorld(t)
	w.policyQueue("A", &events.RetryPolicy{Rules: []events.RetryRule{{OnReasons: []events.FailureReason{events.ReasonDeadline}, RetryLimit: 1}}})
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	id := w.submit("A", "s1", JobTemplate{Requests: map[string]string{"cpu": "1"}, ActiveDeadline: "10s"})[0]
	require.Equal(t, 1, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r.Leases)})
	w.clock.Advance(11 * time.Second)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r.Leases)})
	w.cycle()
	evs := w.jobEvents("A", "s1", id)
	require.Equal(t, events.RunFailed, evs[3].Type, "%v", eventTypes(evs))
	require.Contains(t, evs[3].Reason, "deadline exceeded")
	require.Contains(t, evs[3].Reason, "deadline: rule 1 retries it")
}

// A rule on lease-returned bounds the returns by its limit: the second
// return fails the job though maxAttempts would allow more.
func TestLeaseReturnedBoundedByAMatchingRule(t *testing.T) {
	w := newWorld(t)
	w.policyQueue("A", &events.RetryPolicy{MaxAttempts: 9, Rules: []events.RetryRule{
		{OnReasons: []events.FailureReason{events.ReasonLeaseReturned}, RetryLimit: 1, AvoidSameNode: true}}})
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 2, 4)})
	id := w.submit("A", "s1", cpuJobs(1, "1"))[0]
	for i := 0; i < 2; i++ {
		require.Equal(t, 1, w.cycle().Leased)
		var r *ReportReply
		for _, c := range []string{"c1", "c2"} {
			if r = w.report(Report{Cluster: c}); len(r.Leases) == 1 {
				w.report(Report{Cluster: c, Jobs: held(PhaseReturned, r.Leases)})
				break
			}
		}
	}
	evs := w.jobEvents("A", "s1", id)
	require.Equal(t, []events.Type{events.Submitted, events.Leased, events.LeaseReturned, events.Leased, events.LeaseReturned}, eventTypes(evs))
	require.True(t, evs[2].Requeued)
	require.Equal(t, 1, evs[2].Rule)
	require.True(t, evs[2].AvoidNode)
	require.False(t, evs[4].Requeued)
	require.Contains(t, evs[4].Reason, "its retry limit is reached (1 of 1)")
	require.Equal(t, events.FailedState, w.state(id))
}

// Under a retry policy a gang member's failed run is the gang's: retried,
// its running mates are preempted and queued again with it and the gang
// is leased again whole; failed, its mates fail with it.
func TestGangMemberFailedRunRetriesOrFailsTheWholeGang(t *testing.T) {
	w := newWorld(t)
	w.policyQueue("A", oomPolicy())
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 3, 4)})
	ids := w.submit("A", "s1", gangJobs("g", 3, "1"))
	require.Equal(t, 3, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	running := held(PhaseRunning, r.Leases)
	w.report(Report{Cluster: "c1", Jobs: running})
	running[0].Phase, running[0].ExitCode = PhaseFailed, 137
	reply := w.report(Report{Cluster: "c1", Jobs: running})
	for _, id := range ids {
		require.Equal(t, events.Queued, w.state(id), id)
	}
	require.Len(t, reply.Kill, 2, "the running mates are stopped")
	require.Equal(t, 3, w.cycle().Leased, "the gang is leased again whole")

	r = w.report(Report{Cluster: "c1"})
	running = held(PhaseRunning, r.Leases)
	w.report(Report{Cluster: "c1", Jobs: running})
	running[1].Phase, running[1].ExitCode = PhaseFailed, 1
	w.report(Report{Cluster: "c1", Jobs: running})
	for _, id := range ids {
		require.Equal(t, events.FailedState, w.state(id), id)
	}
}

// A report's failure reason goes with a failed job only, and is one an
// executor reports; otherwise the report is refused, naming it.
func TestReportFailureReasonOnlyOnFailedAndKnown(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.submit("A", "s1", cpuJobs(2, "1"))
	require.Equal(t, 2, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	jr := held(PhaseRunning, r.Leases)
	jr[0].FailureReason = "oom"
	jr[1].Phase, jr[1].ExitCode, jr[1].FailureReason = PhaseFailed, 1, "lease-expired"
	_, err := w.srv.Report(w.ctx, &Report{Cluster: "c1", Jobs: jr})
	requireProblems(t, err,
		problem{"jobs[0].failureReason", "oom", flotilla.ErrInconsistent},
		problem{"jobs[1].failureReason", "lease-expired", flotilla.ErrUnknownName})
	require.Equal(t, events.LeasedState, w.state(r.Leases[1].Job.ID), "a refused report changes nothing")
}

// A queue's policy is checked whole with its definition, every problem
// named; a refusal stores nothing. Update keeps the policy unless given,
// nil removes it, and a queue deleted and created again has none.
func TestQueueRetryPolicyCheckedWholeStoredAndRemoved(t *testing.T) {
	w := newWorld(t)
	err := w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: "A", PriorityFactor: -1},
		WithRetryPolicy(&events.RetryPolicy{MaxAttempts: -1, Rules: []events.RetryRule{{OnExitCodes: []int{0}}}}))
	requireProblems(t, err,
		problem{`queue "A".priorityFactor`, "-1", flotilla.ErrNegative},
		problem{`queue "A".retryPolicy.maxAttempts`, "-1", flotilla.ErrOutOfRange},
		problem{`queue "A".retryPolicy.rules[0].onExitCodes[0]`, "0", flotilla.ErrOutOfRange})
	_, err = w.srv.Queue(w.ctx, "A")
	require.Error(t, err, "nothing stored")

	w.policyQueue("A", oomPolicy())
	q, err := w.srv.Queue(w.ctx, "A")
	require.NoError(t, err)
	require.Equal(t, oomPolicy(), q.RetryPolicy)
	require.NoError(t, w.srv.UpdateQueue(w.ctx, flotilla.Queue{Name: "A", PriorityFactor: 2}))
	q, _ = w.srv.Queue(w.ctx, "A")
	require.Equal(t, oomPolicy(), q.RetryPolicy, "an update without the option keeps the policy")
	w.restart()
	q, _ = w.srv.Queue(w.ctx, "A")
	require.Equal(t, oomPolicy(), q.RetryPolicy, "a restart keeps the policy")
	require.NoError(t, w.srv.UpdateQueue(w.ctx, flotilla.Queue{Name: "A"}, WithRetryPolicy(nil)))
	q, _ = w.srv.Queue(w.ctx, "A")
	require.Nil(t, q.RetryPolicy)
	w.policyQueue("B", oomPolicy())
	require.NoError(t, w.srv.DeleteQueue(w.ctx, "B"))
	w.queue("B")
	q, _ = w.srv.Queue(w.ctx, "B")
	require.Nil(t, q.RetryPolicy, "a queue created again starts without a policy")
}

// A returned job's failure reason (a Kubernetes executor returns an
// evicted pod as evicted) is what the rules match instead of
// lease-returned.
func TestReturnedJobsFailureReasonMatchesARuleOnIt(t *testing.T) {
	w := newWorld(t)
	w.policyQueue("A", &events.RetryPolicy{Rules: []events.RetryRule{
		{OnReasons: []events.FailureReason{events.ReasonEvicted}, RetryLimit: 1, AvoidSameNode: true}}})
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	id := w.submit("A", "s1", cpuJobs(1, "1"))[0]
	require.Equal(t, 1, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	jr := held(PhaseReturned, r.Leases)
	jr[0].FailureReason = "evicted"
	w.report(Report{Cluster: "c1", Jobs: jr})
	evs := w.jobEvents("A", "s1", id)
	last := evs[len(evs)-1]
	require.Equal(t, events.LeaseReturned, last.Type)
	require.True(t, last.Requeued)
	require.Equal(t, 1, last.Rule)
	require.True(t, last.AvoidNode)
	require.Equal(t, []string{"c1/" + r.Leases[0].Node}, w.queuedJob(id).AvoidNodes)
}

// A gang that lost a member while its others were live can never run
// whole: when those are queued again later (their leases expired, or a
// retry), they are cancelled, not left queued for ever.
func TestBrokenGangsLiveMembersQueuedAgainLaterAreCancelled(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 3, 4)})
	ids := w.submit("A", "s1", gangJobs("g", 3, "1"))
	require.Equal(t, 3, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	running := held(PhaseRunning, r.Leases)
	w.report(Report{Cluster: "c1", Jobs: running})
	_, err := w.srv.Cancel(w.ctx, ids[1])
	require.NoError(t, err)
	for i := range running {
		if running[i].Job == ids[1] {
			running[i].Phase = PhaseStopped
		}
	}
	w.report(Report{Cluster: "c1", Jobs: running})
	require.Equal(t, events.CancelledState, w.state(ids[1]))
	require.Equal(t, events.RunningState, w.state(ids[0]), "its running mates go on")
	// The executor stops reporting: the leases expire and are queued again.
	w.clock.Advance(time.Hour)
	w.cycle()
	for _, id := range []string{ids[0], ids[2]} {
		require.Equal(t, events.CancelledState, w.state(id), "%s %v", id, eventTypes(w.jobEvents("A", "s1", id)))
	}
}

// failMember leases gang ids the next cycle, has them run, then reports
// member id failed with exit code; it returns the report's reply.
func (w *world) failMember(cluster string, n int, id string, code int) *ReportReply {
	w.t.Helper()
	require.Equal(w.t, n, w.cycle().Leased, "the gang is leased whole")
	r := w.report(Report{Cluster: cluster})
	running := held(PhaseRunning, r.Leases)
	w.report(Report{Cluster: cluster, Jobs: running})
	for i := range running {
		if running[i].Job == id {
			running[i].Phase, running[i].ExitCode = PhaseFailed, code
		}
	}
	return w.report(Report{Cluster: cluster, Jobs: running})
}

// A retry rule's retryLimit counts the gang's failures, once per gang
// failure, whichever member's run failed: with a limit of 1, the gang is
// retried once, and the second failure (of another member) fails it. The
// mates' preempted events name the rule, so the counts are the events'
// and a replay and a restart rebuild them.
func TestGangRetryLimitCountsEachGangFailureOnceWhicheverMemberFailed(t *testing.T) {
	w := newWorld(t)
	w.policyQueue("A", &events.RetryPolicy{MaxAttempts: 10, Rules: []events.RetryRule{{OnExitCodes: []int{1}, RetryLimit: 1}}})
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 3, 4)})
	ids := w.submit("A", "s1", gangJobs("g", 3, "1"))
	w.failMember("c1", 3, ids[0], 1)
	for _, id := range ids {
		require.Equal(t, events.Queued, w.state(id), id)
	}
	st, err := w.srv.Status(w.ctx, ids...)
	require.NoError(t, err)
	for _, s := range st {
		require.Equal(t, []int{1}, s.Record.State.Retries, "job %s: the gang's one retry counts on every member", s.Job)
	}
	w.restart()
	w.report(Report{Cluster: "c1"})
	w.failMember("c1", 3, ids[1], 1)
	st, err = w.srv.Status(w.ctx, ids...)
	require.NoError(t, err)
	for _, s := range st {
		require.Equal(t, events.FailedState, s.State, "job %s: the gang's second failure reaches the limit", s.Job)
	}
	require.Contains(t, st[1].Reason, "its retry limit is reached (1 of 1)")
	evs, err := w.srv.Events(w.ctx, "A", "s1", 0, 0)
	require.NoError(t, err)
	replayed, err := events.Replay("A", "s1", func(yield func(events.Event) bool) {
		for _, e := range evs {
			if !yield(e) {
				return
			}
		}
	})
	require.NoError(t, err)
	for _, s := range st {
		j, ok := replayed.Job(s.Job)
		require.True(t, ok)
		require.Equal(t, []int{1}, j.Retries, "job %s replayed", s.Job)
		require.Equal(t, s.Record.State.Retries, j.Retries, "job %s: the stored counts are the replay's", s.Job)
	}
}
