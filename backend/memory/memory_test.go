package memory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
)

func TestMemoryBackendPassesTheConformanceSuite(t *testing.T) {
	backendtest.Run(t, func(*testing.T) backend.Backend { return memory.New(backendtest.Schema()) })
}

// TestCommitRejectsValuesItsCompactEventsCannotHoldWholeAndNamed: the
// memory backend stores times as Unix nanoseconds, attempts in 16 bits and
// exit codes in 32; a value outside is a *flotilla.FieldError naming the
// event's field, every problem at once, and nothing is stored.
func TestCommitRejectsValuesItsCompactEventsCannotHoldWholeAndNamed(t *testing.T) {
	ctx := context.Background()
	b := memory.New(backendtest.Schema())
	require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	job := func(id string) backend.JobSpec {
		return backend.JobSpec{Job: &flotilla.Job{ID: id, Queue: "A", JobSet: "s", Requests: flotilla.Resources{1, 1}}}
	}
	sub := events.Event{Type: events.Submitted, Queue: "A", JobSet: "s", Job: "j1", Time: t0}
	far, early := sub, sub
	far.Job, far.Time = "j2", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	early.Job, early.Time = "j3", time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
	attempt, exit := sub, sub
	attempt.Job, attempt.Attempt = "j4", 1<<16
	exit.Job, exit.ExitCode = "j5", 1<<40
	neg := job("j6")
	neg.TerminationGracePeriod = -time.Second
	w := &backend.Write{
		Jobs:   []backend.JobSpec{job("j1"), job("j2"), job("j3"), job("j4"), job("j5"), neg},
		Events: []events.Event{sub, far, early, attempt, exit, {Type: events.Submitted, Queue: "A", JobSet: "s", Job: "j6", Time: t0}},
	}
	_, err := b.Commit(ctx, w)
	require.Error(t, err)
	var fields []string
	for _, p := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.ErrorAs(t, p, &fe)
		fields = append(fields, fe.Field)
	}
	assert.Equal(t, []string{"jobs[5].terminationGracePeriod", "events[1].time", "events[2].time", "events[3].attempt", "events[4].exitCode"}, fields)
	_, err = b.Job(ctx, "j1")
	assert.ErrorIs(t, err, backend.ErrNotFound)
	// The zero time is a time like any other: stored and read back zero.
	sub.Time = time.Time{}
	out, err := b.Commit(ctx, &backend.Write{Jobs: []backend.JobSpec{job("j1")}, Events: []events.Event{sub}})
	require.NoError(t, err)
	assert.True(t, out[0].Time.IsZero())
	r, err := b.Job(ctx, "j1")
	require.NoError(t, err)
	assert.True(t, r.State.Submitted.IsZero())
}

// TestCommitSharesTheSubmittedJobAndReadsTimesBackInUTC: the backend keeps
// the *flotilla.Job it was given (no copy) and returns event times as UTC
// instants.
func TestCommitSharesTheSubmittedJobAndReadsTimesBackInUTC(t *testing.T) {
	ctx := context.Background()
	b := memory.New(backendtest.Schema())
	require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	j := &flotilla.Job{ID: "j1", Queue: "A", JobSet: "s", Requests: flotilla.Resources{1, 1}}
	at := time.Date(2026, 11, 22, 11, 0, 0, 5, time.FixedZone("CET", 3600))
	out, err := b.Commit(ctx, &backend.Write{Jobs: []backend.JobSpec{{Job: j}},
		Events: []events.Event{{Type: events.Submitted, Queue: "A", JobSet: "s", Job: "j1", Time: at}}})
	require.NoError(t, err)
	r, err := b.Job(ctx, "j1")
	require.NoError(t, err)
	assert.Same(t, j, r.Spec.Job)
	es, err := b.Events(ctx, "A", "s", 1, 0)
	require.NoError(t, err)
	for _, got := range []time.Time{out[0].Time, es[0].Time, r.State.Submitted} {
		assert.Equal(t, time.UTC, got.Location())
		assert.True(t, got.Equal(at))
	}
}

