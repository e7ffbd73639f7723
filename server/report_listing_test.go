package server

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
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

// TestReportInAnyOrderRenewsExactlyWhatItListsAndAnswersAsInIDOrder
// checks a report against an oracle, over clusters whose live list has a
// sorted part with holes and an unsorted tail of new leases: whether it
// lists its jobs in id order, in a few runs each in id order, or shuffled,
// it renews exactly the live leases it lists (their marks), sends again
// exactly the leased jobs it does not list, and kills exactly the stale
// entries (jobs that ended) it lists as running.
func TestReportInAnyOrderRenewsExactlyWhatItListsAndAnswersAsInIDOrder(t *testing.T) {
	runProperty(t, "report in any order = oracle", 40, func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		w := newWorld(t)
		w.queue("A")
		w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 10, 40)})
		w.submit("A", "s1", cpuJobs(100+rng.IntN(150), "1"))
		w.cycle()
		ls := w.report(Report{Cluster: "c1"}).Leases
		// All running (the list is sorted by this report), then some end:
		// holes in the sorted part.
		rep := held(PhaseRunning, ls)
		var ended []JobReport
		for i := range rep {
			if rng.IntN(5) == 0 {
				rep[i].Phase = PhaseSucceeded
				ended = append(ended, rep[i])
			}
		}
		w.report(Report{Cluster: "c1", Jobs: rep})
		// New leases, fewer than sort in: the unsorted tail.
		w.submit("A", "s2", cpuJobs(1+rng.IntN(60), "1"))
		w.cycle()
		c := w.srv.st.clusters["c1"]
		var live []*job
		for j := range c.jobs() {
			live = append(live, j)
		}
		// The report: a random subset of the live leases, pending or
		// running, and some ended jobs listed as running.
		var jobs []JobReport
		listed := map[*job]bool{}
		for _, j := range live {
			if rng.IntN(5) > 0 {
				listed[j] = true
				jobs = append(jobs, JobReport{Job: j.id(), Attempt: int(j.attempts), Phase: []JobPhase{PhasePending, PhaseRunning}[rng.IntN(2)]})
			}
		}
		var stale []string
		for _, e := range ended {
			if rng.IntN(3) == 0 {
				jobs = append(jobs, JobReport{Job: e.Job, Attempt: e.Attempt, Phase: PhaseRunning})
				stale = append(stale, e.Job)
			}
		}
		slices.SortFunc(jobs, func(a, b JobReport) int { return strings.Compare(a.Job, b.Job) })
		order := "in id order"
		switch rng.IntN(3) {
		case 1:
			// Runs: a random partition, each part in id order.
			runs := make([][]JobReport, 1+rng.IntN(5))
			for _, jr := range jobs {
				k := rng.IntN(len(runs))
				runs[k] = append(runs[k], jr)
			}
			jobs = slices.Concat(runs...)
			order = strconv.Itoa(len(runs)) + " runs"
		case 2:
			rng.Shuffle(len(jobs), func(a, b int) { jobs[a], jobs[b] = jobs[b], jobs[a] })
			order = "shuffled"
		}
		w.clock.Advance(time.Second)
		now := w.clock.Now()
		reply, err := w.srv.Report(w.ctx, &Report{Cluster: "c1", Jobs: jobs})
		if err != nil {
			return order + ": " + err.Error()
		}
		var wantLeases, gotLeases, gotKills []string
		for _, j := range live {
			if m := c.mark(j); m.renewed.Equal(now) != listed[j] {
				return order + ": " + j.id() + " listed " + strconv.FormatBool(listed[j]) + ", renewed " + m.renewed.String()
			}
			if !listed[j] && j.state == events.LeasedState {
				wantLeases = append(wantLeases, j.id())
			}
		}
		slices.Sort(wantLeases)
		for _, l := range reply.Leases {
			gotLeases = append(gotLeases, l.Job.ID)
		}
		for _, k := range reply.Kill {
			gotKills = append(gotKills, k.Job)
		}
		slices.Sort(stale)
		if !slices.Equal(gotLeases, wantLeases) || !slices.Equal(gotKills, stale) {
			return fmt.Sprintf("%s: leases %v kills %v, want %v and %v", order, gotLeases, gotKills, wantLeases, stale)
		}
		return ""
	})
}
