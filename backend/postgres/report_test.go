package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
	"github.com/flotilla-sched/flotilla/submit"
)

// endedReport is a service on be whose cluster c1 (nodes × 8 cores) runs
// live jobs and has run ended ones to success, and the report of its
// executor back after a failover: every ended job listed again as
// succeeded (nothing changes, so it can be made again and again), and the
// live ones running.
func endedReport(t testing.TB, be *Backend, nodes, ended, live int) (*server.Server, *fixedClock, *server.Report) {
	t.Helper()
	ctx := context.Background()
	clock := &fixedClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(backendtest.Schema()), Backend: be, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	ns := make([]flotilla.Node, nodes)
	for i := range ns {
		ns[i] = flotilla.Node{Name: fmt.Sprintf("n%04d", i),
			Total: backendtest.Schema().MustParse(map[string]string{"cpu": "8", "memory": "64Gi"})}
	}
	report := func(r *server.Report) *server.ReportReply {
		t.Helper()
		reply, err := srv.Report(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	report(&server.Report{Cluster: "c1", Nodes: ns})
	for i := 0; i < ended+live; i += 1000 {
		n := min(1000, ended+live-i)
		_, err := srv.Submit(ctx, &submit.Request{Queue: "A", JobSet: fmt.Sprintf("s%d", i/1000),
			Jobs: []submit.JobTemplate{{Count: &n, Requests: map[string]string{"cpu": "1"}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := srv.Cycle(ctx); err != nil || rep.Leased != ended+live {
		t.Fatalf("the cycle: %+v, %v; want %d leased", rep, err, ended+live)
	}
	r := &server.Report{Cluster: "c1"}
	for _, l := range report(r).Leases {
		r.Jobs = append(r.Jobs, server.JobReport{Job: l.Job.ID, Attempt: l.Attempt, Phase: server.PhaseRunning})
	}
	report(r)
	for i := range r.Jobs[:ended] {
		r.Jobs[i].Phase = server.PhaseSucceeded
	}
	report(r)
	return srv, clock, r
}

// TestReportListingEndedJobsOnPostgresReadsThemInOneQuery: an executor's
// report listing 300 jobs that have ended (the service keeps them in the
// database only) and 50 live ones makes one statement: the ended jobs'
// read, not one per job.
func TestReportListingEndedJobsOnPostgresReadsThemInOneQuery(t *testing.T) {
	be, qc := openCounted(t, freshSchema(t))
	srv, _, r := endedReport(t, be, 50, 300, 50)
	qc.reset()
	reply, err := srv.Report(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Kill) != 0 || len(reply.Leases) != 0 {
		t.Errorf("reply with %d kill orders and %d leases, want none", len(reply.Kill), len(reply.Leases))
	}
	if q, rows, verbs := qc.reset(); q != 1 || rows != 300 {
		t.Errorf("the report made %d statements %v reading %d rows; want 1 reading the 300 ended jobs", q, verbs, rows)
	}
}

// BenchmarkReportWithEndedJobs is server's BenchmarkReportWithEndedJobs
// on PostgreSQL: an executor back after a failover reports its cluster
// of 1,000 nodes × 8 cores, 1,000 jobs running and 5,000 that have ended
// (listed as succeeded, so every op is the same report). It reports the
// statements per report, counted with a pgx tracer.
func BenchmarkReportWithEndedJobs(b *testing.B) {
	be, qc := openCounted(b, freshSchema(b))
	srv, clock, r := endedReport(b, be, 1000, 5000, 1000)
	ctx := context.Background()
	var queries int
	for b.Loop() {
		clock.now = clock.now.Add(time.Second)
		qc.reset()
		if _, err := srv.Report(ctx, r); err != nil {
			b.Fatal(err)
		}
		q, _, _ := qc.reset()
		queries += q
	}
	b.ReportMetric(float64(queries)/float64(b.N), "queries/report")
}