// TestCommitReturnsTheWriteEventsThemselvesWithSeqAndStoredTime: Commit
// hands back w.Events, each event given its sequence number and its time
// as stored (UTC), instead of a copy as large as the write; a refused
// write leaves w.Events unchanged.
func TestCommitReturnsTheWriteEventsThemselvesWithSeqAndStoredTime(t *testing.T) {
	ctx := context.Background()
	b := memory.New(backendtest.Schema())
	require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.FixedZone("x", 3600))
	w := &backend.Write{}
	for _, id := range []string{"j1", "j2"} {
		w.Jobs = append(w.Jobs, backend.JobSpec{Job: &flotilla.Job{ID: id, Queue: "A", JobSet: "s", Requests: flotilla.Resources{1, 1}}})
		w.Events = append(w.Events, events.Event{Type: events.Submitted, Queue: "A", JobSet: "s", Job: id, Time: t0})
	}
	out, err := b.Commit(ctx, w)
	require.NoError(t, err)
	require.Len(t, out, 2)
	assert.Same(t, &w.Events[0], &out[0], "the returned slice is w.Events")
	for i, e := range out {
		assert.Equal(t, uint64(i+1), e.Seq)
		assert.Equal(t, time.UTC, e.Time.Location())
		assert.True(t, e.Time.Equal(t0))
	}

	again := &backend.Write{Jobs: w.Jobs[:1], Events: []events.Event{{Type: events.Submitted, Queue: "A", JobSet: "s", Job: "j1", Time: t0}}}
	_, err = b.Commit(ctx, again)
	require.ErrorIs(t, err, backend.ErrDuplicate)
	assert.Equal(t, uint64(0), again.Events[0].Seq)
	assert.Equal(t, t0, again.Events[0].Time)
}

// TestALogLongerThanABlockReadsBackEveryEventInOrder: a job set's log and
// jobs are kept in blocks of 1024; reads across the blocks' edges give
// every event, with its job, in order.
func TestALogLongerThanABlockReadsBackEveryEventInOrder(t *testing.T) {
	ctx := context.Background()
	b := memory.New(backendtest.Schema())
	require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	const n = 3*1024 + 10
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for start := 0; start < n; start += 1500 {
		w := &backend.Write{}
		for i := start; i < min(n, start+1500); i++ {
			id := fmt.Sprintf("j%05d", i)
			w.Jobs = append(w.Jobs, backend.JobSpec{Job: &flotilla.Job{ID: id, Queue: "A", JobSet: "s", Requests: flotilla.Resources{1, 1}}})
			w.Events = append(w.Events, events.Event{Type: events.Submitted, Queue: "A", JobSet: "s", Job: id, Time: t0})
		}
		_, err := b.Commit(ctx, w)
		require.NoError(t, err)
	}
	es, err := b.Events(ctx, "A", "s", 1020, 20)
	require.NoError(t, err)
	require.Len(t, es, 20)
	for k, e := range es {
		require.Equal(t, uint64(1020+k), e.Seq)
		require.Equal(t, fmt.Sprintf("j%05d", 1019+k), e.Job)
	}
	all, err := b.Events(ctx, "A", "s", 0, 0)
	require.NoError(t, err)
	require.Len(t, all, n)
	require.Equal(t, fmt.Sprintf("j%05d", n-1), all[n-1].Job)
	live := 0
	require.NoError(t, b.LiveJobs(ctx, func(r backend.Record) error {
		require.Equal(t, fmt.Sprintf("j%05d", live), r.Spec.Job.ID)
		live++
		return nil
	}))
	require.Equal(t, n, live)
}

// fakeLeaseClock is a lease clock a test moves forward.
type fakeLeaseClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeLeaseClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeLeaseClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newLeaseBackend is a memory backend whose lease runs on a fake clock.
func newLeaseBackend() (backend.Backend, func(time.Duration)) {
	b := memory.New(backendtest.Schema())
	c := &fakeLeaseClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	b.SetLeaseClock(c.Now)
	return b, c.advance
}

func TestMemoryBackendPassesTheLeaseConformanceSuite(t *testing.T) {
	backendtest.RunLeases(t, func(*testing.T) (backend.Backend, func(time.Duration)) { return newLeaseBackend() })
}

// TestLeaseWithoutAClockIsRefusedNamingTheClock: the memory backend reads
// no clock of its own, so Lead and Resign without SetLeaseClock are
// refused with a field error, not a panic.
func TestLeaseWithoutAClockIsRefusedNamingTheClock(t *testing.T) {
	b := memory.New(backendtest.Schema())
	_, err := b.Lead(context.Background(), "a", "", time.Second)
	require.ErrorIs(t, err, flotilla.ErrRequired)
	var fe *flotilla.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "leaseClock", fe.Field)
	require.ErrorIs(t, b.Resign(context.Background(), "a"), flotilla.ErrRequired)
}

