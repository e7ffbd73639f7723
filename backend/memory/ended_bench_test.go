package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
)

// BenchmarkEndedJobs1MInASet pages the cancelled jobs of one job set of
// 1,000,000 (each batch of 1,000 submitted and cancelled in one Commit,
// a millisecond apart, ids in an order of their own): a page of 100
// from the first, from the middle and from the last. Issue 22's goal: a
// page of 100 jobs ≤ 100 ms.
func BenchmarkEndedJobs1MInASet(b *testing.B) {
	const total, batch = 1_000_000, 1_000
	ctx := context.Background()
	be := memory.New(flotilla.MustResourceSchema("cpu", "memory"))
	if err := be.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w := &backend.Write{Jobs: make([]backend.JobSpec, batch), Events: make([]events.Event, 2*batch)}
	for n := range total / batch {
		at := t0.Add(time.Duration(n) * time.Millisecond)
		for k := range batch {
			id := fmt.Sprintf("job-%03d-%04d", k*7919%batch, n) // ids not in submit order
			w.Jobs[k] = backend.JobSpec{Job: &flotilla.Job{ID: id, Queue: "A", JobSet: "big", PriorityClass: flotilla.ArmadaDefault,
				SubmitTime: at, Requests: flotilla.Resources{1000, 1 << 30}}, Runtime: time.Minute}
			w.Events[2*k] = events.Event{Queue: "A", JobSet: "big", Job: id, Type: events.Submitted, Time: at}
			w.Events[2*k+1] = events.Event{Queue: "A", JobSet: "big", Job: id, Type: events.Cancelled, Time: at}
		}
		if _, err := be.Commit(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	benchEndedPages(b, be, total)
}

// benchEndedPages runs the three pages' benchmarks over the set A/big of
// total cancelled jobs.
func benchEndedPages(b *testing.B, be backend.EndedJobs, total int) {
	ctx := context.Background()
	q := backend.EndedQuery{Queue: "A", JobSet: "big", State: events.CancelledState, Limit: 1}
	after := func(n int) *backend.EndedAfter { // the place after the n-th job, n from 1
		q := q
		q.Limit = backend.MaxEndedPage
		var last *flotilla.Job
		for n > 0 {
			q.Limit = min(n, backend.MaxEndedPage)
			recs, err := be.EndedJobs(ctx, q)
			if err != nil || len(recs) != q.Limit {
				b.Fatalf("EndedJobs: %d, %v", len(recs), err)
			}
			last = recs[len(recs)-1].Spec.Job
			q.After = &backend.EndedAfter{SubmitTime: last.SubmitTime, ID: last.ID}
			n -= len(recs)
		}
		return q.After
	}
	middle := after(total / 2)
	end := after(total)
	for _, c := range []struct {
		name  string
		after *backend.EndedAfter
		want  int
	}{{"First", nil, 100}, {"Middle", middle, 100}, {"PastTheLast", end, 0}} {
		b.Run(c.name, func(b *testing.B) {
			q := q
			q.After, q.Limit = c.after, 100
			b.ReportAllocs()
			for b.Loop() {
				recs, err := be.EndedJobs(ctx, q)
				if err != nil || len(recs) != c.want {
					b.Fatalf("EndedJobs: %d, %v", len(recs), err)
				}
			}
		})
	}
}
