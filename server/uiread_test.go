package server

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// oracleJobs is what a page of q should list, worked out the naive way:
// every live job of the state, filtered and sorted.
func oracleJobs(w *world, q JobsQuery) []string {
	var js []*job
	for j := range w.srv.st.jobs.all() {
		if j.spec.Queue == q.Queue && j.spec.JobSet == q.JobSet && (q.AnyState || j.state == q.State) {
			js = append(js, j)
		}
	}
	slices.SortFunc(js, func(a, b *job) int {
		if q.ByPriority {
			if c := cmp.Compare(a.sched().Priority, b.sched().Priority); c != 0 {
				return c
			}
		}
		if c := a.spec.SubmitTime.Compare(b.spec.SubmitTime); c != 0 {
			return c
		}
		return strings.Compare(a.id(), b.id())
	})
	out := []string{}
	for _, j := range js {
		out = append(out, j.id())
	}
	return out
}

// allPages follows a query's pages to the end and returns their jobs'
// ids, requiring every page but the last to be full (or partial).
func allPages(t *testing.T, w *world, q JobsQuery) []string {
	t.Helper()
	out := []string{}
	for range 100000 {
		page, err := w.srv.Jobs(w.ctx, q)
		require.NoError(t, err)
		for _, r := range page.Jobs {
			out = append(out, r.ID)
		}
		if page.Next == "" {
			return out
		}
		if !page.Partial {
			require.Len(t, page.Jobs, q.Limit, "a page that is not the last is full")
		}
		q.Cursor = page.Next
	}
	t.Fatal("pages never end")
	return nil
}

// queries are the page queries of a job set: every filter, both orders,
// several limits.
func queries(set string) []JobsQuery {
	var out []JobsQuery
	for _, st := range []struct {
		s   events.State
		any bool
	}{{any: true}, {s: events.Queued}, {s: events.LeasedState}, {s: events.RunningState}} {
		for _, byP := range []bool{false, true} {
			for _, limit := range []int{1, 3, 7, 50} {
				out = append(out, JobsQuery{Queue: "A", JobSet: set, State: st.s, AnyState: st.any, ByPriority: byP, Limit: limit})
			}
		}
	}
	return out
}

// TestJobSetPagesListWhatANaiveSortOfTheLiveJobsLists drives a service
// through submissions at several times and priorities, leases, runs,
// cancellations, reprioritisations, ends and a restart, and checks after
// each step that following the pages of every query lists exactly the
// jobs a filter and sort of the live jobs does, and that the counts
// agree.
func TestJobSetPagesListWhatANaiveSortOfTheLiveJobsLists(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 22))
			w := newWorld(t)
			w.queue("A")
			check := func(step string) {
				for _, set := range []string{"s1", "s2"} {
					for _, q := range queries(set) {
						require.Equal(t, oracleJobs(w, q), allPages(t, w, q), "%s: %+v", step, q)
					}
					page, err := w.srv.Jobs(w.ctx, JobsQuery{Queue: "A", JobSet: set, AnyState: true, Limit: 1})
					require.NoError(t, err)
					want := api.JobSetSummary{Name: set}
					for j := range w.srv.st.jobs.all() {
						if j.spec.JobSet != set {
							continue
						}
						switch j.state {
						case events.Queued:
							want.Queued++
						case events.LeasedState:
							want.Leased++
						case events.RunningState:
							want.Running++
						}
					}
					require.Equal(t, want, page.Counts, step)
				}
			}
			var ids []string
			for i := range 4 {
				set := []string{"s1", "s2"}[r.IntN(2)]
				tpl := cpuJobs(1+r.IntN(40), "1")
				tpl.Priority = uint32(r.IntN(3))
				ids = append(ids, w.submit("A", set, tpl)...)
				w.clock.Advance(time.Duration(r.IntN(3)) * time.Second) // some batches share a submit time
				check(fmt.Sprint("submit ", i))
			}
			reply := w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 8)})
			w.cycle()
			check("cycle")
			reply = w.report(Report{Cluster: "c1"})
			leases := reply.Leases
			w.report(Report{Cluster: "c1", Jobs: append(held(PhaseRunning, leases[:len(leases)/2]), held(PhasePending, leases[len(leases)/2:])...)})
			check("running")
			var cancel []string
			for _, id := range ids {
				if r.IntN(4) == 0 {
					cancel = append(cancel, id)
				}
			}
			if len(cancel) > 0 {
				_, err := w.srv.Cancel(w.ctx, cancel...)
				require.NoError(t, err)
			}
			check("cancel")
			for _, set := range []string{"s1", "s2"} {
				var some []string
				for _, id := range ids {
					if j := w.srv.st.jobs.get(id); j != nil && j.spec.JobSet == set && j.state == events.Queued && r.IntN(3) == 0 {
						some = append(some, id)
					}
				}
				if len(some) > 0 {
					_, err := w.srv.Reprioritize(w.ctx, Selection{IDs: some}, uint32(5+r.IntN(3)), "")
					require.NoError(t, err)
				}
			}
			check("reprioritize")
			w.clock.Advance(time.Second)
			w.cycle()
			check("second cycle")
			w.restart()
			check("restart")
		})
	}
}

