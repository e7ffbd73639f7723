package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/internal/fakeclock"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/submit"
)

// world is a service over the memory backend with a fake clock and
// deterministic ids.
type world struct {
	t     testing.TB
	ctx   context.Context
	clock *fakeclock.Clock
	be    *memory.Backend
	srv   *Server
	ids   *counter
}

// worldSchema is the schema of every world: cpu, memory, GPUs.
func worldSchema() *flotilla.ResourceSchema {
	return flotilla.MustResourceSchema("cpu", "memory", submit.DefaultGPUResource)
}

// newWorld starts a service; opts adjust its configuration.
func newWorld(t testing.TB, opts ...func(*Config)) *world {
	t.Helper()
	schema := worldSchema()
	w := &world{t: t, ctx: context.Background(), clock: fakeclock.New(testNow), be: memory.New(schema), ids: &counter{}}
	cfg := Config{
		Scheduler: scheduler.DefaultConfig(schema),
		Backend:   w.be,
		Clock:     w.clock,
		NewID:     w.ids.next,
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(w.ctx, cfg)
	require.NoError(t, err)
	w.srv = srv
	return w
}

// restart opens a new service over the same backend and clock.
func (w *world) restart(opts ...func(*Config)) {
	w.t.Helper()
	cfg := w.srv.st.cfg
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(w.ctx, cfg)
	require.NoError(w.t, err)
	w.srv = srv
}

func (w *world) queue(name string) {
	w.t.Helper()
	require.NoError(w.t, w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: name}))
}

// submit submits n one-cpu jobs (or the templates given) to queue/set.
func (w *world) submit(queue, set string, ts ...JobTemplate) []string {
	w.t.Helper()
	ids, err := w.srv.Submit(w.ctx, &SubmitRequest{Queue: queue, JobSet: set, Jobs: ts})
	require.NoError(w.t, err)
	return ids
}

func cpuJobs(n int, cpu string) JobTemplate {
	return JobTemplate{Count: intp(n), Requests: map[string]string{"cpu": cpu}}
}

// nodesOf returns n nodes named <cluster>-n<i> with cpu cores each.
func nodesOf(cluster string, n int, cpu int64) []flotilla.Node {
	s := worldSchema()
	out := make([]flotilla.Node, n)
	for i := range out {
		out[i] = flotilla.Node{Name: fmt.Sprintf("%s-n%d", cluster, i), Total: s.MustParse(map[string]string{
			"cpu": fmt.Sprint(cpu), "memory": "64Gi"})}
	}
	return out
}

func (w *world) report(r Report) *ReportReply {
	w.t.Helper()
	reply, err := w.srv.Report(w.ctx, &r)
	require.NoError(w.t, err)
	return reply
}

func (w *world) cycle() *CycleReport {
	w.t.Helper()
	rep, err := w.srv.Cycle(w.ctx)
	require.NoError(w.t, err)
	return rep
}

func (w *world) state(id string) events.State {
	w.t.Helper()
	st, err := w.srv.Status(w.ctx, id)
	require.NoError(w.t, err)
	return st[0].State
}

// held turns a reply's leases into the report entries of an executor
// that holds them in phase p.
func held(p JobPhase, ls []Lease) []JobReport {
	out := make([]JobReport, len(ls))
	for i, l := range ls {
		out[i] = JobReport{Job: l.Job.ID, Attempt: l.Attempt, Phase: p}
	}
	return out
}

func TestJobIsLeasedInTheFirstCycleAfterSubmissionWhenThereIsRoomAndRunsToSuccess(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	ids := w.submit("A", "s1", cpuJobs(3, "1"))
	rep := w.cycle()
	require.Equal(t, 3, rep.Leased)
	reply := w.report(Report{Cluster: "c1"})
	require.Len(t, reply.Leases, 3)
	for _, id := range ids {
		require.Equal(t, events.LeasedState, w.state(id))
	}
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, reply.Leases)})
	require.Equal(t, events.RunningState, w.state(ids[0]))
	reply2 := w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, reply.Leases)})
	require.Empty(t, reply2.Leases)
	for _, id := range ids {
		require.Equal(t, events.SucceededState, w.state(id))
	}
	evs, err := w.srv.Events(w.ctx, "A", "s1", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 12) // submitted, leased, running, succeeded × 3
}

