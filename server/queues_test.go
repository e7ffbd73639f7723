package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

func TestQueuesAreCreatedUpdatedListedSortedByNameAndDeleted(t *testing.T) {
	w := newWorld(t)
	ctx := w.ctx
	require.NoError(t, w.srv.CreateQueue(ctx, flotilla.Queue{Name: "B", PriorityFactor: 2}))
	require.NoError(t, w.srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	require.ErrorIs(t, w.srv.CreateQueue(ctx, flotilla.Queue{Name: "A", PriorityFactor: 5}), backend.ErrExists)

	qs, err := w.srv.ListQueues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 2)
	require.Equal(t, "A", qs[0].Name)
	require.Equal(t, 0.0, qs[0].PriorityFactor, "a refused create changes nothing")
	require.Equal(t, "B", qs[1].Name)

	limits := map[string]map[string]float64{flotilla.ArmadaPreemptible: {"cpu": 0.5}}
	require.NoError(t, w.srv.UpdateQueue(ctx, flotilla.Queue{Name: "A", PriorityFactor: 3, LimitsByPriorityClass: limits}))
	limits[flotilla.ArmadaPreemptible]["cpu"] = 0.9 // the service keeps its own copy
	q, err := w.srv.Queue(ctx, "A")
	require.NoError(t, err)
	require.Equal(t, 3.0, q.PriorityFactor)
	require.Equal(t, 0.5, q.LimitsByPriorityClass[flotilla.ArmadaPreemptible]["cpu"])
	stored, err := w.be.Queue(ctx, "A")
	require.NoError(t, err)
	require.Equal(t, 3.0, stored.PriorityFactor)

	require.ErrorIs(t, w.srv.UpdateQueue(ctx, flotilla.Queue{Name: "C"}), backend.ErrNotFound)
	_, err = w.srv.Queue(ctx, "C")
	require.ErrorIs(t, err, backend.ErrNotFound)

	require.NoError(t, w.srv.DeleteQueue(ctx, "B"))
	require.ErrorIs(t, w.srv.DeleteQueue(ctx, "B"), backend.ErrNotFound)
	qs, err = w.srv.ListQueues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, "A", qs[0].Name)
	_, err = w.submitErr("B", "s1", one("1"))
	requireProblems(t, err, problem{"queue", "B", backend.ErrNotFound})
}

func TestQueueWithLiveJobsCannotBeDeletedAndWithFinishedJobsCan(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	ids := w.submit("A", "s1", one("1"), one("1"))
	w.cycle()
	w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, w.leasesOf("c1")[:1])})
	require.Equal(t, "running", w.state(ids[0]).String())
	// One running job, one leased.
	_, err := w.srv.Cancel(w.ctx, ids[1])
	require.NoError(t, err)
	for _, live := range []string{"running and leased", "running"} {
		require.ErrorIs(t, w.srv.DeleteQueue(w.ctx, "A"), backend.ErrNotEmpty, live)
		q, err := w.srv.Queue(w.ctx, "A")
		require.NoError(t, err, "a refused delete keeps the queue")
		require.Equal(t, "A", q.Name)
		// The leased job is stopped by its executor.
		w.report(Report{Cluster: "c1", Jobs: []JobReport{
			{Job: ids[0], Attempt: 1, Phase: PhaseRunning},
			{Job: ids[1], Attempt: 1, Phase: PhaseStopped},
		}})
	}
	// A queued job is live too.
	queued := w.submit("A", "s2", one("100"))
	w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: ids[0], Attempt: 1, Phase: PhaseSucceeded}}})
	require.ErrorIs(t, w.srv.DeleteQueue(w.ctx, "A"), backend.ErrNotEmpty)
	_, err = w.srv.Cancel(w.ctx, queued...)
	require.NoError(t, err)

	require.NoError(t, w.srv.DeleteQueue(w.ctx, "A"))
	qs, err := w.srv.ListQueues(w.ctx)
	require.NoError(t, err)
	require.Empty(t, qs)
	// Its logs are kept: the queue created again continues them.
	w.queue("A")
	require.Equal(t, []string{"submitted", "submitted", "leased", "leased", "running", "cancel-requested", "cancelled", "succeeded"},
		types(w.log("A", "s1")))
}

