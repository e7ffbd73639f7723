package scheduler_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// PositionOf counts the queue's jobs before the job in scheduling order
// (class priority, then priority, then submit time) and sums what they
// request; a job the queue does not hold has no position.
func TestPositionOfCountsTheJobsAheadInSchedulingOrder(t *testing.T) {
	w := newWorld(t)
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	late := w.submit("A", 1, "1", withPriority(5), preemptible)[0]
	first := w.submit("A", 1, "2", withPriority(1), preemptible)[0]
	second := w.submit("A", 1, "3", withPriority(1), preemptible)[0]
	urgent := w.submit("A", 1, "4", withPriority(9), nonPreemptible)[0]
	other := w.submit("B", 100, "1")[0]
	for _, c := range []struct {
		job   *flotilla.Job
		ahead int
		cpu   string // summed requests ahead; "" for none
	}{
		{urgent, 0, ""},
		{first, 1, "4"},
		{second, 2, "6"},
		{late, 3, "9"},
	} {
		pos, ok, err := scheduler.PositionOf(w.store, "A", c.job.ID)
		require.NoError(t, err)
		require.True(t, ok, c.job.ID)
		assert.Equal(t, c.ahead, pos.Ahead, c.job.ID)
		assert.Equal(t, 4, pos.Queued, c.job.ID)
		if c.cpu == "" {
			assert.Nil(t, pos.AheadRequests, c.job.ID)
		} else {
			assert.Equal(t, w.res(c.cpu), pos.AheadRequests, c.job.ID)
		}
	}
	pos, ok, err := scheduler.PositionOf(w.store, "B", other.ID)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 100, pos.Queued)
	for _, c := range []struct{ queue, id string }{{"A", other.ID}, {"A", "nope"}, {"C", first.ID}} {
		_, ok, err := scheduler.PositionOf(w.store, c.queue, c.id)
		require.NoError(t, err)
		assert.False(t, ok, "%s in %s", c.id, c.queue)
	}
	_, ok, err = scheduler.PositionOf(nil, "A", first.ID)
	require.NoError(t, err)
	assert.False(t, ok)
}
