package server

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// gangOf is a gang of n one-cpu members in one template.
func gangOf(id string, n int) JobTemplate {
	t := cpuJobs(n, "1")
	t.Gang = &GangSpec{ID: id, Cardinality: n}
	return t
}

func TestSubmitWithAnyProblemIsRejectedWholeNamingEveryProblemAndStoresNothing(t *testing.T) {
	bad := func(mod func(*JobTemplate)) JobTemplate {
		t := one("1")
		mod(&t)
		return t
	}
	for _, tc := range []struct {
		name  string
		queue string
		jobs  []JobTemplate
		want  []problem
	}{
		{name: "unknown queue", queue: "Z", jobs: []JobTemplate{one("1")},
			want: []problem{{"queue", "Z", backend.ErrNotFound}}},
		{name: "unknown class", queue: "A", jobs: []JobTemplate{one("1"), bad(func(t *JobTemplate) { t.PriorityClass = "urgent" })},
			want: []problem{{"jobs[1].priorityClass", "urgent", flotilla.ErrUnknownName}}},
		{name: "malformed quantity", queue: "A", jobs: []JobTemplate{bad(func(t *JobTemplate) { t.Requests["memory"] = "4 GB" })},
			want: []problem{{"jobs[0].requests.memory", "4 GB", flotilla.ErrMalformed}}},
		{name: "gang split across requests", queue: "A", jobs: []JobTemplate{one("1"), gangOf("g", 2), bad(func(t *JobTemplate) {
			t.Gang = &GangSpec{ID: "h", Cardinality: 3}
		})},
			want: []problem{{"jobs[2].gang.cardinality", "3", flotilla.ErrInconsistent}}},
		{name: "every problem at once", queue: "Z", jobs: []JobTemplate{
			bad(func(t *JobTemplate) { t.PriorityClass = "urgent" }),
			bad(func(t *JobTemplate) { t.Requests["cpu"] = "x"; t.TerminationGracePeriod = "1ms" }),
		},
			want: []problem{
				{"queue", "Z", backend.ErrNotFound},
				{"jobs[0].priorityClass", "urgent", flotilla.ErrUnknownName},
				{"jobs[1].requests.cpu", "x", flotilla.ErrMalformed},
				{"jobs[1].terminationGracePeriod", "1ms", flotilla.ErrOutOfRange},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.queue("A")
			before := w.stored([2]string{"A", "s1"})
			ids, err := w.submitErr(tc.queue, "s1", tc.jobs...)
			require.Nil(t, ids)
			requireProblems(t, err, tc.want...)
			w.requireUnchanged(before)
			require.Empty(t, w.log("A", "s1"))
			require.Zero(t, w.srv.st.queued.store.Len())
			require.Zero(t, w.srv.st.jobs.len())
		})
	}
}

func TestGangMembersInTwoRequestsAreRejectedAsIncompleteBothTimes(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	half := cpuJobs(2, "1")
	half.Gang = &GangSpec{ID: "g", Cardinality: 4}
	for range 2 {
		_, err := w.submitErr("A", "s1", half)
		requireProblems(t, err, problem{"jobs[0].gang.cardinality", "4", flotilla.ErrInconsistent})
	}
	require.Empty(t, w.log("A", "s1"))
	whole := half
	whole.Count = intp(4)
	require.Len(t, w.submit("A", "s1", whole), 4)
}

func TestGangIDUsedByLiveJobsOfTheQueueCannotBeReused(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	first := w.submit("A", "s1", gangOf("g", 2))
	_, err := w.submitErr("A", "s2", one("1"), gangOf("g", 3))
	requireProblems(t, err, problem{"gang.id", "g", flotilla.ErrDuplicate})
	require.Empty(t, w.log("A", "s2"))

	// Another queue's gang ids are its own.
	w.submit("B", "s1", gangOf("g", 3))
	// Once the gang's jobs have ended its id is free again.
	_, err = w.srv.Cancel(w.ctx, first...)
	require.NoError(t, err)
	require.Len(t, w.submit("A", "s2", gangOf("g", 3)), 3)
}