func TestBadQueueDefinitionsAreFieldErrorsAndChangeNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    flotilla.Queue
		want []problem
	}{
		{name: "negative factor", q: flotilla.Queue{Name: "A", PriorityFactor: -1},
			want: []problem{{`queue "A".priorityFactor`, "-1", flotilla.ErrNegative}}},
		{name: "limits naming an unknown class", q: flotilla.Queue{Name: "A",
			LimitsByPriorityClass: map[string]map[string]float64{"urgent": {"cpu": 0.5}}},
			want: []problem{{`queue "A".limitsByPriorityClass`, "urgent", flotilla.ErrUnknownName}}},
		{name: "limits naming no class", q: flotilla.Queue{Name: "A",
			LimitsByPriorityClass: map[string]map[string]float64{"": {"cpu": 0.5}}},
			want: []problem{{`queue "A".limitsByPriorityClass`, "", flotilla.ErrRequired}}},
		{name: "limit out of range", q: flotilla.Queue{Name: "A",
			LimitsByPriorityClass: map[string]map[string]float64{flotilla.ArmadaDefault: {"cpu": 1.5}}},
			want: []problem{{`queue "A".limitsByPriorityClass.armada-default.cpu`, "1.5", flotilla.ErrOutOfRange}}},
		{name: "name with a slash", q: flotilla.Queue{Name: "team/A"},
			want: []problem{{`queue "team/A".name`, "team/A", flotilla.ErrMalformed}}},
		{name: "name with a control character", q: flotilla.Queue{Name: "A\n"},
			want: []problem{{`queue "A\n".name`, "A\n", flotilla.ErrMalformed}}},
		{name: "no name", q: flotilla.Queue{},
			want: []problem{{`queue "".name`, "", flotilla.ErrRequired}}},
		{name: "every problem at once", q: flotilla.Queue{Name: "a/b", PriorityFactor: -2,
			LimitsByPriorityClass: map[string]map[string]float64{"x": {"cpu": 0.1}}},
			want: []problem{
				{`queue "a/b".priorityFactor`, "-2", flotilla.ErrNegative},
				{`queue "a/b".limitsByPriorityClass`, "x", flotilla.ErrUnknownName},
				{`queue "a/b".name`, "a/b", flotilla.ErrMalformed},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			requireProblems(t, w.srv.CreateQueue(w.ctx, tc.q), tc.want...)
			qs, err := w.be.ListQueues(w.ctx)
			require.NoError(t, err)
			require.Empty(t, qs, "a refused create stores nothing")

			// The same definition as an update (of an existing queue when
			// the name is valid).
			nameOK := w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: tc.q.Name, PriorityFactor: 4}) == nil
			requireProblems(t, w.srv.UpdateQueue(w.ctx, tc.q), tc.want...)
			if nameOK {
				stored, err := w.be.Queue(w.ctx, tc.q.Name)
				require.NoError(t, err)
				require.Equal(t, 4.0, stored.PriorityFactor, "a refused update changes nothing")
			}
		})
	}
}

func TestQueueUpdateTakesEffectInTheNextCycle(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 8)})
	a := w.submit("A", "s", cpuJobs(8, "1"))
	b := w.submit("B", "s", cpuJobs(8, "1"))
	// B's factor 3 gives it a third of A's weight: fair shares 3/4 and 1/4.
	require.NoError(t, w.srv.UpdateQueue(w.ctx, flotilla.Queue{Name: "B", PriorityFactor: 3}))
	rep := w.cycle()
	require.Equal(t, 8, rep.Leased)
	count := func(ids []string) int {
		n := 0
		for _, id := range ids {
			if w.state(id).Live() {
				n++
			}
		}
		return n
	}
	require.Equal(t, 6, count(a))
	require.Equal(t, 2, count(b))
	qa, err := w.srv.Queue(w.ctx, "A")
	require.NoError(t, err)
	qb, err := w.srv.Queue(w.ctx, "B")
	require.NoError(t, err)
	require.InDelta(t, 0.75, qa.Report.FairShare, 1e-9)
	require.InDelta(t, 0.25, qb.Report.FairShare, 1e-9)
	require.Equal(t, 6, qa.Leased)
	require.Equal(t, 2, qa.Queued)
}