// TestEndedJobsLeaveTheirSetAndHolesAreCompacted ends most of a set's
// jobs: the pages skip them, the list is compacted once the holes are
// half of it, and a set whose jobs all ended is gone.
func TestEndedJobsLeaveTheirSetAndHolesAreCompacted(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	ids := w.submit("A", "s1", cpuJobs(1000, "1"))
	_, err := w.srv.Cancel(w.ctx, ids[:700]...)
	require.NoError(t, err)
	set := w.srv.st.ui.set("A", "s1", false)
	require.Less(t, len(set.jobs), 1000, "compacted")
	require.Equal(t, 300, set.live)
	q := JobsQuery{Queue: "A", JobSet: "s1", AnyState: true, Limit: 1000}
	require.Equal(t, slices.Sorted(slices.Values(ids[700:])), allPages(t, w, q), "one submit time: by id")
	_, err = w.srv.Cancel(w.ctx, ids[700:]...)
	require.NoError(t, err)
	require.Nil(t, w.srv.st.ui.set("A", "s1", false))
	page, err := w.srv.JobSets(w.ctx, "A", "", 10)
	require.NoError(t, err)
	require.Equal(t, []api.JobSetSummary{{Name: "s1", Ended: true}}, page.JobSets, "listed from the backend, ended")
}

// TestAQueuesJobSetsAreTheLiveAndTheEndedOnesByName: a queue's job sets
// are every set the backend stores for it, those with live jobs counted,
// those whose jobs all ended marked so; followed at any limit, the pages
// list each once, by name.
func TestAQueuesJobSetsAreTheLiveAndTheEndedOnesByName(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	want := make([]api.JobSetSummary, 14)
	for k := range 14 {
		i := (k * 5) % 14 // submitted out of name order
		name := fmt.Sprintf("s%02d", i)
		ids := w.submit("A", name, cpuJobs(i%3+1, "1"))
		want[i] = api.JobSetSummary{Name: name, Queued: i%3 + 1}
		if i%3 == 0 || i >= 12 { // the last two ended too
			_, err := w.srv.Cancel(w.ctx, ids...)
			require.NoError(t, err)
			want[i] = api.JobSetSummary{Name: name, Ended: true}
		}
	}
	w.submit("B", "s00", cpuJobs(1, "1"))
	w.submit("B", "t", cpuJobs(1, "1"))
	for _, limit := range []int{1, 2, 5, 100} {
		var got []api.JobSetSummary
		after := ""
		for range 20 {
			page, err := w.srv.JobSets(w.ctx, "A", after, limit)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page.JobSets), limit)
			got = append(got, page.JobSets...)
			if page.Next == "" {
				break
			}
			after = page.Next
		}
		require.Equal(t, want, got, "limit %d", limit)
	}
}