func TestClientIDMakesSubmitIdempotent(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	tpl := cpuJobs(3, "1")
	tpl.ClientID = "train-7"
	solo := one("2")
	solo.ClientID = "solo"
	ids := w.submit("A", "s1", tpl, solo, one("1"))
	require.Len(t, ids, 5)
	logBefore := w.log("A", "s1")
	require.Len(t, logBefore, 5)
	for k, cid := range []string{"train-7-0", "train-7-1", "train-7-2", "solo"} {
		got, err := w.be.JobByClientID(w.ctx, "A", cid)
		require.NoError(t, err)
		require.Equal(t, ids[k], got, cid)
	}

	// The same request again: the same ids for the client ids, nothing
	// stored for them (the job without a client id is new).
	again := w.submit("A", "s1", tpl, solo)
	require.Equal(t, ids[:4], again)
	require.Equal(t, logBefore, w.log("A", "s1"))
	require.Equal(t, 5, w.srv.st.queued.store.Len())

	// An expanded client id names its job on its own, and in any job set.
	got := w.submit("A", "s9", JobTemplate{ClientID: "train-7-1", Requests: map[string]string{"cpu": "1"}})
	require.Equal(t, []string{ids[1]}, got)
	require.Empty(t, w.log("A", "s9"))

	// Partly used: the unused client ids are stored, the used ones named.
	more := cpuJobs(5, "1")
	more.ClientID = "train-7"
	mixed := w.submit("A", "s1", more)
	require.Equal(t, ids[:3], mixed[:3])
	require.NotContains(t, ids, mixed[3])
	require.Len(t, w.log("A", "s1"), 7)

	// Client ids are per queue.
	other := w.submit("B", "s1", tpl)
	require.NotContains(t, ids, other[0])
}

func TestGangWhoseClientIDsWerePartlyUsedIsRejectedAndAWhollyUsedOneIsIdempotent(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	used := one("1")
	used.ClientID = "m-0"
	w.submit("A", "s1", used)
	g := gangOf("g", 2)
	g.ClientID = "m"
	_, err := w.submitErr("A", "s1", g)
	requireProblems(t, err, problem{"clientId", "m-0", flotilla.ErrInconsistent})
	require.Len(t, w.log("A", "s1"), 1)

	g.ClientID = "n"
	ids := w.submit("A", "s1", g)
	// Submitted again while live: the gang id is its own, not a reuse.
	require.Equal(t, ids, w.submit("A", "s1", g))
	require.Len(t, w.log("A", "s1"), 3)
}

func TestCancelOfAQueuedJobEndsItAtOnceAndItIsNeverLeased(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	ids := w.submit("A", "s1", one("1"), one("1"))
	res, err := w.srv.Cancel(w.ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, CancelResult{Cancelled: []string{ids[0]}}, res)
	require.Equal(t, events.CancelledState, w.state(ids[0]))
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	require.Equal(t, 1, w.cycle().Leased)
	require.Equal(t, []string{"submitted", "cancelled"}, types(w.jobLog("A", "s1", ids[0])))
	leases := w.leasesOf("c1")
	require.Len(t, leases, 1)
	require.Equal(t, ids[1], leases[0].Job.ID)
}

func TestCancelOfALeasedOrRunningJobIsRequestedKilledByItsExecutorAndEndsWhenItStops(t *testing.T) {
	for _, phase := range []JobPhase{PhasePending, PhaseRunning} {
		t.Run(string(phase), func(t *testing.T) {
			w := newWorld(t)
			w.queue("A")
			w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
			id := w.submit("A", "s1", one("1"))[0]
			w.cycle()
			held := held(phase, w.leasesOf("c1"))
			w.report(Report{Cluster: "c1", Jobs: held})

			res, err := w.srv.Cancel(w.ctx, id)
			require.NoError(t, err)
			require.Equal(t, CancelResult{Requested: []string{id}}, res)
			st := w.status(id)
			require.True(t, st.State.Live())
			require.True(t, st.CancelRequested)

			reply := w.report(Report{Cluster: "c1", Jobs: held})
			require.Empty(t, reply.Leases)
			require.Equal(t, []Kill{{Job: id, Attempt: 1, Reason: "cancellation requested", GracePeriod: time.Second}}, reply.Kill)

			w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: 1, Phase: PhaseStopped}}})
			require.Equal(t, events.CancelledState, w.state(id))
			log := types(w.jobLog("A", "s1", id))
			require.Equal(t, "cancel-requested", log[len(log)-2])
			require.Equal(t, "cancelled", log[len(log)-1])
			require.Equal(t, 0, w.cycle().Leased, "a cancelled job is not leased again")
		})
	}
}

