package queue

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

// TestStoreReusesTheRoomOfRemovedJobs checks that a store whose size
// holds steady allocates nothing: an Add takes the entry a Remove freed,
// and the index by ID is not a map that allocates as it churns.
func TestStoreReusesTheRoomOfRemovedJobs(t *testing.T) {
	s := newStore(t)
	job := func(id string) *flotilla.Job {
		return &flotilla.Job{ID: id, Queue: "A", JobSet: "s", SubmitTime: t0, Requests: flotilla.Resources{1, 1, 0}}
	}
	require.NoError(t, s.Add(job("keep")))
	x := job("x")
	require.NoError(t, s.Add(x))
	allocs := testing.AllocsPerRun(100, func() {
		s.Remove("x")
		_ = s.Add(x)
	})
	require.Zero(t, allocs, "allocations per Remove and Add")
	e, ok := s.Get("x")
	require.True(t, ok)
	require.Same(t, x, e.Job)
	require.Equal(t, 2, s.Len())
}

// TestStoreEntriesSpanBlocks checks Get, Remove and the order across more
// jobs than one block of entries holds, with freed entries reused.
func TestStoreEntriesSpanBlocks(t *testing.T) {
	s := newStore(t)
	n := 2*slabLen + 7
	jobs := make([]*flotilla.Job, n)
	for i := range jobs {
		jobs[i] = &flotilla.Job{ID: "j-" + strconv.Itoa(i), Queue: "A", JobSet: "s", SubmitTime: t0,
			Priority: uint32(n - i), Requests: flotilla.Resources{1, 1, 0}}
		require.NoError(t, s.Add(jobs[i]))
	}
	for i := 0; i < n; i += 3 {
		_, ok := s.Remove(jobs[i].ID)
		require.True(t, ok)
	}
	for i := 0; i < n; i += 6 {
		require.NoError(t, s.Add(jobs[i]))
	}
	want := 0
	for i := range jobs {
		e, ok := s.Get(jobs[i].ID)
		if queued := i%3 != 0 || i%6 == 0; queued {
			want++
			require.True(t, ok, jobs[i].ID)
			require.Same(t, jobs[i], e.Job)
		} else {
			require.False(t, ok, jobs[i].ID)
		}
	}
	require.Equal(t, want, s.Len())
	prev := -1
	c := s.Cursor("A")
	for e, ok := c.Next(); ok; e, ok = c.Next() {
		// Priority n-i: a lower number first, so ascending i backwards.
		i := n - int(e.Job.Priority)
		require.True(t, prev == -1 || i < prev, "order")
		prev = i
	}
}
