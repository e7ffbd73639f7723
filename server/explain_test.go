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
