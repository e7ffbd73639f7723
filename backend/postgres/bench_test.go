package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// BenchmarkCommitSubmit submits jobs into PostgreSQL in Commits of 1,000
// jobs and their 1,000 submitted events (one job set per 100,000 jobs,
// every job with a client id), from one client: one op is one Commit. It
// reports jobs/s.
func BenchmarkCommitSubmit(b *testing.B) {
	const batch = 1_000
	ctx := context.Background()
	be := open(b, freshSchema(b))
	if err := be.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w := &backend.Write{Jobs: make([]backend.JobSpec, batch), Events: make([]events.Event, batch)}
	fill := func(n int) {
		for k := range batch {
			i := n*batch + k
			id, set := fmt.Sprintf("job-%08d", i), fmt.Sprintf("set-%03d", i/100_000)
			w.Jobs[k] = backend.JobSpec{
				Job: &flotilla.Job{ID: id, Queue: "A", JobSet: set, PriorityClass: flotilla.ArmadaDefault,
					SubmitTime: t0, Requests: flotilla.Resources{1000, 1 << 30}},
				ClientID: fmt.Sprintf("client-%08d", i), Principal: "alice", Runtime: time.Minute,
			}
			w.Events[k] = events.Event{Queue: "A", JobSet: set, Job: id, Type: events.Submitted, Time: t0}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var elapsed time.Duration
	for n := range b.N {
		b.StopTimer()
		fill(n)
		b.StartTimer()
		start := time.Now()
		if _, err := be.Commit(ctx, w); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(b.N*batch)/elapsed.Seconds(), "jobs/s")
}

// BenchmarkLiveJobs reads 100,000 live jobs (the read a service's restart
// makes) with LiveJobs: one op is the whole read. It reports ns/job.
func BenchmarkLiveJobs(b *testing.B) {
	const total = 100_000
	ctx := context.Background()
	be := open(b, freshSchema(b))
	if err := be.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		b.Fatal(err)
	}
	submitN(b, be, "A", "s", 0, total)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n := 0
		if err := be.LiveJobs(ctx, func(backend.Record) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != total {
			b.Fatalf("LiveJobs visited %d jobs, want %d", n, total)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*total), "ns/job")
}

// BenchmarkRestartWith1MQueuedJobs stores 1,000,000 queued jobs (10 job
// sets, each job with a client id and a principal, submitted in Commits of
// 1,000), then measures a restart of the service over them: Open, then
// server.New, which rebuilds the state (queues, executors, every live job
// into the queued-job store, usage); one op is one restart. It reports
// s/restart and, separately, the seconds of LiveJobs' read alone
// (s/livejobs). Issue 11's goal is serving again within 15 s.
func BenchmarkRestartWith1MQueuedJobs(b *testing.B) {
	const total, batch = 1_000_000, 1_000
	ctx := context.Background()
	u := freshSchema(b)
	be := open(b, u)
	if err := be.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w := &backend.Write{Jobs: make([]backend.JobSpec, batch), Events: make([]events.Event, batch)}
	for n := range total / batch {
		for k := range batch {
			i := n*batch + k
			id, set := fmt.Sprintf("job-%08d", i), fmt.Sprintf("set-%02d", i%10)
			w.Jobs[k] = backend.JobSpec{
				Job: &flotilla.Job{ID: id, Queue: "A", JobSet: set, PriorityClass: flotilla.ArmadaDefault,
					SubmitTime: t0.Add(time.Duration(i)), Requests: flotilla.Resources{1000, 1 << 30}},
				ClientID: fmt.Sprintf("client-%08d", i), Principal: "alice", Runtime: time.Minute,
			}
			w.Events[k] = events.Event{Queue: "A", JobSet: set, Job: id, Type: events.Submitted, Time: t0}
		}
		if _, err := be.Commit(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	be.Close()
	var restart, read time.Duration
	for b.Loop() {
		start := time.Now()
		be, err := Open(ctx, u, backendtest.Schema())
		if err != nil {
			b.Fatal(err)
		}
		srv, err := server.New(ctx, server.Config{
			Scheduler: scheduler.DefaultConfig(backendtest.Schema()), Backend: be, Clock: &fixedClock{now: t0.Add(time.Hour)},
		})
		if err != nil {
			b.Fatal(err)
		}
		restart += time.Since(start)
		q, err := srv.Queue(ctx, "A")
		if err != nil || q.Queued != total {
			b.Fatalf("after the restart: %d queued, %v; want %d", q.Queued, err, total)
		}
		start = time.Now()
		n := 0
		if err := be.LiveJobs(ctx, func(backend.Record) error { n++; return nil }); err != nil || n != total {
			b.Fatalf("LiveJobs: %d, %v", n, err)
		}
		read += time.Since(start)
		be.Close()
	}
	b.ReportMetric(restart.Seconds()/float64(b.N), "s/restart")
	b.ReportMetric(read.Seconds()/float64(b.N), "s/livejobs")
}

// BenchmarkPutUsage stores 100 usage records (a cycle's PutUsage of a
// service with 100 queues), through the backend (unfenced: one statement)
// and through its fenced view (one transaction behind the fence check, as
// a leader writes): one op is one PutUsage.
func BenchmarkPutUsage(b *testing.B) {
	ctx := context.Background()
	be := open(b, freshSchema(b))
	if _, err := be.Commit(ctx, &backend.Write{Fence: 1}); err != nil {
		b.Fatal(err)
	}
	rs := make([]backend.UsageRecord, 100)
	for i := range rs {
		rs[i] = backend.UsageRecord{Key: fmt.Sprintf("queue/q%03d", i), Value: []float64{float64(i), 1},
			At: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	}
	for _, c := range []struct {
		name string
		be   backend.Backend
	}{{"unfenced", be}, {"fenced", be.WithFence(1)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.be.PutUsage(ctx, rs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