func TestCancelledJobWhoseExecutorDiesEndsCancelledOnLeaseExpiryNotRequeued(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	id := w.submit("A", "s1", one("1"))[0]
	w.cycle()
	_, err := w.srv.Cancel(w.ctx, id)
	require.NoError(t, err)
	// The executor dies: no report at all.
	w.clock.Advance(DefaultLeaseTimeout)
	rep := w.cycle()
	require.Equal(t, 1, rep.Expired)
	require.Zero(t, rep.Leased)
	st := w.status(id)
	require.Equal(t, events.CancelledState, st.State)
	require.Equal(t, 1, st.Attempts)
	require.Equal(t, []string{"submitted", "leased", "cancel-requested", "cancelled"}, types(w.jobLog("A", "s1", id)))
	require.Zero(t, w.srv.st.queued.store.Len())
}

func TestCancelOfAFinishedJobOrARequestedOneChangesNothing(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	ids := w.submit("A", "s1", one("1"), one("1"))
	w.cycle()
	leases := w.leasesOf("c1")
	w.report(Report{Cluster: "c1", Jobs: []JobReport{
		{Job: leases[0].Job.ID, Attempt: 1, Phase: PhaseSucceeded},
		{Job: leases[1].Job.ID, Attempt: 1, Phase: PhaseRunning},
	}})
	done, running := leases[0].Job.ID, leases[1].Job.ID
	require.ElementsMatch(t, ids, []string{done, running})
	_, err := w.srv.Cancel(w.ctx, running)
	require.NoError(t, err)
	before := w.stored([2]string{"A", "s1"})
	res, err := w.srv.Cancel(w.ctx, done, running, done)
	require.NoError(t, err)
	require.Equal(t, CancelResult{Finished: []string{done, running}}, res)
	w.requireUnchanged(before)
	require.Equal(t, events.SucceededState, w.state(done))
}

func TestCancelNamingAnUnknownJobIsNotFoundAndCancelsNothing(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	ids := w.submit("A", "s1", one("1"), one("1"))
	before := w.stored([2]string{"A", "s1"})
	_, err := w.srv.Cancel(w.ctx, ids[0], "nope", ids[1], "nada")
	requireProblems(t, err,
		problem{"job", "nope", backend.ErrNotFound},
		problem{"job", "nada", backend.ErrNotFound})
	w.requireUnchanged(before)
	for _, id := range ids {
		require.Equal(t, events.Queued, w.state(id))
	}
}

func TestCancelJobSetCancelsEveryJobOfTheSetThatHasNotEnded(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 2)})
	s1 := w.submit("A", "s1", one("1"), one("1"))
	other := w.submit("A", "s2", one("1"))
	w.cycle()
	leases := w.leasesOf("c1") // two of the three
	require.Len(t, leases, 2)
	var reports []JobReport
	for i, l := range leases {
		p := JobReport{Job: l.Job.ID, Attempt: 1, Phase: PhaseRunning}
		if i == 0 {
			p.Phase = PhaseSucceeded
		}
		reports = append(reports, p)
	}
	w.report(Report{Cluster: "c1", Jobs: reports})
	queued := w.submit("A", "s1", one("3"))[0]

	state := map[string]events.State{}
	for _, id := range append(append(s1, other...), queued) {
		state[id] = w.state(id)
	}
	res, err := w.srv.CancelJobSet(w.ctx, "A", "s1")
	require.NoError(t, err)
	var wantCancelled, wantRequested []string
	for _, id := range append(s1, queued) {
		switch state[id] {
		case events.Queued:
			wantCancelled = append(wantCancelled, id)
			require.Equal(t, events.CancelledState, w.state(id))
		case events.RunningState, events.LeasedState:
			wantRequested = append(wantRequested, id)
			require.True(t, w.status(id).CancelRequested)
		default:
			require.Equal(t, state[id], w.state(id), "a finished job is left alone")
		}
	}
	require.ElementsMatch(t, wantCancelled, res.Cancelled)
	require.ElementsMatch(t, wantRequested, res.Requested)
	require.Len(t, append(res.Cancelled, res.Requested...), 2)
	require.Equal(t, state[other[0]], w.state(other[0]), "another job set is left alone")
	require.False(t, w.status(other[0]).CancelRequested)

	_, err = w.srv.CancelJobSet(w.ctx, "Z", "s1")
	requireProblems(t, err, problem{"queue", "Z", backend.ErrNotFound})
}

