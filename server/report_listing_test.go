package server

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
)

func TestReportListingAJobTwiceIsRejectedWholeNamingTheEarlierEntry(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	ids := w.submit("A", "s1", cpuJobs(3, "1"))
	w.cycle()
	ls := w.report(Report{Cluster: "c1"}).Leases
	require.Len(t, ls, 3)
	// job-3 ends: from now on it has no live lease.
	done := held(PhaseRunning, ls)
	done[2].Phase = PhaseSucceeded
	w.report(Report{Cluster: "c1", Jobs: done})
	for _, tc := range []struct {
		name string
		jobs []JobReport
		at   string
		also string
	}{
		{"a live lease", []JobReport{
			{Job: ids[0], Attempt: 1, Phase: PhaseRunning},
			{Job: ids[1], Attempt: 1, Phase: PhaseSucceeded},
			{Job: ids[0], Attempt: 1, Phase: PhaseSucceeded},
		}, "jobs[2].job", "also jobs[0]"},
		{"an ended job", []JobReport{
			{Job: ids[2], Attempt: 1, Phase: PhaseSucceeded},
			{Job: ids[1], Attempt: 1, Phase: PhaseSucceeded},
			{Job: ids[2], Attempt: 1, Phase: PhaseRunning},
		}, "jobs[2].job", "also jobs[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.srv.Report(w.ctx, &Report{Cluster: "c1", Jobs: tc.jobs})
			require.ErrorIs(t, err, flotilla.ErrDuplicate)
			var fe *flotilla.FieldError
			require.True(t, errors.As(err, &fe))
			require.Equal(t, tc.at, fe.Field)
			require.ErrorContains(t, err, tc.also)
			// Rejected whole: ids[1] did not succeed.
			require.Equal(t, events.RunningState, w.state(ids[1]))
		})
	}
}

func TestReportReplyCarriesTheClustersLeasesThisReportDoesNotList(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.submit("A", "s1", cpuJobs(3, "1"))
	w.cycle()
	ls := w.report(Report{Cluster: "c1"}).Leases
	require.Len(t, ls, 3)
	// Listing the first as pending: the reply carries the other two.
	reply := w.report(Report{Cluster: "c1", Jobs: held(PhasePending, ls[:1])})
	require.Equal(t, ls[1:], reply.Leases)
	// A report rejected after listing the second changes nothing …
	bad := append(held(PhaseRunning, ls[1:2]), JobReport{Job: "no-such-job", Attempt: 1, Phase: PhaseRunning})
	_, err := w.srv.Report(w.ctx, &Report{Cluster: "c1", Jobs: bad})
	require.Error(t, err)
	// … and what one report listed does not count for the next.
	reply = w.report(Report{Cluster: "c1", Jobs: held(PhasePending, ls[2:])})
	require.Equal(t, ls[:2], reply.Leases)
	require.Equal(t, ls, w.report(Report{Cluster: "c1"}).Leases)
}

// TestReportListingItsJobsOutOfIDOrderRenewsThemAll: a report is matched
// against its cluster's live jobs, sorted by id, in one pass; jobs listed
// out of that order are found too — each renewed, none sent again as a
// lease, none killed, one listed twice still rejected — and a report that
// lists them all in reverse keeps every lease from expiring.
func TestReportListingItsJobsOutOfIDOrderRenewsThemAll(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	w.submit("A", "s1", cpuJobs(6, "1"))
	w.cycle()
	ls := w.report(Report{Cluster: "c1"}).Leases
	require.Len(t, ls, 6)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls)})
	w.cycle() // the cluster's live list is sorted by id now
	reversed := held(PhaseRunning, ls)
	slices.Reverse(reversed)
	w.clock.Advance(w.srv.st.cfg.LeaseTimeout - time.Second)
	reply := w.report(Report{Cluster: "c1", Jobs: reversed})
	require.Empty(t, reply.Leases)
	require.Empty(t, reply.Kill)
	w.clock.Advance(2 * time.Second) // past the first renewals, not the last
	require.Zero(t, w.cycle().Expired)
	dup := append(held(PhaseRunning, ls[3:]), held(PhaseRunning, ls[:4])...)
	_, err := w.srv.Report(w.ctx, &Report{Cluster: "c1", Jobs: dup})
	var fe *flotilla.FieldError
	require.ErrorAs(t, err, &fe)
	require.ErrorIs(t, err, flotilla.ErrDuplicate)
	require.Equal(t, "jobs[6].job", fe.Field)
}
