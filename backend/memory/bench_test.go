package memory_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
)

// heapAfterGC is the live heap, measured after two collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkCommitSubmit1M submits 1,000,000 jobs in batches of 1,000, each
// batch one Commit of 1,000 jobs and their 1,000 submitted events in one
// job set (100 job sets in one queue), every job with a client id. It
// reports jobs/s and the backend's resident bytes per job: the live heap
// after the submits minus the live heap before them, measured after GC,
// with the *flotilla.Job structs (and their id and client id strings)
// allocated before the first measurement, so excluded.
func BenchmarkCommitSubmit1M(b *testing.B) {
	const total, batch = 1_000_000, 1_000
	ctx := context.Background()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	jobs := make([]*flotilla.Job, total)
	clients := make([]string, total)
	for i := range jobs {
		jobs[i] = &flotilla.Job{
			ID: fmt.Sprintf("job-%07d", i), Queue: "A", JobSet: fmt.Sprintf("set-%03d", i/(total/100)),
			SubmitTime: t0, Requests: flotilla.Resources{1000, 1 << 30},
		}
		clients[i] = fmt.Sprintf("client-%07d", i)
	}
	w := &backend.Write{Jobs: make([]backend.JobSpec, batch), Events: make([]events.Event, batch)}
	b.ReportAllocs()
	b.ResetTimer()
	var perJob float64
	var elapsed time.Duration
	for range b.N {
		b.StopTimer()
		m := memory.New(schema)
		if err := m.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
			b.Fatal(err)
		}
		before := heapAfterGC()
		b.StartTimer()
		start := time.Now()
		for lo := 0; lo < total; lo += batch {
			for k := range batch {
				j := jobs[lo+k]
				w.Jobs[k] = backend.JobSpec{Job: j, ClientID: clients[lo+k], TerminationGracePeriod: time.Second, ActiveDeadline: time.Hour}
				w.Events[k] = events.Event{Type: events.Submitted, Queue: j.Queue, JobSet: j.JobSet, Job: j.ID, Time: t0}
			}
			if _, err := m.Commit(ctx, w); err != nil {
				b.Fatal(err)
			}
		}
		elapsed += time.Since(start)
		b.StopTimer()
		perJob = float64(heapAfterGC()-before) / total
		runtime.KeepAlive(m)
		b.StartTimer()
	}
	b.ReportMetric(float64(total)*float64(b.N)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(perJob, "B/job")
}

// BenchmarkLiveJobs1M is the rebuild's read: LiveJobs over 1,000,000
// queued jobs in 100 job sets, each visited as a backend.Record.
func BenchmarkLiveJobs1M(b *testing.B) {
	const total, batch = 1_000_000, 1_000
	ctx := context.Background()
	m := memory.New(flotilla.MustResourceSchema("cpu", "memory"))
	if err := m.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for lo := 0; lo < total; lo += batch {
		w := &backend.Write{}
		for i := lo; i < lo+batch; i++ {
			j := &flotilla.Job{ID: fmt.Sprintf("job-%07d", i), Queue: "A", JobSet: fmt.Sprintf("set-%03d", i/(total/100)),
				SubmitTime: t0, Requests: flotilla.Resources{1000, 1 << 30}}
			w.Jobs = append(w.Jobs, backend.JobSpec{Job: j})
			w.Events = append(w.Events, events.Event{Type: events.Submitted, Queue: "A", JobSet: j.JobSet, Job: j.ID, Time: t0})
		}
		if _, err := m.Commit(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n := 0
		if err := m.LiveJobs(ctx, func(backend.Record) error { n++; return nil }); err != nil || n != total {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/total, "ns/job")
}