// TestAPageStopsAtItsScanBudgetWithACursorThatGoesOn filters on the few
// queued jobs among many that do not match, with a small budget: pages
// come partial, and following them lists every match once.
func TestAPageStopsAtItsScanBudgetWithACursorThatGoesOn(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	hi := cpuJobs(50, "1")
	hi.Priority = 1
	w.submit("A", "s1", cpuJobs(50, "1"), hi, cpuJobs(50, "1"))
	w.srv.st.ui.budget = 10
	for _, byP := range []bool{false, true} {
		q := JobsQuery{Queue: "A", JobSet: "s1", AnyState: true, ByPriority: byP, Limit: 7}
		got, partial := []string{}, 0
		for {
			page, err := w.srv.Jobs(w.ctx, q)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page.Jobs), 7)
			if page.Partial {
				partial++
			}
			for _, r := range page.Jobs {
				got = append(got, r.ID)
			}
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
		require.Equal(t, oracleJobs(w, q), got)
		if byP {
			require.Positive(t, partial, "passes over the levels hit the budget")
		}
	}
}

// TestBadCursorOrLimitIsAFieldErrorNamingIt.
func TestBadCursorOrLimitIsAFieldErrorNamingIt(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	_, err := w.srv.Jobs(w.ctx, JobsQuery{Queue: "A", JobSet: "s", AnyState: true, Limit: 0, Cursor: "!!"})
	requireProblems(t, err, problem{"cursor", "!!", flotilla.ErrMalformed}, problem{"limit", "0", flotilla.ErrOutOfRange})
	_, err = w.srv.Jobs(w.ctx, JobsQuery{Queue: "A", JobSet: "s", AnyState: true, Limit: 1, Cursor: base64.RawURLEncoding.EncodeToString([]byte("1.2"))})
	require.ErrorIs(t, err, flotilla.ErrMalformed)
	_, err = w.srv.Jobs(w.ctx, JobsQuery{Queue: "Z", JobSet: "s", AnyState: true, Limit: 1})
	require.ErrorIs(t, err, backend.ErrNotFound)
	_, err = w.srv.JobSets(w.ctx, "Z", "", 1)
	require.ErrorIs(t, err, backend.ErrNotFound)
	_, err = w.srv.Nodes(w.ctx, "nowhere", "", 1)
	require.ErrorIs(t, err, backend.ErrNotFound)
}

// TestCursorsRoundTrip: a cursor reads back as written, whatever the id.
func TestCursorsRoundTrip(t *testing.T) {
	for _, c := range []jobsCursor{{}, {prio: 7, sec: -5, nsec: 999999999, id: "a.b.c"}, {prio: 1 << 31, sec: 1 << 40, id: "ü/é"}} {
		got, err := parseJobsCursor(c.String())
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
}

// TestCyclesKeepTheLastHundredAndAnHourOfSharesAMinuteApart.
func TestCyclesKeepTheLastHundredAndAnHourOfSharesAMinuteApart(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	w.submit("A", "s", cpuJobs(3, "1"))
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 8)})
	w.cycle()
	cs := w.srv.Cycles(10)
	require.Len(t, cs, 1)
	require.Equal(t, 3, cs[0].Leased)
	require.Equal(t, []api.CycleQueue{{Name: "A", Leased: 3, Running: 3}, {Name: "B"}}, cs[0].Queues)
	for range 150 {
		w.clock.Advance(30 * time.Second)
		w.report(Report{Cluster: "c1"})
		w.cycle()
	}
	cs = w.srv.Cycles(1000)
	require.Len(t, cs, UICycles)
	require.Equal(t, uint64(151), cs[0].Seq, "newest first")
	require.Equal(t, uint64(52), cs[UICycles-1].Seq)
	ov, err := w.srv.Overview(w.ctx, "", 10, func(string) bool { return true })
	require.NoError(t, err)
	require.Equal(t, []string{"A", "B"}, []string{ov.Queues[0].Name, ov.Queues[1].Name})
	h := ov.Queues[0].History
	require.Len(t, h, 61, "a sample a minute over the last hour, both ends in")
	for i := 1; i < len(h); i++ {
		require.Equal(t, time.Minute, h[i].Time.Sub(h[i-1].Time))
	}
	require.Len(t, ov.Queues[1].History, 61, "B, idle, is sampled too")
	require.Equal(t, uint64(151), ov.LastCycle.Seq)
	// A page of one queue, then the next.
	ov, err = w.srv.Overview(w.ctx, "", 1, func(string) bool { return true })
	require.NoError(t, err)
	require.Equal(t, "A", ov.Next)
	ov, err = w.srv.Overview(w.ctx, ov.Next, 1, func(q string) bool { return q != "B" })
	require.NoError(t, err)
	require.Empty(t, ov.Queues, "B is not the principal's")
}

