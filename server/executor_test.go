package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/submit"
)

// leasedWorld is a world with queue A, cluster c1 of one 4-cpu node, and
// one one-cpu job leased to it (attempt 1).
func leasedWorld(t *testing.T, opts ...func(*Config)) (*world, string) {
	w := newWorld(t, opts...)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	id := w.submit("A", "s1", one("1"))[0]
	require.Equal(t, 1, w.cycle().Leased)
	return w, id
}

func TestReportListingALeaseRenewsItPastTheLeaseTimeout(t *testing.T) {
	w, id := leasedWorld(t)
	for range 10 {
		w.clock.Advance(DefaultLeaseTimeout / 2)
		w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: 1, Phase: PhasePending}}})
		require.Zero(t, w.cycle().Expired)
	}
	st := w.status(id)
	require.Equal(t, events.LeasedState, st.State)
	require.Equal(t, 1, st.Attempts)
}

func TestLeaseNotListedExpiresAfterTheLeaseTimeoutAndTheJobIsQueuedAgain(t *testing.T) {
	w, id := leasedWorld(t)
	w.clock.Advance(DefaultLeaseTimeout - time.Nanosecond)
	w.report(Report{Cluster: "c1"}) // alive, but holding nothing
	require.Zero(t, w.cycle().Expired)
	require.Equal(t, events.LeasedState, w.state(id))

	w.clock.Advance(time.Nanosecond)
	rep := w.srv.cycleExpiriesOnly(t)
	require.Equal(t, 1, rep.Expired)
	st := w.status(id)
	require.Equal(t, events.Queued, st.State)
	require.Equal(t, 1, st.Attempts)
	e := w.jobLog("A", "s1", id)[2]
	require.Equal(t, events.LeaseExpired, e.Type)
	require.True(t, e.Requeued)
	require.Equal(t, "c1", e.Cluster)
	require.Contains(t, e.Reason, "lease not renewed by cluster c1 for 30s")
	require.Equal(t, []string{"c1"}, w.record(id).State.FailedClusters)
}

// cycleExpiriesOnly runs a cycle while draining, so that it only expires
// leases and enforces deadlines; the service is not left draining.
func (s *Server) cycleExpiriesOnly(t *testing.T) *CycleReport {
	t.Helper()
	s.Drain()
	defer func() { s.mu.Lock(); s.st.stopping = false; s.mu.Unlock() }()
	rep, err := s.Cycle(t.Context())
	require.NoError(t, err)
	return rep
}

func TestLeaseIsDeliveredAgainWhileTheExecutorDoesNotListIt(t *testing.T) {
	w, id := leasedWorld(t)
	for range 3 {
		ls := w.leasesOf("c1")
		require.Len(t, ls, 1)
		require.Equal(t, id, ls[0].Job.ID)
		require.Equal(t, 1, ls[0].Attempt)
		require.Equal(t, "c1-n0", ls[0].Node)
		require.Equal(t, time.Second, ls[0].TerminationGracePeriod)
		require.Equal(t, submit.DefaultActiveDeadline, ls[0].ActiveDeadline)
	}
	reply := w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: 1, Phase: PhasePending}}})
	require.Empty(t, reply.Leases)
	require.Empty(t, reply.Kill)
}

