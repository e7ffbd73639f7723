package server

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

// A queued job's detail gives its place in its queue (jobs ahead, what
// they request), its class and priority and, after a cycle, its queue's
// shares; a leased job has no place; an unknown id is ErrNotFound naming
// the job field.
func TestDetailGivesAQueuedJobsPlaceClassAndQueueShares(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 2)})
	ids := w.submit("A", "s", cpuJobs(5, "1"))
	d, err := w.srv.Detail(w.ctx, ids[3])
	require.NoError(t, err)
	require.NotNil(t, d[0].Position)
	assert.Equal(t, 3, d[0].Position.Ahead)
	assert.Equal(t, 5, d[0].Position.Queued)
	assert.Equal(t, worldSchema().MustParse(map[string]string{"cpu": "3"}), d[0].Position.AheadRequests)
	assert.Equal(t, flotilla.ArmadaDefault, d[0].Class)
	assert.Equal(t, int32(30000), d[0].ClassPriority)
	assert.Nil(t, d[0].Queue, "no cycle yet")
	assert.Nil(t, d[0].Flux)

	w.cycle()
	d, err = w.srv.Detail(w.ctx, ids[0], ids[3])
	require.NoError(t, err)
	assert.Nil(t, d[0].Position, "leased")
	require.NotNil(t, d[1].Position)
	assert.Equal(t, 1, d[1].Position.Ahead, "two of the three ahead were leased")
	require.NotNil(t, d[1].Queue)
	assert.Equal(t, "A", d[1].Queue.Name)
	assert.InDelta(t, 1.0, d[1].Queue.Share, 1e-9)

	_, err = w.srv.Detail(w.ctx, "nope")
	var fe *flotilla.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "job", fe.Field)
	assert.ErrorIs(t, err, backend.ErrNotFound)
}

// With flux priorities, the detail carries the job's flux breakdown: its
// association and the terms whose sum is its priority.
func TestDetailCarriesTheFluxBreakdownOfTheJobsAssociation(t *testing.T) {
	w := fluxWorld(t, 1)
	ids := w.submitAs("alice", 2)
	d, err := w.srv.Detail(w.ctx, ids[1])
	require.NoError(t, err)
	require.NotNil(t, d[0].Flux)
	assert.Equal(t, "alice", d[0].Flux.User)
	assert.Equal(t, "A", d[0].Flux.Bank)
	assert.Equal(t, ids[1], d[0].Flux.JobID)
	assert.NotZero(t, d[0].Flux.Calculation.Priority)
	assert.Equal(t, w.jobPriority(ids[1]), d[0].Priority)
}

// One Detail call reads at most DetailPositionLimit queue entries in all,
// however many jobs it names: a request for thousands of jobs at the back
// of a long queue holds the service's lock about 20 ms in all, not 20 ms
// per job. Jobs past the budget get a Partial position.
func TestDetailReadsAtMostThePositionLimitInAllWhateverTheNumberOfJobs(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.srv.st.positionLimit = 10
	// Equal jobs go by id: "job-1", "job-10", ...
	ids := slices.Sorted(slices.Values(w.submit("A", "s", cpuJobs(40, "1"))))
	asked := ids[20:]
	d, err := w.srv.Detail(w.ctx, asked...)
	require.NoError(t, err)
	require.Len(t, d, len(asked))
	read := 0
	for i, x := range d {
		require.NotNil(t, x.Position, asked[i])
		assert.True(t, x.Position.Partial, asked[i])
		assert.Equal(t, 40, x.Position.Queued, asked[i])
		read += x.Position.Read
	}
	assert.Equal(t, 10, read)
	assert.Equal(t, 10, d[0].Position.Ahead, "the first job asked gets the whole budget")

	// Jobs within the budget are placed exactly.
	d, err = w.srv.Detail(w.ctx, ids[0], ids[3])
	require.NoError(t, err)
	assert.False(t, d[0].Position.Partial)
	assert.Equal(t, 0, d[0].Position.Ahead)
	assert.False(t, d[1].Position.Partial)
	assert.Equal(t, 3, d[1].Position.Ahead)
}

// A queued job's place is in the queue of the pool its explanation is
// about: jobs that accept only another pool are not ahead of it, before a
// cycle (its first pool) and after one (its report's pool); a job
// accepting no known pool is placed among every job.
func TestDetailPlacesAQueuedJobAmongTheJobsOfItsExplanationsPool(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	// One-cpu nodes: the two-cpu jobs stay queued.
	w.report(Report{Cluster: "ca", Pool: "a", Nodes: nodesOf("ca", 1, 1)})
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 1)})
	onlyB := w.submit("A", "s", JobTemplate{Count: intp(5), Requests: map[string]string{"cpu": "2"}, Pools: []string{"b"}})
	onlyA := w.submit("A", "s", JobTemplate{Requests: map[string]string{"cpu": "2"}, Pools: []string{"a"}})
	nowhere := w.submit("A", "s", JobTemplate{Requests: map[string]string{"cpu": "2"}, Pools: []string{"c"}})
	place := func(id string) (int, int, string) {
		t.Helper()
		d, err := w.srv.Detail(w.ctx, id)
		require.NoError(t, err)
		require.NotNil(t, d[0].Position)
		return d[0].Position.Ahead, d[0].Position.Queued, d[0].Pool
	}
	for round := range 2 {
		ahead, queued, _ := place(onlyA[0])
		assert.Equal(t, 0, ahead, "round %d: pool a's queue holds no job before it", round)
		assert.Equal(t, 1, queued, "round %d", round)
		ahead, queued, _ = place(onlyB[4])
		assert.Equal(t, 4, ahead, "round %d", round)
		assert.Equal(t, 5, queued, "round %d", round)
		ahead, queued, _ = place(nowhere[0])
		assert.Equal(t, 6, ahead, "round %d: no known pool: among every job", round)
		assert.Equal(t, 7, queued, "round %d", round)
		w.cycle()
	}
	_, _, pool := place(onlyA[0])
	assert.Equal(t, "a", pool)
}