// TestNodesShowWhatLiveJobsTakeAndTheRoomLeft.
func TestNodesShowWhatLiveJobsTakeAndTheRoomLeft(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.submit("A", "s", cpuJobs(3, "2"))
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 3, 4)})
	w.cycle()
	page, err := w.srv.Nodes(w.ctx, "c1", "", 2)
	require.NoError(t, err)
	require.Equal(t, "c1-n1", page.Next)
	more, err := w.srv.Nodes(w.ctx, "c1", page.Next, 2)
	require.NoError(t, err)
	require.Empty(t, more.Next)
	rows := append(page.Nodes, more.Nodes...)
	require.Len(t, rows, 3)
	jobs, cpuUsed := 0, 0
	for _, n := range rows {
		jobs += n.Jobs
		var used, free int
		fmt.Sscan(n.Allocated["cpu"], &used)
		fmt.Sscan(n.Free["cpu"], &free)
		require.Equal(t, 4, used+free, n.Name)
		require.Equal(t, "4", n.Total["cpu"])
		cpuUsed += used
	}
	require.Equal(t, 3, jobs)
	require.Equal(t, 6, cpuUsed)
	require.True(t, page.Alive)
}

// TestLastSeqIsTheLogsLastSequenceNumber for logs of every length up to
// 40 (the search doubles, then halves).
func TestLastSeqIsTheLogsLastSequenceNumber(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	seq, err := w.srv.lastSeq(w.ctx, "A", "s")
	require.NoError(t, err)
	require.Zero(t, seq)
	for n := 1; n <= 40; n++ {
		w.submit("A", "s", cpuJob())
		seq, err := w.srv.lastSeq(w.ctx, "A", "s")
		require.NoError(t, err)
		require.Equal(t, uint64(n), seq)
	}
}

// TestAJobReprioritisedToANewLowerLevelIsOnTheFirstPageByPriority: the
// set's levels learn a priority when a page meets it; a job moved below
// every level the set knew was met while reading a higher level, after
// the lower one's turn, and the pages by priority ended without it.
func TestAJobReprioritisedToANewLowerLevelIsOnTheFirstPageByPriority(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	tpl := cpuJobs(10, "1")
	tpl.Priority = 5
	ids := w.submit("A", "s1", tpl)
	_, err := w.srv.Reprioritize(w.ctx, Selection{IDs: ids[3:6]}, 1, "")
	require.NoError(t, err)
	for _, limit := range []int{1, 4, 50} {
		q := JobsQuery{Queue: "A", JobSet: "s1", AnyState: true, ByPriority: true, Limit: limit}
		require.Equal(t, oracleJobs(w, q), allPages(t, w, q), "limit %d", limit)
	}
}