func TestReportedPhasesBecomeEvents(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from     JobPhase // the phase reported first (pending: stays leased)
		report   JobReport
		want     []string // the job's events after submitted, leased
		state    events.State
		exitCode int
		reason   string
	}{
		{name: "running", from: PhasePending, report: JobReport{Phase: PhaseRunning},
			want: []string{"running"}, state: events.RunningState},
		{name: "succeeded from running", from: PhaseRunning, report: JobReport{Phase: PhaseSucceeded},
			want: []string{"running", "succeeded"}, state: events.SucceededState},
		{name: "succeeded directly from leased", from: PhasePending, report: JobReport{Phase: PhaseSucceeded},
			want: []string{"running", "succeeded"}, state: events.SucceededState},
		{name: "failed with its exit code", from: PhaseRunning, report: JobReport{Phase: PhaseFailed, ExitCode: 3, Reason: "oom"},
			want: []string{"running", "failed"}, state: events.FailedState, exitCode: 3, reason: "exit code 3 oom"},
		{name: "failed directly from leased", from: PhasePending, report: JobReport{Phase: PhaseFailed, ExitCode: 137},
			want: []string{"running", "failed"}, state: events.FailedState, exitCode: 137, reason: "exit code 137"},
		{name: "returned", from: PhasePending, report: JobReport{Phase: PhaseReturned, Reason: "image pull"},
			want: []string{"lease-returned"}, state: events.Queued, reason: "returned by cluster c1 image pull"},
		{name: "returned while running", from: PhaseRunning, report: JobReport{Phase: PhaseReturned},
			want: []string{"running", "lease-returned"}, state: events.Queued, reason: "returned by cluster c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, id := leasedWorld(t)
			w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: 1, Phase: tc.from}}})
			r := tc.report
			r.Job, r.Attempt = id, 1
			w.report(Report{Cluster: "c1", Jobs: []JobReport{r}})
			log := w.jobLog("A", "s1", id)
			require.Equal(t, append([]string{"submitted", "leased"}, tc.want...), types(log))
			last := log[len(log)-1]
			require.Equal(t, tc.exitCode, last.ExitCode)
			require.Equal(t, tc.reason, last.Reason)
			require.Equal(t, 1, last.Attempt)
			require.Equal(t, "c1", last.Cluster)
			require.Equal(t, "c1-n0", last.Node)
			st := w.status(id)
			require.Equal(t, tc.state, st.State)
			require.Equal(t, 1, st.Attempts)
			if tc.state == events.Queued {
				require.True(t, last.Requeued)
				require.Equal(t, []string{"c1"}, st.Record.State.FailedClusters)
			}
			if tc.state.Terminal() {
				require.Equal(t, tc.exitCode, st.Record.State.ExitCode)
			}
		})
	}
}

func TestReturnedJobIsLeasedAgainWithItsAttemptsCounted(t *testing.T) {
	w, id := leasedWorld(t)
	w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: 1, Phase: PhaseReturned}}})
	require.Equal(t, 1, w.cycle().Leased, "the only cluster is avoided only while another can take the job")
	ls := w.leasesOf("c1")
	require.Len(t, ls, 1)
	require.Equal(t, 2, ls[0].Attempt)
	require.Equal(t, 2, w.status(id).Attempts)
}

func TestJobFailsWithAttemptsExhaustedAfterMaxAttemptsLeases(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		want int
	}{
		{name: "default", max: 0, want: DefaultMaxAttempts},
		{name: "one", max: 1, want: 1},
		{name: "five", max: 5, want: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, id := leasedWorld(t, func(c *Config) { c.MaxAttempts = tc.max })
			for attempt := 1; ; attempt++ {
				require.Equal(t, events.LeasedState, w.state(id))
				// Alternate the two ways a lease fails.
				if attempt%2 == 1 {
					w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: attempt, Phase: PhaseReturned}}})
				} else {
					w.clock.Advance(DefaultLeaseTimeout)
					w.report(Report{Cluster: "c1"})
					w.srv.cycleExpiriesOnly(t)
				}
				if attempt == tc.want {
					break
				}
				require.Equal(t, events.Queued, w.state(id))
				require.Equal(t, 1, w.cycle().Leased)
			}
			st := w.status(id)
			require.Equal(t, events.FailedState, st.State)
			require.Equal(t, tc.want, st.Attempts)
			log := w.jobLog("A", "s1", id)
			last := log[len(log)-1]
			require.False(t, last.Requeued)
			require.Contains(t, last.Reason, "attempts exhausted")
			require.Zero(t, w.cycle().Leased)
		})
	}
}

func TestStaleLeaseGetsAKillOrderAndChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// stale makes job id's lease 1 stale.
		stale func(w *world, id string)
		phase JobPhase
		kill  bool
	}{
		{name: "expired and queued", phase: PhaseRunning, kill: true, stale: func(w *world, id string) {
			w.clock.Advance(DefaultLeaseTimeout)
			w.srv.cycleExpiriesOnly(w.t.(*testing.T))
		}},
		{name: "older attempt, leased again to the same cluster", phase: PhasePending, kill: true, stale: func(w *world, id string) {
			w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: 1, Phase: PhaseReturned}}})
			w.cycle()
			require.Equal(w.t, 2, w.status(id).Attempts)
		}},
		{name: "preempted", phase: PhaseRunning, kill: true, stale: func(w *world, id string) {
			w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: 1, Phase: PhaseRunning}}})
			w.submit("A", "s1", JobTemplate{Requests: map[string]string{"cpu": "4"}, PriorityClass: flotilla.ArmadaDefault})
			require.Equal(w.t, 1, w.cycle().Preempted)
			require.Equal(w.t, events.PreemptedState, w.state(id))
		}},
		{name: "failed on its deadline, reported succeeded", phase: PhaseSucceeded, stale: func(w *world, id string) {
			w.clock.Advance(time.Hour)
			w.srv.cycleExpiriesOnly(w.t.(*testing.T))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.queue("A")
			w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
			tpl := one("1")
			tpl.PriorityClass, tpl.ActiveDeadline = flotilla.ArmadaPreemptible, "1h"
			tpl.TerminationGracePeriod = "45s"
			id := w.submit("A", "s1", tpl)[0]
			w.cycle()
			tc.stale(w, id)
			before := w.stored([2]string{"A", "s1"})
			stBefore := w.status(id)
			r := JobReport{Job: id, Attempt: 1, Phase: tc.phase}
			if tc.phase == PhaseFailed {
				r.ExitCode = 1
			}
			reply := w.report(Report{Cluster: "c1", Jobs: []JobReport{r}})
			w.requireUnchanged(before)
			stAfter := w.status(id)
			stBefore.Record, stAfter.Record = backend.Record{}, backend.Record{}
			require.Equal(t, stBefore, stAfter)
			if tc.kill {
				require.Len(t, reply.Kill, 1)
				require.Equal(t, id, reply.Kill[0].Job)
				require.Equal(t, 1, reply.Kill[0].Attempt)
				require.Equal(t, 45*time.Second, reply.Kill[0].GracePeriod, "the job's grace period, whatever ended its lease")
			} else {
				require.Empty(t, reply.Kill)
			}
		})
	}
}