func TestStatusOfAQueuedJobIsTheLastCyclesExplanation(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	id := w.submit("A", "s1", one("6"))[0]
	require.Equal(t, "waiting for the next cycle", w.status(id).Reason)
	w.cycle()
	st := w.status(id)
	require.Equal(t, events.Queued, st.State)
	require.NotNil(t, st.Why)
	require.Contains(t, st.Reason, "short of cpu")
	require.Equal(t, st.Why.Message, st.Reason)
}

func TestStatusOfALeasedJobNamesItsClusterAndNode(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	id := w.submit("A", "s1", one("1"))[0]
	w.cycle()
	st := w.status(id)
	require.Equal(t, events.LeasedState, st.State)
	require.Equal(t, "c1", st.Cluster)
	require.Equal(t, "c1-n0", st.Node)
	require.Equal(t, 1, st.Attempts)
	require.Equal(t, "A", st.Queue)
	require.Equal(t, "s1", st.JobSet)
}

func TestStatusNamingAnUnknownJobIsNotFound(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	id := w.submit("A", "s1", one("1"))[0]
	_, err := w.srv.Status(w.ctx, id, "nope")
	requireProblems(t, err, problem{"job", "nope", backend.ErrNotFound})
}

// watcher runs Watch in a goroutine, handing each event over a channel;
// the test receives them one by one, so nothing depends on timing.
type watcher struct {
	evs  chan events.Event
	done chan error
	stop context.CancelFunc
}

func (w *world) watch(queue, set string, from uint64, until func(events.Event) bool) *watcher {
	ctx, cancel := context.WithCancel(w.ctx)
	wa := &watcher{evs: make(chan events.Event), done: make(chan error, 1), stop: cancel}
	go func() {
		wa.done <- w.srv.Watch(ctx, queue, set, from, func(e events.Event) error {
			select {
			case wa.evs <- e:
			case <-ctx.Done():
				return ctx.Err()
			}
			if until != nil && until(e) {
				return errStopWatch
			}
			return nil
		})
	}()
	return wa
}

var errStopWatch = errors.New("stop watching")

// next receives n events.
func (wa *watcher) next(t *testing.T, n int) []events.Event {
	t.Helper()
	out := make([]events.Event, n)
	for i := range out {
		select {
		case out[i] = <-wa.evs:
		case err := <-wa.done:
			t.Fatalf("watch ended after %d events: %v", i, err)
		}
	}
	return out
}

func TestWatchSeesTheStoredEventsThenNewOnesAndEndsWithTheContext(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	ids := w.submit("A", "s1", one("1"), one("1"))
	w.submit("A", "s2", one("1"))
	wa := w.watch("A", "s1", 0, nil)
	got := wa.next(t, 2)
	require.Equal(t, []uint64{1, 2}, []uint64{got[0].Seq, got[1].Seq})
	require.Equal(t, ids, []string{got[0].Job, got[1].Job})

	_, err := w.srv.Cancel(w.ctx, ids[1])
	require.NoError(t, err)
	got = wa.next(t, 1)
	require.Equal(t, uint64(3), got[0].Seq)
	require.Equal(t, events.Cancelled, got[0].Type)

	wa.stop()
	require.ErrorIs(t, <-wa.done, context.Canceled)
}

func TestWatchResumedFromTheLastSeqPlusOneMissesNothingAndSeesNothingTwice(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.submit("A", "s1", cpuJobs(3, "1"))
	// The first watcher stops after the third event.
	wa := w.watch("A", "s1", 0, func(e events.Event) bool { return e.Seq == 3 })
	first := wa.next(t, 3)
	require.ErrorIs(t, <-wa.done, errStopWatch)

	// Meanwhile the log grows.
	w.cycle()
	w.submit("A", "s1", one("1"))
	last := first[len(first)-1].Seq
	wb := w.watch("A", "s1", last+1, nil)
	second := wb.next(t, 4)
	_, err := w.srv.CancelJobSet(w.ctx, "A", "s1")
	require.NoError(t, err)
	second = append(second, wb.next(t, 4)...)
	wb.stop()
	require.ErrorIs(t, <-wb.done, context.Canceled)

	require.Equal(t, w.log("A", "s1"), append(first, second...))
	for i, e := range append(first, second...) {
		require.Equal(t, uint64(i+1), e.Seq)
	}
}