// TestAFluxReprioritisedJobIsOnThePagesByPriority: Flux re-prioritises
// queued jobs as usage decays; a job set whose jobs all moved to a
// priority the set had not held (bob's usage outgrew hers) still lists
// them by priority.
func TestAFluxReprioritisedJobIsOnThePagesByPriority(t *testing.T) {
	w := fluxWorld(t, 2)
	w.submitAs("alice", 2)
	w.cycle()
	ls := w.runFor(time.Hour, w.report(Report{Cluster: "c1"}).Leases)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, ls)})
	alice := w.submitAs("alice", 3)
	before := w.jobPriority(alice[0])
	bob := w.submitAs("bob", 2) // ahead of alice's: bob has used nothing
	w.cycle()
	ls = w.report(Report{Cluster: "c1"}).Leases
	require.ElementsMatch(t, bob, leasedIDs(ls))
	w.runFor(4*time.Hour, ls) // alice's share of the usage falls
	require.Less(t, w.jobPriority(alice[0]), before, "alice's share of the usage fell")
	q := JobsQuery{Queue: "A", JobSet: "s-alice", AnyState: true, ByPriority: true, Limit: 2}
	require.Equal(t, oracleJobs(w, q), allPages(t, w, q))
	require.Len(t, allPages(t, w, q), 3)
}

// TestEndedJobsArePagedFromTheBackendBySubmitTimeThenID: a job set's
// cancelled, succeeded and failed jobs, ended in an order of their own,
// are listed per state, at several limits, in submit order, each row as
// the job's record says; a query by priority of ended jobs is a field
// error naming sort; the live pages leave them out.
func TestEndedJobsArePagedFromTheBackendBySubmitTimeThenID(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	var ids []string
	for range 3 {
		ids = append(ids, w.submit("A", "s", cpuJobs(30, "1"))...)
		w.clock.Advance(time.Second)
	}
	w.submit("A", "other", cpuJobs(5, "1"))
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(ids), func(i, k int) { ids[i], ids[k] = ids[k], ids[i] })
	_, err := w.srv.Cancel(w.ctx, ids[:40]...)
	require.NoError(t, err)
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 4, 8)})
	w.cycle()
	leases := w.report(Report{Cluster: "c1"}).Leases
	require.NotEmpty(t, leases)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, leases)})
	w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, leases)})
	oracle := func(st events.State) []string {
		var out []backend.Record
		for _, id := range ids {
			rec, err := w.srv.st.be.Job(w.ctx, id)
			require.NoError(t, err)
			if rec.State.State == st {
				out = append(out, rec)
			}
		}
		slices.SortFunc(out, func(a, b backend.Record) int {
			if c := a.Spec.Job.SubmitTime.Compare(b.Spec.Job.SubmitTime); c != 0 {
				return c
			}
			return strings.Compare(a.Spec.Job.ID, b.Spec.Job.ID)
		})
		names := []string{}
		for _, rec := range out {
			names = append(names, rec.Spec.Job.ID)
		}
		return names
	}
	for _, st := range []events.State{events.CancelledState, events.SucceededState, events.FailedState} {
		for _, limit := range []int{1, 7, 1000} {
			q := JobsQuery{Queue: "A", JobSet: "s", State: st, Limit: limit}
			require.Equal(t, oracle(st), allPages(t, w, q), "%s, limit %d", st, limit)
		}
	}
	require.Len(t, oracle(events.CancelledState), 40)
	require.Len(t, oracle(events.SucceededState), len(leases))
	page, err := w.srv.Jobs(w.ctx, JobsQuery{Queue: "A", JobSet: "s", State: events.CancelledState, Limit: 1})
	require.NoError(t, err)
	rec, err := w.srv.st.be.Job(w.ctx, page.Jobs[0].ID)
	require.NoError(t, err)
	cancelled := w.clock.Now().UTC()
	require.Equal(t, cancelled, rec.State.Finished, "the cancel's time")
	require.Equal(t, api.JobRow{ID: rec.Spec.Job.ID, State: "cancelled", Priority: rec.Spec.Job.Priority,
		Submitted: rec.Spec.Job.SubmitTime.UTC(), Finished: &cancelled}, page.Jobs[0])
	// Every ended row has the time its job ended, its record's.
	for _, st := range []events.State{events.CancelledState, events.SucceededState} {
		page, err := w.srv.Jobs(w.ctx, JobsQuery{Queue: "A", JobSet: "s", State: st, Limit: 1000})
		require.NoError(t, err)
		require.NotEmpty(t, page.Jobs)
		for _, row := range page.Jobs {
			rec, err := w.srv.st.be.Job(w.ctx, row.ID)
			require.NoError(t, err)
			require.NotNil(t, row.Finished, "%s row %s", st, row.ID)
			require.Equal(t, rec.State.Finished.UTC(), *row.Finished, "%s row %s", st, row.ID)
		}
	}
	// The set's ended counts, on every page of it, are its records'.
	for _, q := range []JobsQuery{{Queue: "A", JobSet: "s", AnyState: true, Limit: 1}, {Queue: "A", JobSet: "s", State: events.FailedState, Limit: 3}} {
		page, err := w.srv.Jobs(w.ctx, q)
		require.NoError(t, err)
		require.Equal(t, &api.EndedCounts{Cancelled: 40, Succeeded: len(oracle(events.SucceededState)), Failed: len(oracle(events.FailedState))},
			page.EndedCounts, "%+v", q)
	}
	live, err := w.srv.Jobs(w.ctx, JobsQuery{Queue: "A", JobSet: "other", AnyState: true, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, &api.EndedCounts{}, live.EndedCounts, "none of other's ended")
	for _, row := range live.Jobs {
		require.Nil(t, row.Finished, "a live job has not finished")
	}
	_, err = w.srv.Jobs(w.ctx, JobsQuery{Queue: "A", JobSet: "s", State: events.SucceededState, ByPriority: true, Limit: 5})
	requireProblems(t, err, problem{"sort", "priority", flotilla.ErrMalformed})
	for _, q := range queries("s") {
		for _, id := range allPages(t, w, q) {
			require.NotContains(t, ids[:40], id, "a cancelled job on a live page")
		}
	}
}

