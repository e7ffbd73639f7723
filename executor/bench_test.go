package executor_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/executor"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// BenchmarkSubmitToLeaseOnAnIdleCluster measures, in real time, how long a
// job submitted to an idle service takes to reach its executor, with the
// cycle loop and the executor's reporting loop running (issue 10: within
// one cycle plus one renew period). It reports the mean and worst latency
// in units of cycle + renew.
func BenchmarkSubmitToLeaseOnAnIdleCluster(b *testing.B) {
	const cycle, renew = 50 * time.Millisecond, 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema),
		Clock: server.SystemClock{}})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		b.Fatal(err)
	}
	leased := make(chan string, 16)
	ex, err := executor.New(executor.Config{Cluster: "c1", Nodes: nodes("c1", 4), Service: seeLeases{&httpapi.Local{Server: srv}, leased},
		Clock: server.SystemClock{}, Renew: renew})
	if err != nil {
		b.Fatal(err)
	}
	// The executor runs in its own goroutine; the benchmark hears of each
	// lease as the executor receives it.
	go func() { _ = srv.Run(ctx, cycle) }()
	go func() { _ = ex.Run(ctx, nil) }()
	file := []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "runtime": "0s"}]}`)
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		ids, err := srv.SubmitJSON(ctx, file)
		if err != nil {
			b.Fatal(err)
		}
		for id := range leased {
			if id == ids[0] {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	unit := float64(cycle + renew)
	b.ReportMetric(float64(sum)/float64(len(lat))/unit, "mean-(cycle+renew)")
	b.ReportMetric(float64(lat[len(lat)-1])/unit, "max-(cycle+renew)")
}

// seeLeases passes reports through and tells of each lease received.
type seeLeases struct {
	*httpapi.Local
	leased chan<- string
}

func (s seeLeases) Report(ctx context.Context, cluster string, r api.Report) (api.ReportReply, error) {
	reply, err := s.Local.Report(ctx, cluster, r)
	for _, l := range reply.Leases {
		s.leased <- l.Job
	}
	return reply, err
}