func TestBadReportIsRejectedWholeWithEveryProblemNamedAndChangesNothing(t *testing.T) {
	// In every case the report also lists j1's lease as pending, a renewal
	// that must not be applied.
	for _, tc := range []struct {
		name string
		r    func(ids map[string]string) Report
		want []problem
	}{
		{name: "unknown cluster without nodes", r: func(map[string]string) Report { return Report{Cluster: "c9"} },
			want: []problem{{"cluster", "c9", ErrUnknownCluster}}},
		{name: "no cluster", r: func(map[string]string) Report { return Report{} },
			want: []problem{{"cluster", "", flotilla.ErrRequired}}},
		{name: "cluster name with a slash", r: func(map[string]string) Report {
			return Report{Cluster: "c1/x", Nodes: nodesOf("c1/x", 1, 4)}
		}, want: []problem{{"cluster", "c1/x", flotilla.ErrMalformed}}},
		{name: "another cluster's live lease", r: func(ids map[string]string) Report {
			return Report{Cluster: "c1", Jobs: []JobReport{{Job: ids["j2"], Attempt: 1, Phase: PhaseRunning}}}
		}, want: []problem{{"jobs[1].job", "job-2", ErrNotHeld}}},
		{name: "an attempt never leased", r: func(ids map[string]string) Report {
			return Report{Cluster: "c1", Jobs: []JobReport{
				{Job: ids["j3"], Attempt: 2, Phase: PhaseRunning},
				{Job: ids["queued"], Attempt: 1, Phase: PhasePending},
				{Job: ids["queued"] + "x", Attempt: 0, Phase: PhasePending},
			}}
		}, want: []problem{
			{"jobs[1].attempt", "2", ErrNotHeld},
			{"jobs[2].attempt", "1", ErrNotHeld},
			{"jobs[3].attempt", "0", flotilla.ErrOutOfRange},
		}},
		{name: "a job with no id", r: func(map[string]string) Report {
			return Report{Cluster: "c1", Jobs: []JobReport{{Attempt: 1, Phase: PhaseRunning}}}
		}, want: []problem{{"jobs[1].job", "", flotilla.ErrRequired}}},
		{name: "unknown job", r: func(map[string]string) Report {
			return Report{Cluster: "c1", Jobs: []JobReport{{Job: "nope", Attempt: 1, Phase: PhaseRunning}}}
		}, want: []problem{{"jobs[1].job", "nope", backend.ErrNotFound}}},
		{name: "a job listed twice", r: func(ids map[string]string) Report {
			return Report{Cluster: "c1", Jobs: []JobReport{{Job: ids["j1"], Attempt: 1, Phase: PhaseSucceeded}}}
		}, want: []problem{{"jobs[1].job", "job-1", flotilla.ErrDuplicate}}},
		{name: "unknown phase", r: func(ids map[string]string) Report {
			return Report{Cluster: "c1", Jobs: []JobReport{{Job: ids["j3"], Attempt: 1, Phase: "exploded"}}}
		}, want: []problem{{"jobs[1].phase", "exploded", flotilla.ErrUnknownName}}},
		{name: "exit code contradicting the phase", r: func(ids map[string]string) Report {
			return Report{Cluster: "c1", Jobs: []JobReport{
				{Job: ids["j3"], Attempt: 1, Phase: PhaseSucceeded, ExitCode: 2},
				{Job: ids["j4"], Attempt: 1, Phase: PhaseFailed},
			}}
		}, want: []problem{
			{"jobs[1].exitCode", "2", flotilla.ErrInconsistent},
			{"jobs[2].exitCode", "0", flotilla.ErrInconsistent},
		}},
		{name: "a node with the wrong resource vector", r: func(map[string]string) Report {
			ns := nodesOf("c1", 2, 8)
			ns[1].Total = flotilla.Resources{1, 2}
			return Report{Cluster: "c1", Nodes: ns}
		}, want: []problem{{"nodes[1].total", "2", flotilla.ErrInconsistent}}},
		{name: "duplicate node names", r: func(map[string]string) Report {
			ns := nodesOf("c1", 3, 8)
			ns[2].Name = ns[0].Name
			return Report{Cluster: "c1", Nodes: ns}
		}, want: []problem{{"nodes[2].name", "c1-n0", flotilla.ErrDuplicate}}},
		{name: "a node of another cluster", r: func(map[string]string) Report {
			ns := nodesOf("c1", 2, 8)
			ns[1].Cluster = "c2"
			return Report{Cluster: "c1", Nodes: ns}
		}, want: []problem{{"nodes[1].cluster", "c2", flotilla.ErrInconsistent}}},
		{name: "every problem at once", r: func(ids map[string]string) Report {
			ns := nodesOf("c1", 2, 8)
			ns[1].Name, ns[0].Cluster = ns[0].Name, "c3"
			return Report{Cluster: "c1", Nodes: ns, Jobs: []JobReport{
				{Job: ids["j2"], Attempt: 1, Phase: PhaseRunning},
				{Job: "nope", Attempt: 1, Phase: PhaseRunning},
				{Job: ids["j3"], Attempt: 1, Phase: "exploded"},
			}}
		}, want: []problem{
			{"nodes[0].cluster", "c3", flotilla.ErrInconsistent},
			{"nodes[1].name", "c1-n0", flotilla.ErrDuplicate},
			{"jobs[1].job", "job-2", ErrNotHeld},
			{"jobs[2].job", "nope", backend.ErrNotFound},
			{"jobs[3].phase", "exploded", flotilla.ErrUnknownName},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.queue("A")
			w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
			// j1 on c1; j2 on c2; j3, j4 on c1; queued never fits.
			ids := map[string]string{}
			ids["j1"] = w.submit("A", "s1", one("1"))[0]
			w.cycle()
			w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 1)})
			w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 1)}) // c1 full: j2 goes to c2
			ids["j2"] = w.submit("A", "s1", one("1"))[0]
			ids["queued"] = w.submit("A", "s1", one("64"))[0]
			w.cycle()
			require.Equal(t, "c2", w.clusterOf(ids["j2"]))
			w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
			ids["j3"] = w.submit("A", "s1", one("1"))[0]
			ids["j4"] = w.submit("A", "s1", one("1"))[0]
			w.cycle()
			require.Equal(t, "c1", w.clusterOf(ids["j3"]))
			require.Equal(t, "c1", w.clusterOf(ids["j4"]))
			require.Equal(t, "job-1", ids["j1"])
			require.Equal(t, "job-2", ids["j2"])
			require.Equal(t, "job-3", ids["queued"])

			w.clock.Advance(DefaultLeaseTimeout / 2)
			r := tc.r(ids)
			r.Jobs = append([]JobReport{{Job: ids["j1"], Attempt: 1, Phase: PhasePending}}, r.Jobs...)
			before := w.stored([2]string{"A", "s1"})
			nodesBefore := w.nodeNames("c1")
			reply, err := w.srv.Report(w.ctx, &r)
			require.Nil(t, reply)
			requireProblems(t, err, tc.want...)
			w.requireUnchanged(before)
			require.Equal(t, nodesBefore, w.nodeNames("c1"))
			require.Nil(t, w.nodeNames("c9"))

			// The renewal was not applied: j1's lease expires on time.
			w.clock.Advance(DefaultLeaseTimeout / 2)
			w.srv.cycleExpiriesOnly(t)
			require.Equal(t, events.Queued, w.state(ids["j1"]))
		})
	}
}