// TestWithTwoPoolsTheOverviewAndTheCyclesShowEachPool: a queue's and a
// group's shares per pool on the overview are the pools' last cycles'
// lines; a cycle's per-queue counts come a line per queue and pool, the
// leases summing to the cycle's. With one pool, neither says a pool.
func TestWithTwoPoolsTheOverviewAndTheCyclesShowEachPool(t *testing.T) {
	w := newWorld(t)
	require.NoError(t, w.srv.CreateGroup(w.ctx, flotilla.QueueGroup{Name: "g"}))
	require.NoError(t, w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: "A", Parent: "g"}))
	w.queue("B")
	w.report(Report{Cluster: "ca", Pool: "a", Nodes: nodesOf("ca", 1, 4)})
	one := w.cycle()
	require.Len(t, one.Pools, 1)
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 4)})
	w.submit("A", "s", inPools(3, "a"), inPools(5, "b"))
	w.submit("B", "s", inPools(4, "b"))
	rep := w.cycle()
	require.Len(t, rep.Pools, 2)
	ov, err := w.srv.Overview(w.ctx, "", 10, func(string) bool { return true })
	require.NoError(t, err)
	want := map[string]map[string]float64{}
	for _, p := range rep.Pools {
		for _, q := range p.Result.Queues {
			if want[q.Name] == nil {
				want[q.Name] = map[string]float64{}
			}
			want[q.Name][p.Pool] = q.Share
		}
		for _, g := range p.Result.Groups {
			if want["g/"+g.Name] == nil {
				want["g/"+g.Name] = map[string]float64{}
			}
			want["g/"+g.Name][p.Pool] = g.Share
		}
	}
	got := map[string]map[string]float64{}
	for _, q := range ov.Queues {
		for _, p := range q.Status.Pools {
			if got[q.Name] == nil {
				got[q.Name] = map[string]float64{}
			}
			got[q.Name][p.Pool] = p.Share
		}
	}
	for _, g := range ov.Groups {
		for _, p := range g.Status.Pools {
			if got["g/"+g.Name] == nil {
				got["g/"+g.Name] = map[string]float64{}
			}
			got["g/"+g.Name][p.Pool] = p.Share
		}
	}
	require.Equal(t, want, got)
	require.Len(t, got["A"], 2, "A has work in both pools")
	require.Len(t, got["g/g"], 2)
	cs := w.srv.Cycles(2)
	require.Len(t, cs, 2)
	leased, lines := 0, map[string]int{}
	for _, q := range cs[0].Queues {
		leased += q.Leased
		lines[q.Name+"@"+q.Pool] = q.Leased
	}
	require.Equal(t, rep.Leased, leased)
	require.Equal(t, map[string]int{"A@a": 3, "A@b": 2, "B@a": 0, "B@b": 2}, lines, "pool b's 4 cpus split between A and B")
	for _, q := range cs[1].Queues {
		require.Empty(t, q.Pool, "a cycle of one pool names none")
	}
}