// TestJobsByClientIDWritesNothingSoReadersMayRunTogether: JobsByClientID
// holds the read lock only, so it must not write, not even to seed the
// hash of a queue whose jobs have no client id (its client index is
// empty): concurrent calls do not race (go test -race, as CI runs it).
func TestJobsByClientIDWritesNothingSoReadersMayRunTogether(t *testing.T) {
	ctx := context.Background()
	b := memory.New(backendtest.Schema())
	require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	j := &flotilla.Job{ID: "j1", Queue: "A", JobSet: "s", Requests: flotilla.Resources{1, 1}}
	_, err := b.Commit(ctx, &backend.Write{Jobs: []backend.JobSpec{{Job: j}},
		Events: []events.Event{{Type: events.Submitted, Queue: "A", JobSet: "s", Job: "j1", Time: time.Unix(1, 0)}}})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	ids := make([][]string, 4)
	for g := range errs {
		ids[g] = []string{"x"}
		wg.Go(func() { errs[g] = b.JobsByClientID(ctx, "A", []string{"c1"}, ids[g]) })
	}
	wg.Wait()
	for g := range errs {
		require.NoError(t, errs[g])
		assert.Equal(t, []string{""}, ids[g])
	}
}

// TestWritesStraddlingRecordBlocksNameEachEventsJob: records are kept in
// blocks of 1024 and a write's new records are found by handle; writes
// whose jobs cross blocks' edges, in two job sets taking turns, with
// events about jobs stored by earlier writes, give every event its own
// job and every job its own state.
func TestWritesStraddlingRecordBlocksNameEachEventsJob(t *testing.T) {
	ctx := context.Background()
	b := memory.New(backendtest.Schema())
	require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	const n, batch = 3*1024 + 10, 700
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	id := func(i int) string { return fmt.Sprintf("j%05d", i) }
	set := func(i int) string { return []string{"s0", "s1"}[i%2] }
	for start := 0; start < n; start += batch {
		w := &backend.Write{}
		for i := start; i < min(n, start+batch); i++ {
			w.Jobs = append(w.Jobs, backend.JobSpec{Job: &flotilla.Job{ID: id(i), Queue: "A", JobSet: set(i), Requests: flotilla.Resources{1, 1}},
				ClientID: "c" + id(i)})
			w.Events = append(w.Events, events.Event{Type: events.Submitted, Queue: "A", JobSet: set(i), Job: id(i), Time: t0})
			if prev := i - batch; prev >= 0 && prev%3 == 0 {
				// A job of the previous write is cancelled.
				w.Events = append(w.Events, events.Event{Type: events.Cancelled, Queue: "A", JobSet: set(prev), Job: id(prev), Time: t0,
					Reason: "r" + id(prev)})
			}
		}
		_, err := b.Commit(ctx, w)
		require.NoError(t, err)
	}
	cancelled := func(i int) bool { return i%3 == 0 && i+batch < n }
	for s := range 2 {
		es, err := b.Events(ctx, "A", set(s), 0, 0)
		require.NoError(t, err)
		seen := map[string]events.Type{}
		for _, e := range es {
			require.Equal(t, set(s), e.JobSet)
			var i int
			_, err := fmt.Sscanf(e.Job, "j%05d", &i)
			require.NoError(t, err)
			require.Equal(t, s, i%2, e.Job)
			if e.Type == events.Cancelled {
				require.Equal(t, "r"+e.Job, e.Reason)
				require.Equal(t, events.Submitted, seen[e.Job], e.Job)
			}
			seen[e.Job] = e.Type
		}
		require.Len(t, seen, (n+1-s)/2)
	}
	for i := range n {
		r, err := b.Job(ctx, id(i))
		require.NoError(t, err)
		require.Equal(t, id(i), r.Spec.Job.ID)
		require.Equal(t, "c"+id(i), r.Spec.ClientID)
		want := events.Queued
		if cancelled(i) {
			want = events.CancelledState
			require.Equal(t, "r"+id(i), r.State.Reason)
		}
		require.Equal(t, want, r.State.State, id(i))
		got, err := b.JobByClientID(ctx, "A", "c"+id(i))
		require.NoError(t, err)
		require.Equal(t, id(i), got)
	}
	live := 0
	require.NoError(t, b.LiveJobs(ctx, func(r backend.Record) error {
		var i int
		_, err := fmt.Sscanf(r.Spec.Job.ID, "j%05d", &i)
		require.NoError(t, err)
		require.False(t, cancelled(i), r.Spec.Job.ID)
		require.Equal(t, "c"+r.Spec.Job.ID, r.Spec.ClientID)
		live++
		return nil
	}))
	want := 0
	for i := range n {
		if !cancelled(i) {
			want++
		}
	}
	require.Equal(t, want, live)
}
