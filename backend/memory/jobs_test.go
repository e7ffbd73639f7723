package memory_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
)

// storedJobsHeap commits n queued jobs with client ids, in writes of 1,000
// jobs in one job set each, to m and returns the live heap m gained per
// job: its records, indexes and logs, not the *flotilla.Job structs and
// their strings, which the caller's jobs hold before and after.
func storedJobsHeap(t *testing.T, m *memory.Backend, n int) float64 {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	specs := make([]backend.JobSpec, n)
	for i := range specs {
		specs[i] = backend.JobSpec{
			Job: &flotilla.Job{ID: fmt.Sprintf("job-%07d", i), Queue: "A", JobSet: fmt.Sprintf("set-%03d", i/1000),
				SubmitTime: t0, Requests: flotilla.Resources{1000, 1 << 30}},
			ClientID: fmt.Sprintf("client-%07d", i), TerminationGracePeriod: time.Second, ActiveDeadline: time.Hour,
		}
	}
	w := &backend.Write{Events: make([]events.Event, 1000)}
	before := heapAfterGC()
	for lo := 0; lo < n; lo += 1000 {
		w.Jobs = specs[lo:min(lo+1000, n)]
		w.Events = w.Events[:len(w.Jobs)]
		for k, s := range w.Jobs {
			w.Events[k] = events.Event{Type: events.Submitted, Queue: "A", JobSet: s.Job.JobSet, Job: s.Job.ID, Time: t0}
		}
		_, err := m.Commit(ctx, w)
		require.NoError(t, err)
	}
	perJob := float64(heapAfterGC()-before) / float64(n)
	runtime.KeepAlive(specs)
	runtime.KeepAlive(w)
	return perJob
}

// TestAQueuedJobTakesAtMost200BytesOfTheBackendsHeap holds the memory
// backend's share of issue 9's budget (≤ 1 KiB per queued job, service
// included): a queued job with a client id, stored among 100,000, costs
// the backend at most 200 bytes of live heap beyond the job itself
// (record, id and client id indexes, job-set log entry). About 160 today.
func TestAQueuedJobTakesAtMost200BytesOfTheBackendsHeap(t *testing.T) {
	m := memory.New(flotilla.MustResourceSchema("cpu", "memory"))
	require.NoError(t, m.CreateQueue(context.Background(), flotilla.Queue{Name: "A"}))
	perJob := storedJobsHeap(t, m, 100_000)
	t.Logf("%.1f bytes of heap per queued job", perJob)
	require.LessOrEqual(t, perJob, 200.0)
	runtime.KeepAlive(m)
}

// TestAHugeWritesWorkingMemoryIsNotKeptAfterASmallOne: Commit keeps
// working memory between writes, sized for the largest it has seen; a
// small write after a huge one gives it back. A backend that took 50,000
// jobs in one write and their cancellations in another holds, once a
// small write follows, what one fed the same in writes of 1,000 holds: no
// more than 256 KiB beyond it (the huge writes' working memory would be
// 27 MiB before they were given back).
func TestAHugeWritesWorkingMemoryIsNotKeptAfterASmallOne(t *testing.T) {
	const n = 50_000
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	jobs := make([]*flotilla.Job, n+2)
	clients := make([]string, n+2)
	for i := range jobs {
		jobs[i] = &flotilla.Job{ID: fmt.Sprintf("job-%07d", i), Queue: "A", JobSet: "s", SubmitTime: t0, Requests: flotilla.Resources{1, 1}}
		clients[i] = fmt.Sprintf("client-%07d", i)
	}
	submit := func(from, to int) *backend.Write {
		w := &backend.Write{}
		for _, j := range jobs[from:to] {
			w.Jobs = append(w.Jobs, backend.JobSpec{Job: j, ClientID: clients[len(w.Jobs)+from]})
			w.Events = append(w.Events, events.Event{Type: events.Submitted, Queue: "A", JobSet: "s", Job: j.ID, Time: t0})
		}
		return w
	}
	cancel := func(from, to int) *backend.Write {
		w := &backend.Write{}
		for _, j := range jobs[from:to] {
			w.Events = append(w.Events, events.Event{Type: events.Cancelled, Queue: "A", JobSet: "s", Job: j.ID, Time: t0})
		}
		return w
	}
	heap := func(batch int) uint64 {
		m := memory.New(flotilla.MustResourceSchema("cpu", "memory"))
		require.NoError(t, m.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
		for _, write := range []func(from, to int) *backend.Write{submit, cancel} {
			for lo := 0; lo < n; lo += batch {
				_, err := m.Commit(ctx, write(lo, lo+batch))
				require.NoError(t, err)
			}
		}
		_, err := m.Commit(ctx, submit(n, n+2))
		require.NoError(t, err)
		live := heapAfterGC()
		runtime.KeepAlive(m)
		return live
	}
	small := heap(1000)
	huge := heap(n)
	t.Logf("after writes of 1,000 jobs: %d bytes; after writes of %d: %d bytes", small, n, huge)
	require.Less(t, int64(huge)-int64(small), int64(256<<10))
	runtime.KeepAlive(jobs)
	runtime.KeepAlive(clients)
}