// TestWithTwoPoolsTheHistoryIsKeptPerPool: a queue's and a group's last
// hour is kept per pool, each sample that pool's cycle's shares, in the
// order of the status's pool lines; History stays the first pool's.
func TestWithTwoPoolsTheHistoryIsKeptPerPool(t *testing.T) {
	w := newWorld(t)
	require.NoError(t, w.srv.CreateGroup(w.ctx, flotilla.QueueGroup{Name: "g"}))
	require.NoError(t, w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: "A", Parent: "g"}))
	w.queue("B")
	w.report(Report{Cluster: "ca", Pool: "a", Nodes: nodesOf("ca", 1, 4)})
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 4)})
	want := map[string]map[string][]float64{} // queue or "g/"+group → pool → shares
	add := func(name, pool string, share float64) {
		if want[name] == nil {
			want[name] = map[string][]float64{}
		}
		want[name][pool] = append(want[name][pool], share)
	}
	for i := range 5 {
		w.submit("A", "s", inPools(1, "a"), inPools(i%2, "b"))
		w.submit("B", "s", inPools(1, "b"))
		rep := w.cycle()
		require.Len(t, rep.Pools, 2)
		for _, p := range rep.Pools {
			for _, q := range p.Result.Queues {
				add(q.Name, p.Pool, q.Share)
			}
			for _, g := range p.Result.Groups {
				add("g/"+g.Name, p.Pool, g.Share)
			}
		}
		w.clock.Advance(time.Minute)
		w.report(Report{Cluster: "ca"})
		w.report(Report{Cluster: "cb"})
	}
	require.NotEqual(t, want["A"]["a"], want["A"]["b"], "the test's pools differ")
	ov, err := w.srv.Overview(w.ctx, "", 10, func(string) bool { return true })
	require.NoError(t, err)
	got := map[string]map[string][]float64{}
	check := func(name string, pools []api.QueueShare, hist []api.PoolHistory, first []api.SharePoint) {
		require.Len(t, hist, len(pools), name)
		got[name] = map[string][]float64{}
		for i, h := range hist {
			require.Equal(t, pools[i].Pool, h.Pool, "%s: the status's pool order", name)
			for _, p := range h.History {
				got[name][h.Pool] = append(got[name][h.Pool], p.Share)
			}
		}
		var shares []float64
		for _, p := range first {
			shares = append(shares, p.Share)
		}
		require.Equal(t, want[name]["a"], shares, "%s: History is the first pool's", name)
	}
	for _, q := range ov.Queues {
		check(q.Name, q.Status.Pools, q.PoolHistory, q.History)
	}
	for _, g := range ov.Groups {
		check("g/"+g.Name, g.Status.Pools, g.PoolHistory, g.History)
	}
	require.Equal(t, want, got)
}