func TestSubmitJSONNamesAnUnknownQueueTogetherWithTheFilesTypeErrors(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	_, err := w.srv.SubmitJSON(w.ctx, []byte(`{"queue": "Z", "jobSet": 7, "jobs": [
		{"requests": {"cpu": "1"}, "priorityClass": "urgent"}]}`))
	requireProblems(t, err,
		problem{"jobSet", "7", flotilla.ErrMalformed},
		problem{"jobs[0].priorityClass", "urgent", flotilla.ErrUnknownName},
		problem{"queue", "Z", backend.ErrNotFound})

	ids, err := w.srv.SubmitJSON(w.ctx, []byte(`{"queue": "A", "jobSet": "s1", "jobs": [{"count": 2, "requests": {"cpu": "1"}}]}`))
	require.NoError(t, err)
	require.Len(t, ids, 2)
	require.Len(t, w.log("A", "s1"), 2)
}

// TestSubmitAllocatesPerRequestNotFivePerJob: a request of 1,000 jobs
// (ids, client ids, jobs, the service's and the backend's records and
// events) costs a few allocations per request plus the store's entry and
// the maps' growth per job, not an id string, a client id string, a
// not-found error and a job record each.
func TestSubmitAllocatesPerRequestNotFivePerJob(t *testing.T) {
	w := newWorld(t, ulids)
	w.queue("A")
	const runs = 20
	reqs := make([]*SubmitRequest, runs+1)
	for i := range reqs {
		reqs[i] = submitBatch("A", "s", "client-"+strconv.Itoa(i))
	}
	next := 0
	perJob := testing.AllocsPerRun(runs, func() {
		_, err := w.srv.Submit(w.ctx, reqs[next])
		next++
		require.NoError(t, err)
	}) / 1000
	t.Logf("%.2f allocations per job", perJob)
	require.Less(t, perJob, 2.0)
}

// TestSubmitAllocatesNothingPerJob: what a request allocates grows with
// its templates, not its jobs. The jobs and records come in blocks, and
// the job ids are indexed without maps (internal/idindex): a request of
// 2,000 jobs allocates little more than one of 1,000 in the same
// templates does (blocks, and the queue's B-tree nodes and their item
// arrays, about one per ten jobs), not an entry and a share of four maps'
// growth per job more.
func TestSubmitAllocatesNothingPerJob(t *testing.T) {
	w := newWorld(t, ulids)
	w.queue("A")
	const runs = 20
	allocs := func(count int) float64 {
		reqs := make([]*SubmitRequest, runs+1)
		for i := range reqs {
			reqs[i] = submitBatch("A", "s", "client-"+strconv.Itoa(count)+"-"+strconv.Itoa(i))
			for k := range reqs[i].Jobs {
				reqs[i].Jobs[k].Count = intp(count)
			}
		}
		next := 0
		return testing.AllocsPerRun(runs, func() {
			_, err := w.srv.Submit(w.ctx, reqs[next])
			next++
			require.NoError(t, err)
		})
	}
	small, large := allocs(100), allocs(200)
	perJob := (large - small) / 1000
	t.Logf("%.0f allocations for 1,000 jobs, %.0f for 2,000: %.3f per extra job", small, large, perJob)
	require.Less(t, perJob, 0.2)
}

// TestSubmitWritesItsEventsInAScratchItClearsAfterTheWrite: a request's
// submitted events are built in a scratch kept between requests (not 160
// bytes of garbage per job), cleared once the write is applied so that it
// keeps no job's strings alive; a request larger than the scratch's bound
// gets its own.
func TestSubmitWritesItsEventsInAScratchItClearsAfterTheWrite(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.submit("A", "s", cpuJobs(10, "1"))
	require.GreaterOrEqual(t, cap(w.srv.st.scratch.submitted), 10)
	first := &w.srv.st.scratch.submitted[:1][0]
	for _, e := range w.srv.st.scratch.submitted[:cap(w.srv.st.scratch.submitted)] {
		require.Zero(t, e)
	}
	w.submit("A", "s", cpuJobs(5, "1"))
	require.Same(t, first, &w.srv.st.scratch.submitted[:1][0], "the scratch is reused")
	w.submit("A", "s", cpuJobs(maxSubmitScratch+1, "1"))
	require.LessOrEqual(t, cap(w.srv.st.scratch.submitted), maxSubmitScratch)
	require.Equal(t, 16+maxSubmitScratch, w.srv.st.queued.store.Len())
}