func TestReportWithNodesRegistersAClusterAndAReportWithoutNodesKeepsThem(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	reply := w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	require.Empty(t, reply.Leases)
	require.Equal(t, []string{"c1-n0", "c1-n1"}, w.nodeNames("c1"))
	w.report(Report{Cluster: "c1"})
	require.Equal(t, []string{"c1-n0", "c1-n1"}, w.nodeNames("c1"))
	es, err := w.be.ListExecutors(w.ctx)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Len(t, es[0].Nodes, 2)
	require.Equal(t, "c1", es[0].Nodes[0].Cluster)

	// An empty list says the cluster has no nodes: nothing is leased to it.
	w.report(Report{Cluster: "c1", Nodes: []flotilla.Node{}})
	require.Empty(t, w.nodeNames("c1"))
	w.submit("A", "s1", one("1"))
	require.Zero(t, w.cycle().Leased)
}

func TestClusterThatStopsReportingLeavesSchedulingAfterTheLeaseTimeoutAndRejoinsWhenItReports(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.clock.Advance(DefaultLeaseTimeout - time.Nanosecond)
	first := w.submit("A", "s1", one("1"))[0]
	require.Equal(t, 1, w.cycle().Leased, "a cluster is alive for a lease timeout after its report")
	require.Equal(t, "c1", w.clusterOf(first))

	w.clock.Advance(time.Nanosecond)
	second := w.submit("A", "s1", one("1"))[0]
	rep := w.cycle()
	require.Zero(t, rep.Leased, "no new lease to a cluster silent for a lease timeout")
	require.Equal(t, events.Queued, w.state(second))

	// Others are not an outage: another cluster takes the work.
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 1)})
	require.Equal(t, 1, w.cycle().Leased)
	third := w.submit("A", "s1", one("1"))[0]
	require.Zero(t, w.cycle().Leased)

	// c1 returns and rejoins.
	w.report(Report{Cluster: "c1"})
	require.Equal(t, 1, w.cycle().Leased)
	require.Equal(t, "c1", w.clusterOf(third))
}

func TestJobWhoseLeaseFailedInAClusterGoesToAnotherThatCanTakeIt(t *testing.T) {
	w, id := leasedWorld(t)
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 4)})
	w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: 1, Phase: PhaseReturned}}})
	require.Equal(t, 1, w.cycle().Leased)
	require.Equal(t, "c2", w.clusterOf(id))
}

// A lease carries its job's own settled grace period, deadline, runtime
// and exit code: the jobs of a template share them, those of another
// template in the same request have theirs, and a restart rebuilds them
// from the backend.
func TestLeaseCarriesItsTemplatesGraceDeadlineRuntimeAndExitCode(t *testing.T) {
	for _, restart := range []bool{false, true} {
		w := newWorld(t)
		w.queue("A")
		a := JobTemplate{Count: intp(2), Requests: map[string]string{"cpu": "1"},
			TerminationGracePeriod: "5s", ActiveDeadline: "1h", Runtime: "3s", ExitCode: 7}
		b := JobTemplate{Count: intp(2), Requests: map[string]string{"cpu": "1"}, Runtime: "9s"}
		ids := w.submit("A", "s1", a, b)
		if restart {
			w.restart()
		}
		w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 8)})
		require.Equal(t, 4, w.cycle().Leased)
		got := map[string]Lease{}
		for _, l := range w.leasesOf("c1") {
			got[l.Job.ID] = l
		}
		for i, id := range ids {
			l := got[id]
			if i < 2 {
				require.Equal(t, []any{5 * time.Second, time.Hour, 3 * time.Second, 7}, []any{l.TerminationGracePeriod, l.ActiveDeadline, l.Runtime, l.ExitCode}, "job %d, restart %v", i, restart)
			} else {
				require.Equal(t, []any{time.Second, submit.DefaultActiveDeadline, 9 * time.Second, 0}, []any{l.TerminationGracePeriod, l.ActiveDeadline, l.Runtime, l.ExitCode}, "job %d, restart %v", i, restart)
			}
		}
		if !restart {
			require.Same(t, w.srv.st.jobs.get(ids[0]).run, w.srv.st.jobs.get(ids[1]).run, "a template's jobs share their runSpec")
			require.NotSame(t, w.srv.st.jobs.get(ids[1]).run, w.srv.st.jobs.get(ids[2]).run)
		}
	}
}