func TestClusterThatStopsReportingHasItsJobsRunningElsewhereOneLeaseTimeoutLater(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	ids := w.submit("A", "s1", cpuJobs(2, "1"))
	w.cycle()
	r1 := w.report(Report{Cluster: "c1"})
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r1.Leases)})
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 4)})
	// c1 dies; c2 keeps reporting.
	for range 7 {
		w.clock.Advance(5 * time.Second)
		w.report(Report{Cluster: "c2"})
		w.cycle()
	}
	r2 := w.report(Report{Cluster: "c2"})
	require.Len(t, r2.Leases, 2)
	for _, id := range ids {
		st, err := w.srv.Status(w.ctx, id)
		require.NoError(t, err)
		require.Equal(t, "c2", st[0].Cluster)
		require.Equal(t, 2, st[0].Attempts)
		requireLeaseExpiredOnThenLeasedTo(t, w.jobEvents("A", "s1", id), "c1", "c2", testNow)
	}
	// The dead cluster, back, is told to kill its stale copies.
	back := w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, r1.Leases)})
	require.Len(t, back.Kill, 2)
}

func gangJobs(id string, n int, cpu string) JobTemplate {
	return JobTemplate{Count: intp(n), Requests: map[string]string{"cpu": cpu},
		Gang: &GangSpec{ID: id, Cardinality: n}}
}

func TestGangMemberWhoseLeaseIsReturnedTakesItsRunningMatesBackToTheQueueWithIt(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	ids := w.submit("A", "s1", gangJobs("g", 3, "1"))
	require.Equal(t, 3, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	require.Len(t, r.Leases, 3)
	running := held(PhaseRunning, r.Leases)
	w.report(Report{Cluster: "c1", Jobs: running})
	ret := slices.Clone(running)
	ret[0].Phase = PhaseReturned
	reply := w.report(Report{Cluster: "c1", Jobs: ret})
	for _, id := range ids {
		require.Equal(t, events.Queued, w.state(id), id)
	}
	require.Len(t, reply.Kill, 2, "the running mates are stopped")
	require.Equal(t, 3, w.cycle().Leased, "the gang is leased again whole")
}

func TestQueuedMembersOfAGangThatCannotRunWholeAreCancelledSayingWhy(t *testing.T) {
	t.Run("one queued member cancelled", func(t *testing.T) {
		w := newWorld(t)
		w.queue("A")
		ids := w.submit("A", "s1", gangJobs("g", 3, "1"))
		_, err := w.srv.Cancel(w.ctx, ids[0])
		require.NoError(t, err)
		for _, id := range ids {
			require.Equal(t, events.CancelledState, w.state(id), id)
		}
		st, err := w.srv.Status(w.ctx, ids[1])
		require.NoError(t, err)
		require.Contains(t, st[0].Reason, "gang g cannot run whole: 2 of its 3 members have not ended")
	})
	t.Run("a member succeeded, the others' leases ended", func(t *testing.T) {
		w := newWorld(t)
		w.queue("A")
		w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
		ids := w.submit("A", "s1", gangJobs("g", 2, "1"))
		w.cycle()
		r := w.report(Report{Cluster: "c1"})
		done := held(PhaseSucceeded, r.Leases[:1])
		done = append(done, held(PhaseReturned, r.Leases[1:])...)
		w.report(Report{Cluster: "c1", Jobs: done})
		states := []events.State{w.state(ids[0]), w.state(ids[1])}
		require.ElementsMatch(t, []events.State{events.SucceededState, events.CancelledState}, states)
	})
}

func TestGangMateStartingInTheReportThatReturnsAMemberIsQueuedAgainWithIt(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	ids := w.submit("A", "s1", gangJobs("g", 2, "1"))
	w.cycle()
	r := w.report(Report{Cluster: "c1"})
	jobs := held(PhaseRunning, r.Leases) // the mate starts in this very report
	jobs[0].Phase = PhaseReturned
	w.report(Report{Cluster: "c1", Jobs: jobs})
	for _, id := range ids {
		require.Equal(t, events.Queued, w.state(id), id)
	}
	require.Equal(t, 2, w.cycle().Leased)
}
