package httpapi_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// submitFile is a submit file of n one-cpu jobs.
func submitFile(set string, n int) []byte {
	return []byte(fmt.Sprintf(`{"queue": "A", "jobSet": %q, "jobs": [{"count": %d, "requests": {"cpu": "1", "memory": "1Gi"}}]}`, set, n))
}

// BenchmarkHTTPSubmitBatchesOf1000 submits batches of 1,000 jobs from one
// client over loopback HTTP (issue 10: ≥ 50,000 jobs/s).
func BenchmarkHTTPSubmitBatchesOf1000(b *testing.B) {
	s := newServiceB(b)
	c := s.client(b, "")
	ctx := context.Background()
	file := submitFile("s", 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Submit(ctx, file); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEventReachesWatcher measures how long after it is stored an
// event reaches a connected watcher over HTTP (issue 10: p99 ≤ 100 ms).
func BenchmarkEventReachesWatcher(b *testing.B) {
	s := newServiceB(b)
	c := s.client(b, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan time.Time, 1)
	go func() {
		_ = c.Watch(ctx, "A", "w", 0, func(e events.Event) error {
			got <- time.Now()
			return nil
		})
	}()
	file := submitFile("w", 1)
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		sent := time.Now()
		if _, err := s.srv.SubmitJSON(ctx, file); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(sent))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// newServiceB is newService for benchmarks, with queue A.
func newServiceB(b *testing.B) *service {
	s := newService(b, httpapi.Options{})
	if err := s.srv.CreateQueue(context.Background(), flotilla.Queue{Name: "A"}); err != nil {
		b.Fatal(err)
	}
	return s
}
